import { type Bounds, type HistoryPolicy, type StepHook, TransientStoreError } from "@belay/contract";
import { type Connection, LOCK_SLICE_MS, type Statement, type Statements, asStoreError, isLockError } from "./connection.js";

/** What an operation written as `Io` receives: no connection, since its driver runs its queries. */
export interface IoContext {
  readonly bounds: Readonly<Bounds>;
  readonly history: HistoryPolicy;
  /** Queues that received a job due now, for wake-up hints after commit; `null`: none to send. */
  readonly hinted: Set<string> | null;
}

/** What a read in `sql/` receives: the store's own connection, outside any write. */
export interface ReadContext {
  /** Prepared statements of the connection the operation runs on. */
  readonly q: Statements;
  readonly bounds: Readonly<Bounds>;
}

/** What every write in `sql/` on the store's own connection receives. */
export interface OpContext extends IoContext, ReadContext {}

/**
 * A write operation's body: a generator that yields the name of each internal step (a point
 * between two writes where the test hook may fault or park it) and returns the result. Without a
 * hook the runner drives it straight through, synchronously.
 */
export type Steps<T> = Generator<string, T, void>;

/** Notes that `queue` received a job that is due at `now` (hinted after commit). */
export function noteDue(ctx: IoContext, queue: string, dueAt: number, now: number): void {
  if (ctx.hinted !== null && dueAt <= now) ctx.hinted.add(queue);
}

/** Waits between attempts to take the write lock after SQLite's own busy handler gave up. */
const BACKOFF_MS = [1, 2, 5, 10, 20, 50] as const;

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Runs operations on the store's own connection: each write runs in a `BEGIN IMMEDIATE`
 * transaction (the write lock is taken before anything is read, so check-then-write inside it is
 * atomic against every other connection and process) — its own (`write`), or one a caller opens
 * with `begin` and shares between writes from savepoints (the promise surface's group commit);
 * multi-statement reads run in a deferred transaction for one consistent snapshot.
 */
export class TransactionRunner {
  readonly #db: Connection;
  readonly #budgetMs: number;
  readonly #beginWrite: Statement;
  readonly #beginRead: Statement;
  readonly #commit: Statement;
  readonly #rollback: Statement;
  readonly #savepoint: Statement;
  readonly #release: Statement;
  readonly #rollbackTo: Statement;

  constructor(db: Connection, busyTimeoutMs: number) {
    this.#db = db;
    this.#budgetMs = busyTimeoutMs;
    this.#beginWrite = db.prepare("BEGIN IMMEDIATE");
    this.#beginRead = db.prepare("BEGIN");
    this.#commit = db.prepare("COMMIT");
    this.#rollback = db.prepare("ROLLBACK");
    this.#savepoint = db.prepare("SAVEPOINT belay_operation");
    this.#release = db.prepare("RELEASE belay_operation");
    this.#rollbackTo = db.prepare("ROLLBACK TO belay_operation");
  }

  /**
   * Runs `body` in one write transaction, calling `hook` at every step it yields and before the
   * commit. Anything thrown — by the body, the hook or SQLite — rolls everything back; lock
   * errors surface as `TransientStoreError`.
   */
  async write<T>(operation: string, hook: StepHook | null, body: () => Steps<T>): Promise<T> {
    if (!this.#tryBegin()) await this.#waitForLock();
    let steps: Steps<T> | undefined;
    try {
      steps = body();
      let next = steps.next();
      if (hook === null) {
        while (!next.done) next = steps.next();
      } else {
        while (!next.done) {
          const parked = hook({ operation, step: next.value });
          if (parked) await parked;
          next = steps.next();
        }
        const parked = hook({ operation, step: "commit" });
        if (parked) await parked;
      }
      this.#commit.run();
      return next.value;
    } catch (error) {
      try {
        steps?.return(undefined as T);
      } catch {
        // The generator's own cleanup failing changes nothing: the rollback below undoes it all.
      }
      if (this.#db.inTransaction) this.#rollback.run();
      throw asStoreError(error);
    }
  }

  /**
   * Opens a write transaction (`BEGIN IMMEDIATE`), waiting for the file's write lock within the
   * busy budget, for a caller that runs its own statements (and savepoints) inside it and ends it
   * with {@link commit} or {@link rollback}. The caller keeps every other use of the connection
   * out until then.
   */
  async begin(): Promise<void> {
    if (!this.#tryBegin()) await this.#waitForLock();
  }

  /** Commits the open transaction; a failure rolls it back (if SQLite has not) and is thrown as a store error. */
  commit(): void {
    try {
      this.#commit.run();
    } catch (error) {
      try {
        this.rollback();
      } catch {
        // The commit's own failure is the one to report.
      }
      throw asStoreError(error);
    }
  }

  /** Rolls back the open transaction, if one is open (SQLite ends a transaction itself on some errors). */
  rollback(): void {
    if (this.#db.inTransaction) this.#rollback.run();
  }

  /** Whether a transaction is open: SQLite rolls the whole transaction back itself on some errors (I/O, full disk, out of memory). */
  get inTransaction(): boolean {
    return this.#db.inTransaction;
  }

  /** Marks a point inside the open transaction that {@link rollbackToSavepoint} returns to. */
  savepoint(): void {
    this.#savepoint.run();
  }

  /** Keeps what ran since {@link savepoint} in the transaction and forgets the savepoint. */
  releaseSavepoint(): void {
    this.#release.run();
  }

  /** Undoes what ran since {@link savepoint}; the savepoint stays, to run again from or to release. */
  rollbackToSavepoint(): void {
    this.#rollbackTo.run();
  }

  /** {@link read} for a body that awaits between its statements: one snapshot throughout. */
  async readAsync<T>(body: () => Promise<T>): Promise<T> {
    try {
      this.#beginRead.run();
      const result = await body();
      this.#commit.run();
      return result;
    } catch (error) {
      if (this.#db.inTransaction) this.#rollback.run();
      throw asStoreError(error);
    }
  }

  /** Runs a read of several statements in one snapshot. */
  read<T>(body: () => T): T {
    try {
      this.#beginRead.run();
      const result = body();
      this.#commit.run();
      return result;
    } catch (error) {
      if (this.#db.inTransaction) this.#rollback.run();
      throw asStoreError(error);
    }
  }

  /** Takes the write lock, or reports that another connection holds it. */
  #tryBegin(): boolean {
    try {
      this.#beginWrite.run();
      return true;
    } catch (error) {
      if (isLockError(error)) return false;
      throw asStoreError(error);
    }
  }

  /**
   * Retries `BEGIN IMMEDIATE` until the busy budget is spent, yielding to the event loop between
   * attempts. This wait is the only timer in the store and decides nothing about jobs: it only
   * bounds how long a write queues for the file lock.
   */
  async #waitForLock(): Promise<void> {
    let waited = Math.min(this.#budgetMs, LOCK_SLICE_MS);
    for (let attempt = 0; waited < this.#budgetMs; attempt++) {
      const delay = BACKOFF_MS[Math.min(attempt, BACKOFF_MS.length - 1)]!;
      await sleep(delay);
      if (this.#tryBegin()) return;
      waited += delay + Math.min(this.#budgetMs, LOCK_SLICE_MS);
    }
    throw new TransientStoreError(`the database stayed locked by another connection for ${this.#budgetMs} ms; nothing was committed`);
  }
}
