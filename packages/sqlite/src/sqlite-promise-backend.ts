import { Listeners, type MigrateResult, type PromiseBackend, type PromiseReader, type PromiseTransaction, type StepHook, TransientStoreError } from "@belay/contract";
import { Statements, openConnection } from "./connection.js";
import { LockedConnection } from "./locked-connection.js";
import { PROMISE_SURFACE } from "./migrate.js";
import { InsertConflict, type PromiseContext, applyPromiseEffects, loadPromiseRows } from "./sql/promise-rows.js";
import { acknowledgeOutbox, dueTimers, promiseReader, releaseOutbox, resetPromises, takeOutbox } from "./sql/promise-scans.js";
import { type ResolvedSqlitePromiseStoreConfig, resolveSqlitePromiseStoreConfig, type SqlitePromiseStoreConfig } from "./sqlite-promise-store-config.js";
import { tablesFor } from "./tables.js";

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
  // The front awaits between the loads and writes of one transaction, and the step hook may park
  // it: the connection's lock keeps every other operation of the instance off it until it ends.
  readonly #conn: LockedConnection;
  readonly #q: Statements;
  readonly #outboxListeners = new Listeners();
  #hook: StepHook | null = null;

  constructor(config: SqlitePromiseStoreConfig) {
    this.config = resolveSqlitePromiseStoreConfig(config);
    this.path = this.config.path;
    const tables = tablesFor(this.config.tablePrefix);
    const db = openConnection(this.config);
    try {
      db.pragma(`wal_autocheckpoint = ${WAL_AUTOCHECKPOINT_PAGES}`);
      db.pragma(`journal_size_limit = ${WAL_SIZE_LIMIT}`);
    } catch (error) {
      db.close();
      throw error;
    }
    this.#conn = new LockedConnection(db, tables, this.config.busyTimeoutMs, PROMISE_SURFACE, `${this.path} (promise tables ${tables.prefix}*)`);
    this.#q = new Statements(db, tables);
  }

  setStepHook(hook: StepHook | null): void {
    this.#hook = hook;
  }

  migrate(): Promise<MigrateResult> {
    return this.#conn.migrate();
  }

  close(): Promise<void> {
    this.#outboxListeners.clear();
    return this.#conn.close();
  }

  async transact<T>(operation: string, work: (tx: PromiseTransaction) => Promise<T>): Promise<T> {
    const { result, wroteOutbox } = await this.#conn.run(async () => {
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
          const result = await this.#conn.runner.writeAsync(operation, hook, () => work(tx));
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
    if (wroteOutbox) this.#outboxListeners.announce();
    return result;
  }

  /** Reads the promise schema's version afresh (not the check cached at the first operation): the file answers and the tables are there. */
  ping(): Promise<void> {
    return this.#conn.ping();
  }

  /** In-process and lossy: `listener` hears of this instance's commits that wrote outbox messages. */
  subscribeOutbox(listener: () => void): () => void {
    this.#conn.assertOpen();
    return this.#outboxListeners.subscribe(listener);
  }

  read<T>(work: (reader: PromiseReader) => Promise<T>): Promise<T> {
    return this.#conn.run(() => this.#conn.runner.readAsync(() => work(promiseReader(this.#q))));
  }
}
