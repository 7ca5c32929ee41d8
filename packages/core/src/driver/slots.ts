import type { ClaimedJob, HeartbeatResult, HeldLease, Instant } from "@belay/contract";
import type { DriverCommand, DriverConfig } from "../driver-types.js";

/**
 * How long, on average, a prefetched job may wait locally for a slot. The allowance of waiting
 * jobs shrinks as handlers get slower (poolSize × this ÷ the mean handler time), so prefetching
 * speeds up short jobs and never hoards long ones that an idle peer could run.
 */
const PREFETCH_WAIT_MS = 50;

/**
 * The longest a prefetched job waits for a slot (handlers that turned slow, e.g. one long job
 * among short ones): past it the job is handed back, unstarted, for any node to claim.
 */
const PREFETCH_WAIT_LIMIT_MS = 1_000;

/** A handler this pump started. */
export interface Running {
  readonly job: ClaimedJob;
  /** The lease is gone (lost, or released at a stop deadline): whatever the handler does is dropped. */
  abandoned: boolean;
  cancelRequested: boolean;
  readonly startedAt: Instant;
}

/** A claimed job waiting for a slot, with when it was claimed and until when its lease holds. */
interface Waiting {
  readonly job: ClaimedJob;
  readonly claimedAt: Instant;
  leaseExpiresAt: Instant;
}

const leaseOf = ({ job }: { readonly job: ClaimedJob }): HeldLease => ({ jobId: job.id, attempt: job.attempt });

/**
 * The jobs a pump holds for execution: handlers running and claimed jobs waiting (prefetched) for
 * a free slot, and from them the capacity a claim may fill.
 */
export class Slots {
  readonly #config: DriverConfig;
  /** Running handlers, in start order (the Map keeps it). */
  readonly #running = new Map<string, Running>();
  /** Claimed jobs waiting for a free handler slot, oldest claim first. */
  #waiting: Waiting[] = [];
  /** Moving mean of handler time (ms); `null` until a handler has finished. */
  #meanHandlerMs: number | null = null;

  constructor(config: DriverConfig) {
    this.#config = config;
  }

  get running(): ReadonlyMap<string, Running> {
    return this.#running;
  }

  get waiting(): number {
    return this.#waiting.length;
  }

  /** Whether a handler still owes an outcome (one whose lease is gone owes nothing). */
  handlersOwed(): boolean {
    for (const running of this.#running.values()) if (!running.abandoned) return true;
    return false;
  }

  /** Jobs this pump may hold now: running, waiting, and reserved by a claim in flight. */
  capacity(now: Instant): number {
    const { poolSize, prefetch } = this.#config;
    if (prefetch === 0 || this.#meanHandlerMs === null) return poolSize; // nothing known yet: no hoarding
    // A handler running longer than the mean says more about the next wait than the mean does.
    const oldest = this.#running.values().next().value; // the Map keeps start order
    const handlerMs = oldest === undefined ? this.#meanHandlerMs : Math.max(this.#meanHandlerMs, now - oldest.startedAt);
    return poolSize + Math.min(prefetch, Math.floor((poolSize * PREFETCH_WAIT_MS) / Math.max(handlerMs, 0.01)));
  }

  /** Jobs held (running or waiting), before any claim in flight. */
  held(): number {
    return this.#running.size + this.#waiting.length;
  }

  /** Claimed jobs join the end of the wait. */
  hold(jobs: readonly ClaimedJob[], now: Instant): void {
    for (const job of jobs) this.#waiting.push({ job, claimedAt: now, leaseExpiresAt: job.leaseExpiresAt });
  }

  /**
   * Starts waiting jobs, oldest first, while handler slots are free. A job whose lease has run
   * out meanwhile is dropped, never started (a peer may already run it); one that waited past
   * the limit is returned, for the caller to hand back.
   */
  startWaiting(now: Instant, out: DriverCommand[]): HeldLease[] {
    let taken = 0;
    const overdue: Waiting[] = [];
    while (taken < this.#waiting.length) {
      const waiting = this.#waiting[taken]!;
      if (waiting.leaseExpiresAt <= now) {
        taken++;
        continue;
      }
      if (now - waiting.claimedAt >= PREFETCH_WAIT_LIMIT_MS) {
        overdue.push(waiting);
        taken++;
        continue;
      }
      if (this.#running.size >= this.#config.poolSize) break;
      taken++;
      const { job } = waiting;
      this.#running.set(job.id, { job, abandoned: false, cancelRequested: false, startedAt: now });
      out.push({ type: "execute", job });
    }
    if (taken > 0) this.#waiting = this.#waiting.slice(taken);
    // Later entries were claimed no earlier than the first kept one; the wake-up covers them.
    return overdue.map(leaseOf);
  }

  /** Empties the wait (a stop or a fault-stop); returns the leases to hand back. */
  takeWaiting(): HeldLease[] {
    const leases = this.#waiting.map(leaseOf);
    this.#waiting = [];
    return leases;
  }

  /** A handler returned: frees its slot; `undefined` when it is not the running attempt. */
  finish(jobId: string, attempt: number, now: Instant): Running | undefined {
    const running = this.#running.get(jobId);
    if (running === undefined || running.job.attempt !== attempt) return undefined;
    this.#running.delete(jobId);
    const ms = Math.max(0, now - running.startedAt);
    this.#meanHandlerMs = this.#meanHandlerMs === null ? ms : this.#meanHandlerMs + (ms - this.#meanHandlerMs) / 8;
    return running;
  }

  /**
   * Applies heartbeat answers to waiting jobs: one whose lease is lost is dropped; one whose
   * cancel was requested never starts and is returned, to be reported cancelled (a pending
   * cancel wins). `sent` is the attempt each answer was about.
   */
  renewWaiting(results: readonly HeartbeatResult[], sent: ReadonlyMap<string, number>): ClaimedJob[] {
    const byId = new Map(results.map((r) => [r.jobId, r]));
    const cancelled: ClaimedJob[] = [];
    this.#waiting = this.#waiting.filter((waiting) => {
      const { job } = waiting;
      const result = byId.get(job.id);
      if (result === undefined || sent.get(job.id) !== job.attempt) return true;
      if (result.status === "lost") return false;
      waiting.leaseExpiresAt = result.leaseExpiresAt;
      if (!result.cancelRequested) return true;
      cancelled.push(job);
      return false;
    });
    return cancelled;
  }

  /** The leases of waiting jobs, then of running handlers that still hold theirs. */
  leases(): HeldLease[] {
    const leases = this.#waiting.map(leaseOf);
    for (const running of this.#running.values()) if (!running.abandoned) leases.push(leaseOf(running));
    return leases;
  }

  /** Whether any job is running or waiting (cheap: no list is built). */
  holdsAny(): boolean {
    return this.#running.size > 0 || this.#waiting.length > 0;
  }

  /** When the oldest waiting job reaches the wait limit, or `null`. */
  nextWakeAt(): Instant | null {
    return this.#waiting.length > 0 ? this.#waiting[0]!.claimedAt + PREFETCH_WAIT_LIMIT_MS : null;
  }
}
