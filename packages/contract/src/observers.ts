import type { Instant, JobState } from "./job.js";

/** Which transitions an observer wants: by the state entered, and optionally job name and queue. */
export interface ObserverSubscription {
  readonly observerId: string;
  /** At least one state. */
  readonly states: readonly JobState[];
  /** Only jobs with one of these names; omit for all. */
  readonly jobNames?: readonly string[];
  /** Only jobs in one of these queues; omit for all. */
  readonly queues?: readonly string[];
}

export interface RegisterObserverRequest {
  readonly subscription: ObserverSubscription;
  /**
   * For a new observer: deliver the transitions already in the log (`beginning`) or only those
   * after registration (`end`, default). A re-registration keeps its cursor and changes only the
   * subscription.
   */
  readonly startAt?: "beginning" | "end";
  readonly now: Instant;
}

export type RegisterObserverResult =
  | { readonly status: "created"; readonly cursor: number }
  | { readonly status: "updated"; readonly cursor: number };

export interface ClaimObserverDeliveriesRequest {
  readonly observerId: string;
  readonly workerId: string;
  /** Clamped to `bounds.claimBatch`. */
  readonly max: number;
  readonly leaseMs: number;
  readonly now: Instant;
}

/** One transition handed to an observer's callback. */
export interface ObserverDelivery {
  readonly position: number;
  readonly jobId: string;
  readonly jobName: string;
  readonly queue: string;
  readonly state: JobState;
  readonly attempt: number;
  readonly at: Instant;
  readonly failureDetail: string | null;
  /** 1 on the first delivery of this transition to this observer, then 2, 3, … */
  readonly deliveryAttempt: number;
}

/**
 * `acquired`: the caller holds the observer's delivery lease until `leaseExpiresAt` and must
 * deliver `deliveries` in order (possibly none). `busy`: another worker holds a live lease.
 * Deliveries walk the log after the cursor in commit order, skipping non-matching and resolved
 * transitions, and stop at a transition whose retry is not yet due (head-of-line).
 */
export type ClaimObserverDeliveriesResult =
  | {
      readonly status: "acquired";
      readonly leaseExpiresAt: Instant;
      readonly deliveries: readonly ObserverDelivery[];
    }
  | { readonly status: "busy"; readonly leaseOwner: string }
  | { readonly status: "notFound" };

/** What became of one delivery. */
export type ObserverDeliveryOutcome =
  | { readonly position: number; readonly outcome: "delivered" }
  | { readonly position: number; readonly outcome: "retry"; readonly retryAt: Instant; readonly error?: string }
  | { readonly position: number; readonly outcome: "deadLettered"; readonly error: string };

export interface ReportObserverDeliveriesRequest {
  readonly observerId: string;
  readonly workerId: string;
  readonly outcomes: readonly ObserverDeliveryOutcome[];
  readonly now: Instant;
}

/**
 * `applied`: outcomes recorded and the cursor moved over the resolved prefix. `stale`: the caller
 * no longer holds a live lease; nothing changed.
 */
export type ReportObserverDeliveriesResult =
  | { readonly status: "applied"; readonly cursor: number }
  | { readonly status: "stale" };

/** An observer's position and backlog. */
export interface ObserverStatus {
  readonly subscription: ObserverSubscription;
  /** Every transition at or before this position is resolved for this observer; -1 = none yet. */
  readonly cursor: number;
  readonly leaseOwner: string | null;
  readonly leaseExpiresAt: Instant | null;
  /** Matching transitions after the cursor not yet delivered or dead-lettered. */
  readonly pending: number;
  /** When the oldest of them happened; `null` when caught up. */
  readonly oldestPendingAt: Instant | null;
  readonly deadLetters: number;
}

/** A transition an observer gave up on. Kept after the job itself is purged. */
export interface ObserverDeadLetter {
  readonly observerId: string;
  readonly position: number;
  readonly jobId: string;
  readonly state: JobState;
  readonly attempt: number;
  readonly at: Instant;
  readonly deliveryAttempts: number;
  readonly deadLetteredAt: Instant;
  readonly error: string;
}
