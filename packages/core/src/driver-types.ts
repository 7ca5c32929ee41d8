import type {
  AcquireMaintainerLeaseResult,
  ClaimedJob, HeartbeatResult, HeldLease, Instant, MintDecision, OutcomeReport, OutcomeResult, ReleaseResult, RetentionClass,
  RetryDisposition, ScheduleRecord, Tag,
} from "@belay/contract";
import type { DispatchPolicy, ServedQueue } from "./dispatch.js";
import type { RetryPolicy } from "./retry.js";

/** Everything a node driver (one pump) is configured with. */
export interface DriverConfig {
  /** This pump's worker id: the lease owner and half of every fencing token. */
  readonly workerId: string;
  readonly queues: readonly ServedQueue[];
  readonly dispatch: DispatchPolicy;
  /** Handlers this pump may run at once. */
  readonly poolSize: number;
  /** Most jobs asked for in one claim. */
  readonly claimBatch: number;
  /**
   * Claimed jobs this pump may hold waiting for a free handler slot, beyond `poolSize`: the next
   * claim goes out while handlers are still busy, so short jobs never wait for a round trip.
   * Waiting jobs' leases are heartbeated like running ones; a stop hands them back at once.
   */
  readonly prefetch: number;
  readonly leaseMs: number;
  /** Default `leaseMs / 3`. */
  readonly heartbeatIntervalMs: number;
  /** Idle poll interval, and the floor of adaptive backoff. */
  readonly pollIntervalMs: number;
  /** Ceiling of adaptive idle backoff; equal to `pollIntervalMs` turns adaptation off. */
  readonly maxPollIntervalMs: number;
  /** Most outcomes in one report. */
  readonly outcomeBatch: number;
  /** Whether this pump sweeps leases, mints schedules and purges. */
  readonly maintenance: boolean;
  readonly maintenanceIntervalMs: number;
  /**
   * The cluster-wide election: with it, a maintenance round runs only while this pump holds the
   * store's maintainer lease under `holder` — taken or renewed for `leaseMs` first thing every
   * round (and again mid-round once it has lapsed), released on a graceful stop. A standby tries
   * again each round, and at the holder's expiry when that comes sooner. Without it, every round
   * runs (the pump is the maintainer by configuration).
   */
  readonly maintainerLease?: { readonly holder: string; readonly leaseMs: number };
  /**
   * The lease-expiry sweeps of a round, in order. Default: one over this pump's queues under
   * `groupRetry`.
   */
  readonly expirySweeps?: readonly ExpirySweep[];
  /** Retention per class; `null` keeps those jobs forever. */
  readonly retention: Readonly<Record<RetentionClass, number | null>>;
  /** Purge batch size. */
  readonly purgeBatch: number;
  /** Backoff after a transient store fault: doubles from `min` up to `max`. */
  readonly faultBackoffMs: { readonly min: number; readonly max: number };
  /** The retry policy of a claimed job: the one stored with it, else its job type's, else the group's. */
  readonly retryFor: (job: ClaimedJob) => RetryPolicy;
  /** The group's policy, applied by lease-expiry sweeps. */
  readonly groupRetry: RetryDisposition;
}

/** One lease-expiry sweep of a maintenance round: the queues it covers (all when omitted) and their fallback policy. */
export interface ExpirySweep {
  readonly queues?: readonly string[];
  /** The policy for jobs without one of their own. */
  readonly retry: RetryDisposition;
}

/** What a handler's execution ended in, as the shell saw it. */
export type ExecutionResult =
  | { readonly type: "succeeded"; readonly output: string | null; readonly addTags: readonly Tag[] }
  | {
      readonly type: "failed";
      readonly failureDetail: string | null;
      readonly addTags: readonly Tag[];
      /** `false` dead-letters at once (e.g. the handler declared the error permanent). */
      readonly retryable: boolean;
    }
  | { readonly type: "cancelled"; readonly addTags: readonly Tag[] }
  | { readonly type: "unroutable"; readonly reason: string };

/** A maintenance task the driver runs on its cadence. */
export type MaintenanceTask = "maintainerLease" | "expireLeases" | "schedules" | "purgeSucceededOrCancelled" | "purgeDeadLetteredOrQuarantined";

/** A store fault, classified by the shell. */
export interface StoreFault {
  readonly transient: boolean;
  readonly message: string;
}

/** Events the shell feeds the driver. Every event carries the shell's `now`. */
export type DriverEvent =
  | { readonly type: "started"; readonly now: Instant }
  | { readonly type: "timer"; readonly now: Instant }
  | { readonly type: "hint"; readonly queue: string; readonly now: Instant }
  | {
      readonly type: "claimed";
      readonly claimId: number;
      readonly jobs: readonly ClaimedJob[];
      readonly nextDueAt: Instant | null;
      readonly now: Instant;
    }
  | { readonly type: "claimFailed"; readonly claimId: number; readonly fault: StoreFault; readonly now: Instant }
  | {
      readonly type: "finished";
      readonly jobId: string;
      readonly attempt: number;
      readonly result: ExecutionResult;
      readonly now: Instant;
    }
  /**
   * Several executions that ended in the same turn of the event loop, delivered together so their
   * outcomes share one report and their slots one claim.
   */
  | {
      readonly type: "finishedMany";
      readonly executions: readonly { readonly jobId: string; readonly attempt: number; readonly result: ExecutionResult }[];
      readonly now: Instant;
    }
  | { readonly type: "reported"; readonly batchId: number; readonly results: readonly OutcomeResult[]; readonly now: Instant }
  | { readonly type: "reportFailed"; readonly batchId: number; readonly fault: StoreFault; readonly now: Instant }
  | { readonly type: "heartbeatAnswered"; readonly results: readonly HeartbeatResult[]; readonly now: Instant }
  | { readonly type: "heartbeatFailed"; readonly fault: StoreFault; readonly now: Instant }
  | { readonly type: "schedulesLoaded"; readonly schedules: readonly ScheduleRecord[]; readonly now: Instant }
  | {
      readonly type: "maintained";
      readonly task: MaintenanceTask;
      /** Rows affected (leases expired, jobs minted, jobs purged). */
      readonly count: number;
      /** The task filled its batch: run it again at once. */
      readonly full: boolean;
      readonly now: Instant;
    }
  | { readonly type: "maintenanceFailed"; readonly task: MaintenanceTask; readonly fault: StoreFault; readonly now: Instant }
  /** The store's answer to `acquireMaintainerLease` (a failure is `maintenanceFailed` of task `maintainerLease`). */
  | { readonly type: "maintainerLeaseAnswered"; readonly result: AcquireMaintainerLeaseResult; readonly now: Instant }
  /** `releaseMaintainerLease` settled, either way: an unreleased lease just lapses. */
  | { readonly type: "maintainerLeaseReleased"; readonly now: Instant }
  | { readonly type: "released"; readonly results: readonly ReleaseResult[]; readonly now: Instant }
  | { readonly type: "releaseFailed"; readonly leases: readonly HeldLease[]; readonly fault: StoreFault; readonly now: Instant }
  | { readonly type: "stopRequested"; readonly now: Instant }
  | { readonly type: "stopDeadline"; readonly now: Instant };

/** Why a running handler is told to stop. */
export type AbortReason = "leaseLost" | "cancelRequested" | "stopping" | "halted";

/** Commands the driver asks the shell to carry out. The shell stamps store calls with its `now`. */
export type DriverCommand =
  | { readonly type: "claim"; readonly claimId: number; readonly queues: readonly string[]; readonly max: number; readonly leaseMs: number }
  | { readonly type: "execute"; readonly job: ClaimedJob }
  | { readonly type: "report"; readonly batchId: number; readonly reports: readonly OutcomeReport[] }
  | { readonly type: "heartbeat"; readonly leases: readonly HeldLease[]; readonly leaseMs: number }
  | { readonly type: "abort"; readonly jobId: string; readonly reason: AbortReason }
  | { readonly type: "release"; readonly leases: readonly HeldLease[] }
  | { readonly type: "acquireMaintainerLease"; readonly holder: string; readonly leaseMs: number }
  | { readonly type: "releaseMaintainerLease"; readonly holder: string }
  | {
      readonly type: "expireLeases";
      readonly max: number;
      /** Omitted: every queue. */
      readonly queues?: readonly string[];
      readonly retry: RetryDisposition;
    }
  | { readonly type: "loadSchedules" }
  | { readonly type: "mintDue"; readonly decisions: readonly MintDecision[] }
  | { readonly type: "purge"; readonly task: MaintenanceTask; readonly retentionClass: RetentionClass; readonly before: Instant; readonly max: number }
  /** Deliver a `timer` event at `at` (replaces the previous request). */
  | { readonly type: "wakeAt"; readonly at: Instant }
  /** Graceful stop complete: nothing in flight, every outcome reported or released. */
  | { readonly type: "stopped" }
  /** Fail-stop after a non-transient store fault: report nothing more, let leases lapse. */
  | { readonly type: "halted"; readonly message: string };

/** A read-only view of a driver, for health endpoints and tests. */
export interface DriverSnapshot {
  readonly phase: "idle" | "running" | "stopping" | "stopped" | "halted";
  readonly degraded: boolean;
  readonly lastFault: string | null;
  /** Handlers running (including ones told to stop but not yet returned). */
  readonly executing: number;
  /** Slots reserved by claims in flight. */
  readonly reserved: number;
  /** Claimed jobs waiting for a free handler slot (see `DriverConfig.prefetch`). */
  readonly waiting: number;
  /** Outcomes waiting for, or in, a report. */
  readonly unreported: number;
  readonly poolSize: number;
  /** This pump runs maintenance rounds now: holds the maintainer lease, or maintains without an election. */
  readonly maintainer: boolean;
}
