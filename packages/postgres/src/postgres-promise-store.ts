import {
  CheckedPromiseStore, type LoadedRows, type MigrateResult, NO_EFFECTS, type PromiseBackend, type PromiseReader, type PromiseTransaction,
  type RowKey, type StepHook, StoreGate, TransientStoreError,
} from "@belay/contract";
import { CommitGroup } from "./commit-group.js";
import { HintPublisher, HintSubscription, OUTBOX_WAITING, outboxChannel } from "./hints.js";
import { PROMISE_SURFACE, checkSchema, migrateSurface } from "./migrate.js";
import { sqlState } from "./pg-errors.js";
import type { PostgresPool } from "./pool.js";
import { type PostgresPromiseStoreConfig, type ResolvedPostgresPromiseStoreConfig, resolvePostgresPromiseStoreConfig } from "./postgres-promise-store-config.js";
import { OwnedPool } from "./postgres-store-config.js";
import { PromiseRowCache } from "./promise-row-cache.js";
import { BEGIN_READ_COMMITTED, type PromiseSession, runPromiseOperation } from "./promise-session.js";
import { Executor, SqlCache } from "./session.js";
import { TransactionMemo, applyPromiseEffects, loadPromiseRows } from "./sql/promise-rows.js";
import { acknowledgeOutbox, dueTimers, promiseReader, releaseOutbox, resetPromises, takeOutbox } from "./sql/promise-scans.js";

/**
 * The conflicts after which an operation runs again from the start, on a fresh transaction:
 * a deadlock, a serialization failure, a lock timeout, and a unique violation (an insert met a
 * concurrent creator of the same id, which committed first: the rerun finds its row).
 */
const RERUN_SQLSTATES = new Set(["40P01", "40001", "55P03", "23505"]);

/** SQLSTATE of a write decided on remembered rows that found them changed (promise migration 2): nothing was written. */
const ROWS_CHANGED = "BLY02";

/** The most statements one group-commit transaction carries. */
const GROUP_STATEMENTS = 64;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The SQLSTATE of a driver error, or of the driver error a `TransientStoreError` wraps. */
function stateOf(error: unknown): string | undefined {
  return sqlState(error) ?? sqlState((error as { cause?: unknown } | null)?.cause);
}

/** What one attempt of an operation wrote that someone outside it should hear of, once it commits. */
interface Written {
  outbox: boolean;
}

/**
 * Operations that start outside a transaction: a create usually finds nothing to lock (its id is
 * new) and a get usually writes nothing. Their loads only read; when the rows they found absent
 * are all they decide on, their write (inserts, which a concurrent creator's row makes fail, so
 * the operation runs again) is one statement committing on its own, and a read-only answer needs
 * no commit at all. Should one find a row it would have to lock, it runs again in a transaction.
 */
const OUTSIDE_TRANSACTION_FIRST = new Set(["promise.create", "task.create", "schedule.create", "promise.get", "task.get", "schedule.get"]);

/**
 * Creates whose first load is presumed to find nothing, without reading: a create is nearly
 * always of a new id, and its write inserts that promise with a plain INSERT, which fails (23505)
 * when the row exists after all — the operation then runs again with a real load. So the usual
 * create costs one statement (one round trip) instead of a load and a write. The presumption
 * stands only if the write inserts every promise presumed absent (a task or a branch exists only
 * with its promise); a run that writes nothing, or not those inserts, runs again with a real load.
 */
const PRESUMED_ABSENT_FIRST = new Set(["promise.create", "task.create"]);

/** What one attempt presumed absent without reading it. */
interface Presumed {
  /** Whether the attempt's first load may still be presumed. */
  allowed: boolean;
  /** The promises presumed absent. */
  readonly ids: Set<string>;
  /** Whether the write about to go out inserts every one of them. */
  confirmed: boolean;
}

/** A presumption the operation's effects do not bear out: it runs again, reading. */
class PresumptionUnconfirmed extends Error {
  constructor() {
    super("a promise presumed absent was not inserted");
    this.name = "PresumptionUnconfirmed";
  }
}

/** The rows of `keys` (promise and branchOf keys only), all absent. */
function absentRows(keys: readonly RowKey[]): LoadedRows {
  return {
    promises: keys.filter((key) => key.kind === "promise").map((key) => ({ id: key.id, promise: null, task: null })),
    awaiters: [],
    listeners: [],
    branches: [],
    schedules: [],
  };
}

/** An operation outside a transaction found a row it must lock: it runs again inside one. */
class NeedsTransaction extends Error {
  constructor() {
    super("the operation needs a transaction");
    this.name = "NeedsTransaction";
  }
}

/**
 * The promise backend on PostgreSQL: each operation is one READ COMMITTED transaction whose
 * loads lock every promise, task and schedule row they read `FOR UPDATE` (one statement per
 * load) and whose effects are one statement; a retriable conflict reruns the whole operation.
 * A commit that wrote outbox rows is announced to this store's outbox listeners at once and to
 * every other store on the schema by a coalesced NOTIFY after it (see `subscribeOutbox`).
 */
class PostgresPromiseBackend implements PromiseBackend {
  readonly name = "postgres";
  readonly stepHook = true;
  readonly #config: ResolvedPostgresPromiseStoreConfig;
  readonly #pool: PostgresPool;
  readonly #ownsPool: boolean;
  /** Schema checks, migrations and reads: never through the step hook, which sees only transactions. */
  readonly #meta: Executor;
  readonly #sql: SqlCache;
  /** The LISTEN connection of the outbox channel, open while someone subscribes. */
  readonly #subscription: HintSubscription;
  /** NOTIFYs "a message waiting" after commits, coalesced. */
  readonly #publisher: HintPublisher;
  #hook: StepHook | null = null;
  /** Refuses a closed store and, once per store, a schema without (current) promise tables. */
  readonly #gate: StoreGate;
  /** The rows this store last read and wrote, by which an operation may skip its load (`null`: off). */
  readonly #cache: PromiseRowCache | null;
  /** Commits concurrent one-statement operations together (`null`: off). */
  readonly #group: CommitGroup | null;

  constructor(config: PostgresPromiseStoreConfig) {
    this.#config = resolvePostgresPromiseStoreConfig(config);
    this.#ownsPool = config.pool === undefined;
    // Its own pool pipelines (BEGIN with the first statement, COMMIT with the write: two round trips an operation).
    this.#pool = config.pool ?? new OwnedPool(config.connectionString!, config.maxConnections ?? 10, { pipeline: true });
    this.#meta = new Executor(this.#pool, () => null);
    this.#gate = new StoreGate(() => checkSchema(this.#meta, this.#config.schema, this.#config.schemaName, PROMISE_SURFACE));
    this.#sql = new SqlCache(this.#config.schema);
    this.#cache = this.#config.rowCache > 0 ? new PromiseRowCache(this.#config.rowCache) : null;
    this.#group = this.#config.groupCommit > 0 ? new CommitGroup(this.#pool, this.#config.groupCommit, GROUP_STATEMENTS) : null;
    const channel = outboxChannel(this.#config.schemaName);
    const subscription = new HintSubscription(config.listenClient ?? (() => this.#pool.connect()), channel);
    this.#subscription = subscription;
    this.#publisher = new HintPublisher(this.#pool, channel, () => subscription.client);
  }

  get schemaName(): string {
    return this.#config.schemaName;
  }

  /** Whether the LISTEN connection of the outbox channel is open right now. */
  get listening(): boolean {
    return this.#subscription.connected;
  }

  setStepHook(hook: StepHook | null): void {
    this.#hook = hook;
  }

  migrate(): Promise<MigrateResult> {
    return this.#gate.migrate(() => migrateSurface(this.#meta, PROMISE_SURFACE, this.#config.schema, this.#config.schemaName));
  }

  async close(): Promise<void> {
    if (!this.#gate.close()) return;
    await this.#publisher.drain();
    await this.#subscription.close();
    if (this.#ownsPool) await this.#pool.end();
  }

  async ping(): Promise<void> {
    this.#gate.assertOpen();
    // One statement, never cached: the database answers and the promise tables are there (and usable by this build).
    await checkSchema(this.#meta, this.#config.schema, this.#config.schemaName, PROMISE_SURFACE);
  }

  /**
   * One LISTEN connection per store for all its listeners, reopened on its own (with backoff)
   * when it breaks. This store's own commits reach its listeners in-process, at once; other
   * stores' (other processes') by NOTIFY. Lossy: a deliverer still drains on a timer.
   */
  subscribeOutbox(listener: () => void): () => void {
    this.#gate.assertOpen();
    return this.#subscription.subscribe(() => listener());
  }

  /** After a commit that wrote outbox rows: this store's listeners now, everyone else's by NOTIFY. */
  #announceOutbox(): void {
    this.#subscription.deliver([OUTBOX_WAITING]);
    this.#publisher.publish([OUTBOX_WAITING]);
  }

  async transact<T>(operation: string, work: (tx: PromiseTransaction) => Promise<T>): Promise<T> {
    await this.#gate.open();
    // With a step hook every operation is one transaction, so a fault at any step undoes it all.
    let outside = this.#hook === null && OUTSIDE_TRANSACTION_FIRST.has(operation);
    // Only the first attempt presumes: after any rerun (a duplicate id among them) it reads.
    let presume = outside && PRESUMED_ABSENT_FIRST.has(operation);
    // Operations that lock what they decide on may take their first rows from the cache (never
    // with a step hook, whose faults fall between statements of one transaction), until a
    // write finds the remembered rows changed: its rerun loads.
    let remember = this.#cache !== null && this.#hook === null && !outside;
    for (let attempt = 1; ; ) {
      // Per attempt: a rolled-back attempt's writes never happened.
      const written: Written = { outbox: false };
      const presumed: Presumed = { allowed: presume, ids: new Set(), confirmed: false };
      const memo = new TransactionMemo();
      presume = false;
      try {
        const result = await runPromiseOperation(this.#pool, operation, { hook: this.#hook, begin: outside ? null : BEGIN_READ_COMMITTED, group: this.#group }, async (session) => {
          const tx = this.#transaction(session, { written, outside, presumed, memo, cache: remember ? this.#cache : null });
          const answer = await work(tx);
          // Nothing written, so nothing confirmed the presumption: the answer may rest on it.
          if (presumed.ids.size > 0 && !presumed.confirmed) throw new PresumptionUnconfirmed();
          // Decided on remembered rows and wrote nothing: the answer rests on them, so they are checked (one statement).
          if (memo.guards !== null && memo.written === null) await applyPromiseEffects(session, this.#sql, NO_EFFECTS, memo);
          return answer;
        });
        // Committed: only now may anyone be told (a NOTIFY inside the transaction would serialize commits).
        if (written.outbox) this.#announceOutbox();
        this.#cache?.learn(memo, memo.effects, memo.written);
        return result;
      } catch (error) {
        if (memo.guards !== null) {
          // Whatever failed, the rerun loads what it decides on.
          this.#cache!.forgetGuarded(memo.guards);
          remember = false;
          // The remembered rows had changed (or, on a server whose default isolation is stricter
          // than READ COMMITTED, met a concurrent change), and nothing was written: the same attempt, loading.
          const state = stateOf(error);
          if (state === ROWS_CHANGED || state === "40001") continue;
        }
        if (error instanceof PresumptionUnconfirmed) continue;
        // A create presumed a new id that exists: the same attempt again, reading (the insert
        // failed, so nothing was written).
        if (presumed.ids.size > 0 && stateOf(error) === "23505") continue;
        if (error instanceof NeedsTransaction) {
          // Nothing was written: the same attempt, in a transaction.
          outside = false;
          continue;
        }
        const state = stateOf(error);
        if (state === undefined || !RERUN_SQLSTATES.has(state)) throw error;
        if (attempt >= this.#config.attempts) {
          const reason = error instanceof Error ? error.message : String(error);
          throw new TransientStoreError(`${operation}: ${reason} (after ${attempt} attempts)`, { cause: error });
        }
        attempt++;
        // The winner of a unique violation has committed already and a deadlock's survivor is
        // running: a short, jittered pause keeps two losers from meeting again in lockstep.
        await sleep(Math.random() * 2 * attempt);
      }
    }
  }

  async read<T>(work: (reader: PromiseReader) => Promise<T>): Promise<T> {
    await this.#gate.open();
    // Each reader query is one statement, and so one snapshot; the front asks one per read.
    return this.#meta.run("read", "autocommit", (session) => work(promiseReader(session, this.#sql)));
  }

  #transaction(
    session: PromiseSession,
    attempt: { written: Written; outside: boolean; presumed: Presumed; memo: TransactionMemo; cache: PromiseRowCache | null },
  ): PromiseTransaction {
    const { written, outside, presumed, memo, cache } = attempt;
    const sql = this.#sql;
    // Outside a transaction, rows found are not locked: deciding on them (to write, or with a
    // second read of another snapshot) needs the transaction.
    const locking = () => {
      if (outside && memo.foundLockable) throw new NeedsTransaction();
    };
    const inside = () => {
      if (outside) throw new NeedsTransaction();
    };
    return {
      load: async (keys) => {
        locking();
        const first = presumed.allowed;
        presumed.allowed = false;
        if (first && keys.every((key) => key.kind === "promise" || key.kind === "branchOf")) {
          for (const key of keys) presumed.ids.add(key.id);
          return absentRows(keys);
        }
        // Only an operation's first load, before any statement, may come from the cache: the write
        // carries that load's guards, and every later load goes to the database (in the transaction).
        if (cache !== null && !session.begun && memo.guards === null) {
          const remembered = cache.lookup(keys, memo);
          if (remembered !== null) {
            for (const { promise } of remembered.promises) if (promise !== null) memo.loaded.set(promise.id, promise);
            return remembered;
          }
        }
        return loadPromiseRows(session, sql, keys, memo, !outside);
      },
      apply: async (effects) => {
        locking();
        if (presumed.ids.size > 0) {
          const inserted = new Set(effects.promises.filter((w) => w.insert).map((w) => w.row.id));
          for (const id of presumed.ids) if (!inserted.has(id)) throw new PresumptionUnconfirmed();
          // The write's plain inserts confirm it: they fail if any of these rows exists.
          presumed.confirmed = true;
        }
        memo.effects = effects;
        await applyPromiseEffects(session, sql, effects, memo);
        // An unblock already there is not written again; announcing it anyway costs a spare hint only.
        if (effects.outbox.length > 0) written.outbox = true;
      },
      step: (name) => session.step(name),
      dueTimers: async (now, max) => {
        inside();
        return dueTimers(session, sql, now, max);
      },
      takeOutbox: async (now, max, until, filter) => {
        inside();
        return takeOutbox(session, sql, now, max, until, filter);
      },
      acknowledgeOutbox: async (rows) => {
        inside();
        await acknowledgeOutbox(session, sql, rows);
      },
      releaseOutbox: async (rows, at) => {
        inside();
        // A message handed back is waiting again, for a taker that can deliver it.
        if ((await releaseOutbox(session, sql, rows, at)) > 0) written.outbox = true;
      },
      reset: async () => {
        inside();
        await resetPromises(session, sql);
        // Other stores' caches meet the empty tables at their next write's check.
        this.#cache?.clear();
      },
    };
  }
}

/**
 * The Promise Store Contract on PostgreSQL: the storage of a Distributed Async Await server
 * (promises, tasks, callbacks, listeners, schedules and the outbox) for any number of server
 * processes on one database. Every request is checked and decided by the contract's front and
 * machine; this store supplies one READ COMMITTED transaction per operation with every row it
 * decides on locked `FOR UPDATE`, one statement per load and one per write, and timer and outbox
 * scans by index with `FOR UPDATE SKIP LOCKED` — the outbox take filtered to what its taker can
 * deliver, so each server process takes only its own messages. A retriable conflict reruns the
 * operation a few times, then throws `TransientStoreError`, with nothing committed.
 *
 * `subscribeOutbox` hears every commit that wrote outbox messages, this process's and every
 * other's on the schema: LISTEN/NOTIFY on a channel of the schema's own, one LISTEN connection
 * per store (reopened when it breaks), a NOTIFY after commit, coalesced. Lossy, like job hints.
 *
 * Its tables live beside a `PostgresStore`'s job tables in the same schema (default `belay`),
 * with migrations of their own under the same migration lock: each store's `migrate()` creates
 * only its own surface.
 */
export class PostgresPromiseStore extends CheckedPromiseStore {
  /**
   * Checks the config (throwing `InvalidInputError` naming the field) and sets the store up; it
   * connects on first use. Call `migrate()` once before anything else (any number of processes
   * may, at once): an operation on a schema without the promise tables throws `SchemaNotMigratedError`.
   *
   * @example
   * ```ts
   * import pg from "pg";
   * import { PostgresPromiseStore } from "@belay/postgres";
   *
   * const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL });
   * const promises = new PostgresPromiseStore({ pool });
   * await promises.migrate();
   * const { status, data } = await promises.handle(
   *   { kind: "promise.create", id: "order-1", timeoutAt: Date.now() + 60_000, tags: { "resonate:target": "poll://any@workers" } },
   *   Date.now(),
   * );
   * ```
   */
  constructor(config: PostgresPromiseStoreConfig) {
    super(new PostgresPromiseBackend(config), config);
  }

  /** The schema this store works in. */
  get schema(): string {
    return (this.backend as unknown as PostgresPromiseBackend).schemaName;
  }

  /** Whether the LISTEN connection behind `subscribeOutbox` is open right now (for health checks and tests). */
  get listening(): boolean {
    return (this.backend as unknown as PostgresPromiseBackend).listening;
  }
}
