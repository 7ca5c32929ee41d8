import type { Rejection } from "./errors.js";
import type { Instant, JobRecord, JobState, RetryDisposition, Tag } from "./job.js";

// ---- claim ---------------------------------------------------------------------------------

export interface ClaimRequest {
  /** The claiming worker; becomes the lease owner and half of the fencing token. */
  readonly workerId: string;
  /** Queues to serve, in dispatch order: the claim drains earlier queues first. Never re-sorted. */
  readonly queues: readonly string[];
  /** Most jobs to claim; clamped to `bounds.claimBatch`. */
  readonly max: number;
  readonly leaseMs: number;
  readonly now: Instant;
}

/** What of a job's record a claim hands its worker. */
type ClaimedFields =
  | "id" | "seq" | "jobName" | "queue" | "payload" | "attempt" | "releases" | "dueAt" | "enqueuedAt" | "tags" | "parentIds"
  | "dependencyMode" | "traceContext" | "scheduleId" | "workflowId" | "retry";

/**
 * A claimed job: everything a worker needs to run it and to report its outcome, as its record
 * reads once claimed. `attempt` is the one this claim started — with the worker id, the fencing
 * token of every later write — and `leaseExpiresAt` the end of this claim's lease.
 */
export interface ClaimedJob extends Pick<JobRecord, ClaimedFields> {
  readonly leaseExpiresAt: Instant;
}

export interface ClaimResult {
  readonly jobs: readonly ClaimedJob[];
  /**
   * Advice for an idle worker: `now` when due work in the served queues was left unclaimed (batch
   * cap or concurrency limit), else the earliest future due time in the served, unpaused queues,
   * else `null` (nothing known). Never later than the true next due time.
   */
  readonly nextDueAt: Instant | null;
}

// ---- outcomes ------------------------------------------------------------------------------

/** What became of one execution. */
export type Outcome =
  | {
      readonly type: "succeeded";
      /** JSON text stored on the job with the transition; over `bounds.outputBytes` the row is rejected. */
      readonly output?: string | null;
    }
  | {
      readonly type: "failed";
      /** When to run again, or `null` to dead-letter. The Core decides; the store applies. */
      readonly retryAt: Instant | null;
      /** Error name, message and stack; truncated to `bounds.failureDetailBytes`. */
      readonly failureDetail?: string | null;
    }
  | { readonly type: "cancelled" }
  | {
      /** The job cannot be routed (unknown job name, undecodable payload): quarantine it. */
      readonly type: "unroutable";
      readonly reason: string;
    };

/** One fenced outcome report. */
export interface OutcomeReport {
  readonly jobId: string;
  readonly workerId: string;
  readonly attempt: number;
  readonly outcome: Outcome;
  /** Tags the handler added; unioned with the job's tags under the same fence. */
  readonly addTags?: readonly Tag[];
}

export interface ReportOutcomesRequest {
  readonly reports: readonly OutcomeReport[];
  readonly now: Instant;
}

/**
 * Per report, in input order, naming the job and the attempt the report was about: `applied`
 * (with the state the job entered), `stale` (the fence did not match: nothing changed, added tags
 * and output dropped), or `rejected` (the report itself is invalid, e.g. output over its bound:
 * nothing changed for that job; other rows still apply).
 */
export type OutcomeResult =
  | { readonly jobId: string; readonly attempt: number; readonly status: "applied"; readonly state: JobState }
  | { readonly jobId: string; readonly attempt: number; readonly status: "stale" }
  | { readonly jobId: string; readonly attempt: number; readonly status: "rejected"; readonly rejection: Rejection };

// ---- heartbeat and release ------------------------------------------------------------------

/** A lease held by the caller: the job and the attempt it claimed. */
export interface HeldLease {
  readonly jobId: string;
  readonly attempt: number;
}

export interface HeartbeatRequest {
  readonly workerId: string;
  readonly leases: readonly HeldLease[];
  readonly leaseMs: number;
  readonly now: Instant;
}

/** `renewed` (the lease now runs to `leaseExpiresAt`) or `lost` (abort the handler, report nothing). */
export type HeartbeatResult =
  | {
      readonly jobId: string;
      readonly status: "renewed";
      readonly leaseExpiresAt: Instant;
      /** An operator asked to cancel: signal the handler, which should end `cancelled`. */
      readonly cancelRequested: boolean;
    }
  | { readonly jobId: string; readonly status: "lost" };

export interface ReleaseRequest {
  readonly workerId: string;
  readonly leases: readonly HeldLease[];
  readonly now: Instant;
}

/** `released`: the job is scheduled, due now, and the attempt is not counted. `stale`: nothing changed. */
export type ReleaseResult =
  | { readonly jobId: string; readonly status: "released" }
  | { readonly jobId: string; readonly status: "stale" };

// ---- lease expiry --------------------------------------------------------------------------

export interface ExpireLeasesRequest {
  readonly now: Instant;
  /** Most leases to dispose of; clamped to `bounds.claimBatch`. */
  readonly max: number;
  /** Only leases of these queues (the sweeping worker group's); omit for all queues. */
  readonly queues?: readonly string[];
  /** The policy for jobs without one of their own (`retry: null`); a job's own policy always wins. */
  readonly retry: RetryDisposition;
}

/** One expired lease and the state it was disposed to. */
export interface ExpiredLease {
  readonly jobId: string;
  readonly state: JobState;
}

export interface ExpireLeasesResult {
  readonly expired: readonly ExpiredLease[];
}
