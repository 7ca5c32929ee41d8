import {
  Listeners, type MigrateResult, type PromiseBackend, type PromiseReader, type PromiseTransaction, type StepHook, StoreClosedError, TransientStoreError,
} from "@belay/contract";
import { Statements, asStoreError, openConnection } from "./connection.js";
import { LockedConnection } from "./locked-connection.js";
import { PROMISE_SURFACE } from "./migrate.js";
import { InsertConflict, type PromiseContext, applyPromiseEffects, loadPromiseRows } from "./sql/promise-rows.js";
import { OutboxRevisions } from "./outbox-revisions.js";
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

/** A write: its transaction's work. */
interface Write {
  readonly kind: "write";
  readonly operation: string;
  readonly work: (tx: PromiseTransaction) => Promise<unknown>;
}

/** A read: one snapshot, outside any write. */
interface Read {
  readonly kind: "read";
  readonly work: (reader: PromiseReader) => Promise<unknown>;
}

type Operation = Write | Read;

/** An operation waiting for its turn, and its caller's answer. */
interface Waiting {
  readonly operation: Operation;
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
  readonly #revisions = new OutboxRevisions();
  #hook: StepHook | null = null;
  /** Operations waiting for their turn on the connection, in the order they were asked for. */
  readonly #queue: Waiting[] = [];
  /** The turn queued for the lock or running, if any; it settles once the next one (if any waits) is queued. */
  #turn: Promise<void> | null = null;
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
    if (this.#closing) return Promise.reject(new StoreClosedError());
    return this.#conn.migrate();
  }

  /**
   * Refuses every later call at once, lets every operation asked for before it run (writes commit
   * or fail), then closes the connection.
   */
  async close(): Promise<void> {
    this.#closing = true;
    this.#outboxListeners.clear();
    while (this.#turn !== null) await this.#turn;
    return this.#conn.close();
  }

  transact<T>(operation: string, work: (tx: PromiseTransaction) => Promise<T>): Promise<T> {
    return this.#ask<T>({ kind: "write", operation, work: work as (tx: PromiseTransaction) => Promise<unknown> });
  }

  /** Reads the promise schema's version afresh (not the check cached at the first operation): the file answers and the tables are there. */
  ping(): Promise<void> {
    if (this.#closing) return Promise.reject(new StoreClosedError());
    return this.#conn.ping();
  }

  /** In-process and lossy: `listener` hears of this instance's commits that wrote outbox messages. */
  subscribeOutbox(listener: () => void): () => void {
    if (this.#closing) throw new StoreClosedError();
    this.#conn.assertOpen();
    return this.#outboxListeners.subscribe(listener);
  }

  read<T>(work: (reader: PromiseReader) => Promise<T>): Promise<T> {
    return this.#ask<T>({ kind: "read", work: work as (reader: PromiseReader) => Promise<unknown> });
  }

  /** Queues an operation behind every one asked for before it, reads and writes alike. */
  #ask<T>(operation: Operation): Promise<T> {
    if (this.#closing) return Promise.reject(new StoreClosedError());
    return new Promise<T>((resolve, reject) => {
      this.#queue.push({ operation, resolve: resolve as (value: unknown) => void, reject });
      this.#nextTurn();
    });
  }

  /** Takes the connection's lock for the next turn (a read, or a group of writes), unless a turn is queued or running. */
  #nextTurn(): void {
    if (this.#turn !== null || this.#queue.length === 0) return;
    this.#turn = this.#conn
      .run(() => this.#runTurn())
      .catch((error: unknown) => {
        // The connection refused the turn before it began (closed, wrong schema): the operations
        // waiting now get that answer, as each would have on its own.
        for (const waiting of this.#queue.splice(0)) waiting.reject(error);
      })
      .finally(() => {
        this.#turn = null;
        this.#nextTurn();
      });
  }

  /** One turn under the lock: the operation at the head of the queue, with the writes right behind it if it is a write. */
  async #runTurn(): Promise<void> {
    const head = this.#queue[0];
    if (head === undefined) return;
    if (head.operation.kind === "read") {
      this.#queue.shift();
      const { work } = head.operation;
      await this.#conn.runner.readAsync(() => work(promiseReader(this.#q))).then(head.resolve, head.reject);
      return;
    }
    await this.#runGroup();
  }

  /**
   * Group commit: runs the writes at the head of the queue one after another in one `BEGIN
   * IMMEDIATE` transaction, each from its own savepoint, and commits them together once the next
   * operation asked for is not a write (none, or a read) or {@link MAX_GROUP} writes have run;
   * each resolves only after that commit, so every answer is as durable as before and the order
   * is the order they were asked in, as if each had committed alone. One commit writes each page
   * the group dirtied once, instead of once per write. A write that fails rolls back to its
   * savepoint and rejects, the others go on; a failure that ends the whole transaction (SQLite's
   * own rollback on an I/O error, a failed commit) rejects every write of the group, none of which
   * resolved. While a step hook is installed a group holds one write, so a test that parks one
   * write never waits on another's answer, and every write meets the hook installed when it runs.
   */
  async #runGroup(): Promise<void> {
    const runner = this.#conn.runner;
    const head = this.#queue.shift()!;
    try {
      await runner.begin();
      this.#revisions.refill(this.#q);
    } catch (error) {
      this.#abandon();
      head.reject(asStoreError(error));
      return;
    }
    // The writes run so far that wait for the commit, and the one running: whatever throws, each is answered.
    const done: { readonly waiting: Waiting; readonly result: unknown }[] = [];
    let current: Waiting | undefined = head;
    let wroteOutbox = false;
    try {
      for (let ran = 1; current !== undefined; ran++) {
        const hook = this.#hook;
        const outcome = await this.#runInGroup(current.operation as Write, hook);
        if (outcome.ok) {
          done.push({ waiting: current, result: outcome.result });
          if (outcome.wroteOutbox) wroteOutbox = true;
        } else if (!runner.inTransaction) {
          // SQLite rolled the transaction back: the writes before this one are gone with it.
          throw outcome.error;
        } else {
          current.reject(outcome.error);
        }
        const more = this.#hook === null && hook === null && ran < MAX_GROUP && this.#queue[0]?.operation.kind === "write";
        current = more ? this.#queue.shift() : undefined;
      }
      runner.commit();
    } catch (error) {
      this.#abandon();
      const failure = asStoreError(error);
      current?.reject(failure);
      for (const { waiting } of done) waiting.reject(failure);
      return;
    }
    this.#revisions.committed();
    for (const { waiting, result } of done) waiting.resolve(result);
    // Committed: tell the listeners (synchronously, a listener that calls the store queues behind).
    if (wroteOutbox) this.#outboxListeners.announce();
  }

  /** Ends a group that cannot commit: its transaction rolled back (if SQLite has not) and its revision block forgotten. */
  #abandon(): void {
    this.#revisions.rolledBack();
    try {
      this.#conn.runner.rollback();
    } catch {
      // The connection could not even roll back: the writes fail with the error that ended them,
      // and the next BEGIN reports what is wrong with the connection.
    }
  }

  /**
   * Runs one write inside the group's transaction from a savepoint; an insert that finds a row the
   * machine saw absent rolls back to it and runs the write again from its loads, a few times, as
   * the contract asks of every store.
   */
  async #runInGroup(
    write: Write,
    hook: StepHook | null,
  ): Promise<{ readonly ok: true; readonly result: unknown; readonly wroteOutbox: boolean } | { readonly ok: false; readonly error: unknown }> {
    const runner = this.#conn.runner;
    const { operation } = write;
    const ctx: PromiseContext = {
      q: this.#q,
      revisions: this.#revisions,
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
    for (let run = 1; ; run++) {
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
          if (error instanceof InsertConflict && run < MAX_RUNS) continue;
          runner.releaseSavepoint();
        } catch (undo) {
          runner.rollback();
          return { ok: false, error: asStoreError(undo) };
        }
        if (error instanceof InsertConflict) {
          return { ok: false, error: new TransientStoreError(`${operation}: ${error.message} on ${run} runs; nothing was committed`, { cause: error }) };
        }
        return { ok: false, error: asStoreError(error) };
      }
    }
  }
}
