import {
  Listeners, type MigrateResult, type PromiseBackend, type PromiseReader, type PromiseTransaction, type StepHook, StoreClosedError, TransientStoreError,
} from "@belay/contract";
import { Statements, asStoreError, openConnection } from "./connection.js";
import { LockedConnection } from "./locked-connection.js";
import { PROMISE_SURFACE } from "./migrate.js";
import { InsertConflict, type PromiseContext, applyPromiseEffects, loadPromiseRows } from "./sql/promise-rows.js";
import { acknowledgeOutbox, dueTimers, promiseReader, releaseOutbox, resetPromises, takeOutbox } from "./sql/promise-scans.js";
import { type ResolvedSqlitePromiseStoreConfig, resolveSqlitePromiseStoreConfig, type SqlitePromiseStoreConfig } from "./sqlite-promise-store-config.js";
import { tablesFor } from "./tables.js";

/** How many times an operation runs when its inserts keep finding rows it saw absent. */
const MAX_RUNS = 3;

/**
 * Most writes one commit holds (see `#runGroup`): enough that a burst of concurrent callers shares
 * a few commits, few enough that the write lock is held for milliseconds, not longer.
 */
export const MAX_GROUP = 32;

/** A write waiting for its group. */
interface QueuedWrite {
  readonly operation: string;
  readonly work: (tx: PromiseTransaction) => Promise<unknown>;
  /** Runs so far (an insert conflict runs it again). */
  runs: number;
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: unknown) => void;
}

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
 * front (which runs every rule). Operations run one at a time under the instance's lock; writes
 * run in `BEGIN IMMEDIATE` transactions — the file's write lock taken before the first load, so
 * nothing the machine decides on can change before the commit — and each is committed before it
 * resolves. Writes that queue while one runs share its commit (group commit, `#runGroup`).
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
  /** Writes waiting for a group, in the order they were asked for. */
  readonly #queue: QueuedWrite[] = [];
  /** The group queued for the lock or running, if any; it settles once the next one (if writes wait) is queued. */
  #group: Promise<void> | null = null;
  #closing = false;

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

  /** Refuses later writes, lets every write asked for before it commit (or fail), then closes the connection. */
  async close(): Promise<void> {
    this.#closing = true;
    this.#outboxListeners.clear();
    while (this.#group !== null) await this.#group;
    return this.#conn.close();
  }

  transact<T>(operation: string, work: (tx: PromiseTransaction) => Promise<T>): Promise<T> {
    if (this.#closing) return Promise.reject(new StoreClosedError());
    return new Promise<T>((resolve, reject) => {
      this.#queue.push({ operation, work: work as (tx: PromiseTransaction) => Promise<unknown>, runs: 0, resolve: resolve as (value: unknown) => void, reject });
      this.#startGroup();
    });
  }

  /** Queues a group (one transaction) under the connection's lock, unless one is queued or running. */
  #startGroup(): void {
    if (this.#group !== null || this.#queue.length === 0) return;
    this.#group = this.#conn
      .run(() => this.#runGroup())
      .catch((error: unknown) => {
        // The lock or the connection refused the group before it began (closed, wrong schema):
        // every write queued now gets that answer, as each would have on its own.
        for (const write of this.#queue.splice(0)) write.reject(error);
      })
      .finally(() => {
        this.#group = null;
        this.#startGroup();
      });
  }

  /**
   * Group commit: runs the queued writes one after another in one `BEGIN IMMEDIATE` transaction,
   * each from its own savepoint, and commits them together once no write is waiting (or
   * {@link MAX_GROUP} have run); each resolves only after that commit, so every answer is as
   * durable as before and the order is the order they queued in, as if each had committed alone.
   * One commit writes each page the group dirtied once, instead of once per write. A write that
   * fails rolls back to its savepoint and rejects, the others go on; a failure that ends the
   * whole transaction (SQLite's own rollback on an I/O error, a failed commit) rejects every write
   * of the group, none of which resolved. With a step hook installed every write is a group of
   * its own, so a test that parks one write never waits on another's answer.
   */
  async #runGroup(): Promise<void> {
    const runner = this.#conn.runner;
    const hook = this.#hook;
    const head = this.#queue[0];
    if (head === undefined) return;
    try {
      await runner.begin();
    } catch (error) {
      this.#queue.shift();
      head.reject(error);
      return;
    }
    const done: { readonly write: QueuedWrite; readonly result: unknown }[] = [];
    let wroteOutbox = false;
    const limit = hook === null ? MAX_GROUP : 1;
    while (done.length < limit) {
      const write = this.#queue.shift();
      if (write === undefined) break;
      const outcome = await this.#runInGroup(write, hook);
      if (outcome.ok) {
        done.push({ write, result: outcome.result });
        if (outcome.wroteOutbox) wroteOutbox = true;
      } else if (!runner.inTransaction) {
        // SQLite rolled the transaction back: the writes before this one are gone with it.
        write.reject(outcome.error);
        for (const earlier of done) earlier.write.reject(outcome.error);
        return;
      } else {
        write.reject(outcome.error);
      }
    }
    try {
      runner.commit();
    } catch (error) {
      for (const { write } of done) write.reject(error);
      return;
    }
    for (const { write, result } of done) write.resolve(result);
    // Committed: tell the listeners, outside the lock (a listener may call the store at once).
    if (wroteOutbox) this.#outboxListeners.announce();
  }

  /**
   * Runs one write inside the group's transaction from a savepoint; an insert that finds a row the
   * machine saw absent rolls back to it and runs the write again from its loads, a few times, as
   * the contract asks of every store.
   */
  async #runInGroup(
    write: QueuedWrite,
    hook: StepHook | null,
  ): Promise<{ readonly ok: true; readonly result: unknown; readonly wroteOutbox: boolean } | { readonly ok: false; readonly error: unknown }> {
    const runner = this.#conn.runner;
    const { operation } = write;
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
    try {
      runner.savepoint();
    } catch (error) {
      return { ok: false, error: asStoreError(error) };
    }
    for (;;) {
      write.runs++;
      wrote = false;
      try {
        const result = await write.work(tx);
        if (hook !== null) {
          const parked = hook({ operation, step: "commit" });
          if (parked) await parked;
        }
        runner.releaseSavepoint();
        return { ok: true, result, wroteOutbox: wrote };
      } catch (error) {
        if (!runner.inTransaction) return { ok: false, error: asStoreError(error) };
        try {
          runner.rollbackToSavepoint();
          if (error instanceof InsertConflict && write.runs < MAX_RUNS) continue;
          runner.releaseSavepoint();
        } catch (undo) {
          runner.rollback();
          return { ok: false, error: asStoreError(undo) };
        }
        if (error instanceof InsertConflict) {
          return { ok: false, error: new TransientStoreError(`${operation}: ${error.message} on ${write.runs} runs; nothing was committed`, { cause: error }) };
        }
        return { ok: false, error: asStoreError(error) };
      }
    }
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
