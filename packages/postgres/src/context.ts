import { type Bounds, type Instant, JOB_STATE_CODES } from "@belay/contract";
import type { Executor, SqlCache } from "./session.js";

/** What every operation module needs from its store. */
export interface StoreContext {
  readonly executor: Executor;
  readonly sql: SqlCache;
  readonly bounds: Readonly<Bounds>;
  /** Whether transitions are recorded at all (history policy not `off`). */
  readonly history: boolean;
  /** Whether failure detail is recorded (`transitionsAndFailureDetail`). */
  readonly detail: boolean;
  /** The LISTEN/NOTIFY channel of this schema's hints, or `null` with hints off. */
  readonly channel: string | null;
  /** Announces queues that now hold due work; call only after the work committed. */
  hint(queues: Iterable<string>): void;
}

/** Collects the queues of jobs that became due by `now`, for hints after commit. */
export class DueQueues {
  readonly queues = new Set<string>();

  constructor(readonly now: Instant) {}

  add(queue: string, state: number, dueAt: number): void {
    if (state === JOB_STATE_CODES.scheduled && dueAt <= this.now) this.queues.add(queue);
  }
}
