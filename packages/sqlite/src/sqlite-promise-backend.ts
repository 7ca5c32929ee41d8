import {
  type MigrateResult, Mutex, type PromiseBackend, type PromiseReader, type PromiseTransaction, type StepHook, StoreClosedError,
  TransientStoreError,
} from "@belay/contract";
import { type Connection, Statements, openConnection } from "./connection.js";
import { PROMISE_SURFACE, assertSchema, migrate } from "./migrate.js";
import { InsertConflict, type PromiseContext, applyPromiseEffects, loadPromiseRows } from "./sql/promise-rows.js";
import { acknowledgeOutbox, dueTimers, promiseReader, releaseOutbox, resetPromises, takeOutbox } from "./sql/promise-scans.js";
import { type ResolvedSqlitePromiseStoreConfig, resolveSqlitePromiseStoreConfig, type SqlitePromiseStoreConfig } from "./sqlite-promise-store-config.js";
import { type Tables, tablesFor } from "./tables.js";
import { TransactionRunner } from "./transaction.js";

/** How many times an operation runs when its inserts keep finding rows it saw absent. */
const MAX_RUNS = 3;

/**
 * WAL pages after which a commit of this connection checkpoints (PASSIVE, inside that commit):
 * 10,000 pages (~40 MiB of WAL) instead of SQLite's 1,000. A lifecycle writes ~17 pages, so the
 * default checkpointed every ~60 lifecycles, each time copying the pages the lifecycles keep
 * rewriting and syncing the file twice (under synchronous=NORMAL the checkpoint is where the
 * fsyncs are); ten times fewer checkpoints copy each hot page once per interval instead. The WAL
 * stays bounded by this interval (a reader holding an old snapshot can stretch it; the file is
 * truncated back to {@link WAL_SIZE_LIMIT} once checkpointed). Durability is unchanged: a
 * commit is in the WAL, which survives a process crash, before the operation resolves.
 */
export const WAL_AUTOCHECKPOINT_PAGES = 10_000;

/** Bytes the WAL file is truncated to after a checkpoint that let it restart (a longer one, stretched by a reader, shrinks). */
export const WAL_SIZE_LIMIT = 48 * 1024 * 1024;

/**
 * The promise surface's backend on one SQLite connection, behind `SqlitePromiseStore`'s checked
 * front (which runs every rule). Operations run one at a time under the instance's lock; each
 * write is one `BEGIN IMMEDIATE` transaction — the file's write lock taken before the first load,
 * so nothing the machine decides on can change before the commit — committed before it resolves.
 * Outbox listeners hear, after the commit, of this instance's own writes of messages only (other
 * processes sharing the file find theirs by polling).
 */
export class SqlitePromiseBackend implements PromiseBackend {
  readonly name = "sqlite";
  readonly stepHook = true;
  /** The database file, as given. */
  readonly path: string;
  readonly config: ResolvedSqlitePromiseStoreConfig;
  readonly #tables: Tables;
  readonly #db: Connection;
  readonly #q: Statements;
  readonly #runner: TransactionRunner;
  // The front awaits between the loads and writes of one transaction, and the step hook may park
  // it: the lock keeps every other operation of the instance off the connection until it ends.
  readonly #mutex = new Mutex();
  readonly #outboxListeners = new Set<() => void>();
  #hook: StepHook | null = null;
  #schemaChecked = false;
  #closed = false;

  constructor(config: SqlitePromiseStoreConfig) {
    this.config = resolveSqlitePromiseStoreConfig(config);
    this.path = this.config.path;
    this.#tables = tablesFor(this.config.tablePrefix);
    this.#db = openConnection(this.config);
    try {
      this.#db.pragma(`wal_autocheckpoint = ${WAL_AUTOCHECKPOINT_PAGES}`);
      this.#db.pragma(`journal_size_limit = ${WAL_SIZE_LIMIT}`);
    } catch (error) {
      this.#db.close();
      throw error;
    }
    this.#q = new Statements(this.#db, this.#tables);
    this.#runner = new TransactionRunner(this.#db, this.config.busyTimeoutMs);
  }

  setStepHook(hook: StepHook | null): void {
    this.#hook = hook;
  }

  async migrate(): Promise<MigrateResult> {
    this.#assertOpen();
    return this.#mutex.run(async () => {
      this.#assertConnected();
      const result = await migrate(this.#db, this.#runner, this.#tables, PROMISE_SURFACE);
      this.#schemaChecked = true;
      return result;
    });
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#outboxListeners.clear();
    await this.#mutex.run(() => {
      if (this.#db.open) this.#db.close();
    });
  }

  async transact<T>(operation: string, work: (tx: PromiseTransaction) => Promise<T>): Promise<T> {
    this.#assertOpen();
    const { result, wroteOutbox } = await this.#mutex.run(async () => {
      this.#assertConnected();
      this.#assertSchema();
      const hook = this.#hook;
      const ctx: PromiseContext = {
        q: this.#q,
        step: async (name) => {
          if (hook !== null) await hook({ operation, step: name });
        },
      };
      // Whether this run wrote an outbox message (a rolled-back run's writes never count).
      let wrote = false;
      const tx: PromiseTransaction = {
        load: async (keys) => loadPromiseRows(ctx, keys),
        apply: async (effects) => {
          if (await applyPromiseEffects(ctx, effects)) wrote = true;
        },
        step: ctx.step,
        dueTimers: async (now, max) => dueTimers(ctx, now, max),
        takeOutbox: async (now, max, until, filter) => takeOutbox(ctx, now, max, until, filter),
        acknowledgeOutbox: async (rows) => acknowledgeOutbox(ctx, rows),
        releaseOutbox: async (rows, at) => {
          if (releaseOutbox(ctx, rows, at)) wrote = true;
        },
        reset: async () => resetPromises(ctx),
      };
      for (let run = 1; ; run++) {
        wrote = false;
        try {
          const result = await this.#runner.writeAsync(operation, hook, () => work(tx));
          return { result, wroteOutbox: wrote };
        } catch (error) {
          // A row the machine saw absent exists: the operation runs again from its loads (rolled
          // back already), a few times, as the contract asks of every store.
          if (!(error instanceof InsertConflict)) throw error;
          if (run >= MAX_RUNS) {
            throw new TransientStoreError(`${operation}: ${error.message} on ${run} runs; nothing was committed`, { cause: error });
          }
        }
      }
    });
    // Committed: tell the listeners, outside the lock (a listener may call the store at once).
    if (wroteOutbox) this.#announceOutbox();
    return result;
  }

  /** Reads the promise schema's version afresh (not the check cached at the first operation): the file answers and the tables are there. */
  async ping(): Promise<void> {
    this.#assertOpen();
    await this.#mutex.run(() => {
      this.#assertConnected();
      assertSchema(this.#db, this.#tables, `${this.path} (promise tables ${this.#tables.prefix}*)`, PROMISE_SURFACE);
    });
  }

  /** In-process and lossy: `listener` hears of this instance's commits that wrote outbox messages. */
  subscribeOutbox(listener: () => void): () => void {
    this.#assertOpen();
    this.#outboxListeners.add(listener);
    return () => void this.#outboxListeners.delete(listener);
  }

  #announceOutbox(): void {
    // A copy: a listener may unsubscribe itself while being told.
    for (const listener of [...this.#outboxListeners]) {
      try {
        listener();
      } catch {
        // A listener's failure is its own: the write has committed.
      }
    }
  }

  async read<T>(work: (reader: PromiseReader) => Promise<T>): Promise<T> {
    this.#assertOpen();
    return this.#mutex.run(() => {
      this.#assertConnected();
      this.#assertSchema();
      return this.#runner.readAsync(() => work(promiseReader(this.#q)));
    });
  }

  #assertOpen(): void {
    if (this.#closed) throw new StoreClosedError();
  }

  /** Inside the lock: the connection is still open (a close queued behind earlier work closes it). */
  #assertConnected(): void {
    if (!this.#db.open) throw new StoreClosedError();
  }

  #assertSchema(): void {
    if (this.#schemaChecked) return;
    assertSchema(this.#db, this.#tables, `${this.path} (promise tables ${this.#tables.prefix}*)`, PROMISE_SURFACE);
    this.#schemaChecked = true;
  }
}
