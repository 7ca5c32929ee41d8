import { type Bounds, type Instant, JOB_STATE_CODES, type QueryExecutor } from "@belay/contract";
import type { CheckedExecutor, Executor, SqlCache } from "./session.js";

/** What every operation in `sql/` needs from its store. */
export interface StoreContext {
  readonly executor: Executor;
  readonly sql: SqlCache;
  /** The schema's plain name (the quoted one is `sql.schema`): it keys the store's advisory locks. */
  readonly schemaName: string;
  readonly bounds: Readonly<Bounds>;
  /** Whether transitions are recorded at all (history policy not `off`). */
  readonly history: boolean;
  /** Whether failure detail is recorded (`transitionsAndFailureDetail`). */
  readonly detail: boolean;
  /** The LISTEN/NOTIFY channel of this schema's hints, or `null` with hints off. */
  readonly channel: string | null;
  /**
   * Queues this store has seen with a concurrency limit: a claim of one takes the queue's
   * advisory lock first instead of finding out by a wasted statement (see `sql/claim.ts`).
   */
  readonly limitedQueues: Set<string>;
  /** Announces queues that now hold due work; call only after the work committed. */
  hint(queues: Iterable<string>): void;
  /**
   * `executor`, running inside a transaction the caller holds, with the check that it reaches
   * this store's server, database and schema (run inside the call's savepoint). Throws
   * `InvalidTransactionError` for something that cannot run SQL at all.
   */
  caller(executor: QueryExecutor, operation: string): CheckedExecutor;
}

/** Collects the queues of jobs that became due by `now`, for hints after commit. */
export class DueQueues {
  readonly queues = new Set<string>();

  constructor(readonly now: Instant) {}

  add(queue: string, state: number, dueAt: number): void {
    if (state === JOB_STATE_CODES.scheduled && dueAt <= this.now) this.queues.add(queue);
  }
}
