import { type EnqueueRequest, type EnqueueResult, TransientStoreError, type validateNewJob } from "@belay/contract";

/** A job's field checks, when the caller has run them already (so the statement need not again). */
export type CheckedJob = ReturnType<typeof validateNewJob>;

type Run = (request: EnqueueRequest, checked?: readonly CheckedJob[]) => Promise<readonly EnqueueResult[]>;

interface Waiting {
  readonly request: EnqueueRequest;
  readonly checked: readonly CheckedJob[] | undefined;
  readonly resolve: (results: readonly EnqueueResult[]) => void;
  readonly reject: (error: unknown) => void;
}

/**
 * Group commit for concurrent enqueues. At most `maxInFlight` enqueue statements run at once;
 * calls that arrive meanwhile wait, and the next statement carries all of them (up to `maxJobs`
 * jobs), so a hundred producers enqueueing one job each cost a few commits, not a hundred. A call
 * that finds a free slot runs at once: a lone producer waits for nothing but, right after one of
 * its calls is answered, the rest of that turn of the event loop (see `#free`).
 *
 * Only calls that cannot affect each other's results are handed here: every job valid and
 * without parents (a batch is refused whole, so one caller's invalid job must never reach
 * another's statement). Jobs keep their order; results go back to each caller in its own order.
 * Duplicate ids across callers resolve as they would in sequence: the first creates, the later
 * ones are `duplicate`. The statement's `now` is the latest of its callers' (each call's `now`
 * is when it was made; the later one is still before the commit).
 *
 * A shared statement that fails for a reason other than a transient fault (data the database
 * refuses, say) is run again call by call, so that only the call at fault fails. A transient
 * fault fails every call it carried: each may retry.
 */
export class EnqueueCoalescer {
  readonly #run: Run;
  readonly #maxInFlight: number;
  readonly #maxJobs: number;
  #inFlight = 0;
  /** A freed slot's next statement waits for the next turn of the event loop (see `#free`). */
  #deferred = false;
  #waiting: Waiting[] = [];
  #idle: (() => void)[] = [];

  constructor(run: Run, maxInFlight: number, maxJobs: number) {
    this.#run = run;
    this.#maxInFlight = maxInFlight;
    this.#maxJobs = maxJobs;
  }

  /** Resolves once no call waits and no statement is in flight. */
  idle(): Promise<void> {
    if (this.#inFlight === 0 && this.#waiting.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  /** `checked`: the jobs' field checks, if already run (handed on to the statement). */
  enqueue(request: EnqueueRequest, checked?: readonly CheckedJob[]): Promise<readonly EnqueueResult[]> {
    return new Promise((resolve, reject) => {
      this.#waiting.push({ request, checked, resolve, reject });
      if (!this.#deferred) this.#next();
    });
  }

  #next(): void {
    this.#deferred = false;
    while (this.#inFlight < this.#maxInFlight && this.#waiting.length > 0) {
      let jobs = this.#waiting[0]!.request.jobs.length;
      let count = 1;
      while (count < this.#waiting.length && jobs + this.#waiting[count]!.request.jobs.length <= this.#maxJobs) {
        jobs += this.#waiting[count]!.request.jobs.length;
        count++;
      }
      const group = this.#waiting.slice(0, count);
      this.#waiting = this.#waiting.slice(count);
      this.#inFlight++;
      void this.#flush(group);
    }
    if (this.#inFlight === 0 && this.#waiting.length === 0) {
      const idle = this.#idle;
      this.#idle = [];
      for (const resolve of idle) resolve();
    }
  }

  /**
   * Frees the slot of a statement whose callers are about to be answered. Its next statement
   * waits for the next turn of the event loop: the callers answered often enqueue again at once
   * (a producer loop), and so share it instead of the first of them taking the slot alone.
   */
  #free(): void {
    this.#inFlight--;
    if (this.#deferred) return;
    this.#deferred = true;
    setImmediate(() => this.#next());
  }

  async #flush(group: readonly Waiting[]): Promise<void> {
    const request: EnqueueRequest =
      group.length === 1
        ? group[0]!.request
        : { jobs: group.flatMap((w) => w.request.jobs), now: Math.max(...group.map((w) => w.request.now)) };
    const checked = group.every((w) => w.checked !== undefined) ? group.flatMap((w) => w.checked!) : undefined;
    let results: readonly EnqueueResult[];
    try {
      results = await this.#run(request, checked);
    } catch (error) {
      if (group.length === 1 || error instanceof TransientStoreError) {
        this.#free();
        for (const w of group) w.reject(error);
        return;
      }
      // Call by call, each answered as soon as its statement ends; the slot stays taken until the last.
      for (const [i, w] of group.entries()) {
        let outcome: PromiseSettledResult<readonly EnqueueResult[]>;
        try {
          outcome = { status: "fulfilled", value: await this.#run(w.request, w.checked) };
        } catch (own) {
          outcome = { status: "rejected", reason: own };
        }
        if (i === group.length - 1) this.#free();
        if (outcome.status === "fulfilled") w.resolve(outcome.value);
        else w.reject(outcome.reason);
      }
      return;
    }
    this.#free();
    let offset = 0;
    for (const w of group) {
      w.resolve(results.slice(offset, offset + w.request.jobs.length));
      offset += w.request.jobs.length;
    }
  }
}
