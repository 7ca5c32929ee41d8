import {
  CheckedPromiseStore, type MigrateResult, type PromiseBackend, type PromiseReader, type PromiseTransaction, type StepHook,
  StoreGate,
} from "@belay/contract";
import { PROMISE_SURFACE, checkSchema, migrateSurface } from "./migrate.js";
import { Executor, type Session } from "./session.js";
import { poolSource } from "./sqlserver-operations.js";
import { type ResolvedSqlServerPromiseStoreConfig, type SqlServerPromiseStoreConfig, resolveSqlServerPromiseStoreConfig } from "./sqlserver-promise-store-config.js";
import { applyPromiseEffects, loadPromiseRows } from "./sql/promise-rows.js";
import { acknowledgeOutbox, dueTimers, promiseReader, releaseOutbox, resetPromises, takeOutbox } from "./sql/promise-scans.js";

/**
 * The promise backend on SQL Server: each operation is one READ COMMITTED transaction whose loads
 * lock every promise, task and schedule row they read (update locks held to commit) and whose
 * effects are one batch; a deadlock or a concurrent creator (a unique violation) reruns the whole
 * operation. Outbox listeners hear this store's own commits, in-process: SQL Server has no
 * LISTEN/NOTIFY, so other processes' messages are found by their deliverers' timers.
 */
class SqlServerPromiseBackend implements PromiseBackend {
  readonly name = "sqlserver";
  readonly stepHook = true;
  readonly #config: ResolvedSqlServerPromiseStoreConfig;
  readonly #pool: ReturnType<typeof poolSource>;
  readonly #executor: Executor;
  readonly #meta: Executor;
  readonly #listeners = new Set<() => void>();
  #hook: StepHook | null = null;
  readonly #gate: StoreGate;

  constructor(config: SqlServerPromiseStoreConfig) {
    this.#config = resolveSqlServerPromiseStoreConfig(config);
    this.#pool = poolSource(config);
    this.#executor = new Executor(this.#pool.get, this.#config.schema, () => this.#hook);
    this.#meta = new Executor(this.#pool.get, this.#config.schema, () => null);
    this.#gate = new StoreGate(() => checkSchema(this.#meta, this.#config.schemaName, PROMISE_SURFACE));
  }

  get schemaName(): string {
    return this.#config.schemaName;
  }

  setStepHook(hook: StepHook | null): void {
    this.#hook = hook;
  }

  migrate(): Promise<MigrateResult> {
    const { schemaName, requireReadCommittedSnapshot } = this.#config;
    return this.#gate.migrate(() => migrateSurface(this.#meta, PROMISE_SURFACE, schemaName, { requireReadCommittedSnapshot }));
  }

  async close(): Promise<void> {
    if (!this.#gate.close()) return;
    this.#listeners.clear();
    await this.#pool.close();
  }

  async ping(): Promise<void> {
    this.#gate.assertOpen();
    await checkSchema(this.#meta, this.#config.schemaName, PROMISE_SURFACE);
  }

  subscribeOutbox(listener: () => void): () => void {
    this.#gate.assertOpen();
    const entry = () => listener();
    this.#listeners.add(entry);
    return () => void this.#listeners.delete(entry);
  }

  async transact<T>(operation: string, work: (tx: PromiseTransaction) => Promise<T>): Promise<T> {
    await this.#gate.open();
    let wrote = false;
    const result = await this.#executor.transaction(
      operation,
      (session) => {
        wrote = false;
        return work(this.#transaction(session, () => (wrote = true)));
      },
      { rerunOnUnique: true, attempts: this.#config.attempts },
    );
    // Committed: only now may anyone be told.
    if (wrote) for (const listener of [...this.#listeners]) listener();
    return result;
  }

  async read<T>(work: (reader: PromiseReader) => Promise<T>): Promise<T> {
    await this.#gate.open();
    return this.#meta.read("read", (session) => work(promiseReader(session)));
  }

  #transaction(session: Session, wroteOutbox: () => void): PromiseTransaction {
    return {
      load: (keys) => loadPromiseRows(session, keys),
      apply: async (effects) => {
        await applyPromiseEffects(session, effects);
        if (effects.outbox.length > 0) wroteOutbox();
      },
      step: (name) => session.step(name),
      dueTimers: (now, max) => dueTimers(session, now, max),
      takeOutbox: (now, max, until, filter) => takeOutbox(session, now, max, until, filter),
      acknowledgeOutbox: (rows) => acknowledgeOutbox(session, rows),
      releaseOutbox: async (rows, at) => {
        if ((await releaseOutbox(session, rows, at)) > 0) wroteOutbox();
      },
      reset: () => resetPromises(session),
    };
  }
}

/**
 * The Promise Store Contract on SQL Server: the storage of a Distributed Async Await server
 * (promises, tasks, callbacks, listeners, schedules and the outbox) for any number of server
 * processes on one database. Every request is checked and decided by the contract's front and
 * machine; this store supplies one transaction per operation with every row it decides on
 * locked, and timer and outbox scans by index with `UPDLOCK, READPAST, ROWLOCK`. A retriable
 * conflict reruns the operation a few times, then throws `TransientStoreError`.
 *
 * `subscribeOutbox` hears this store's own commits that wrote outbox messages (in-process only:
 * no LISTEN/NOTIFY on SQL Server); deliverers in other processes drain on their timers.
 */
export class SqlServerPromiseStore extends CheckedPromiseStore {
  /**
   * @example
   * ```ts
   * import sql from "mssql";
   * import { SqlServerPromiseStore } from "@belay/sqlserver";
   *
   * const pool = await new sql.ConnectionPool(process.env.MSSQL_URL!).connect();
   * const promises = new SqlServerPromiseStore({ pool });
   * await promises.migrate();
   * await promises.handle({ kind: "promise.create", id: "order-1", timeoutAt: Date.now() + 60_000 }, Date.now());
   * ```
   */
  constructor(config: SqlServerPromiseStoreConfig) {
    super(new SqlServerPromiseBackend(config), config);
  }

  /** The schema this store works in. */
  get schema(): string {
    return (this.backend as unknown as SqlServerPromiseBackend).schemaName;
  }
}
