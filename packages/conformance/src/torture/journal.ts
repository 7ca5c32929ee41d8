import type {
  DependencyMode, EnqueueResult, EnqueueWorkflowResult, ExpiredLease, HeartbeatResult, HeldLease, MintDecision, MintResult,
  NormalizedNewJob, OutcomeResult, ReleaseResult, Tag, UpsertScheduleResult,
} from "@belay/contract";

// What a torture client was acknowledged: every call with an effect, its request (as much as the
// audit needs) and the result it got, in the order each lane's calls completed. `now` is the
// instant the call was made with (read just before it started), `ack` the wall clock when its
// answer arrived; every process on the host reads the same clock.

/** A job as a client asked for it: the fields of the new job the audit checks, and its dependency mode. */
export interface JournalJob extends Pick<NormalizedNewJob, "id" | "jobName" | "queue" | "payload" | "tags" | "parentIds" | "retry"> {
  readonly mode: DependencyMode;
}

/** Why a client expects a write to be refused: it was made stale on purpose. */
export type StaleReason =
  | "ghostWorker"
  | "wrongAttempt"
  | "leaseDead"
  | "duplicateReport"
  | "afterLost"
  | "notHeld";

/** One row of an outcome report as sent. */
export interface JournalReport {
  readonly jobId: string;
  readonly workerId: string;
  readonly attempt: number;
  readonly type: "succeeded" | "failed" | "cancelled" | "unroutable";
  readonly retryAt: number | null;
  /** The output sent with a success; for an oversized one, its size in `outputBytes` and `output` null. */
  readonly output: string | null;
  readonly outputBytes: number;
  readonly failureDetail: string | null;
  readonly addTags: readonly Tag[];
  /** `stale`/`rejected`: the result the client deliberately provoked; `null`: either may come. */
  readonly expect: "stale" | "rejected" | null;
  readonly why: StaleReason | "outputTooLarge" | null;
}

export interface CallTimes {
  readonly lane: string;
  readonly now: number;
  readonly ack: number;
}

export type JournalEntry =
  | (CallTimes & { readonly kind: "enqueue"; readonly pool: number | null; readonly jobs: readonly JournalJob[]; readonly results: readonly EnqueueResult[]; readonly invalid: boolean })
  | (CallTimes & {
      readonly kind: "workflow";
      readonly pool: number | null;
      readonly workflowId: string;
      readonly jobs: readonly JournalJob[];
      readonly result: EnqueueWorkflowResult;
    })
  | (CallTimes & {
      readonly kind: "claim";
      readonly workerId: string;
      readonly queues: readonly string[];
      readonly leaseMs: number;
      readonly jobs: readonly { readonly id: string; readonly attempt: number; readonly queue: string; readonly releases: number; readonly leaseExpiresAt: number }[];
    })
  | (CallTimes & {
      readonly kind: "heartbeat";
      readonly workerId: string;
      readonly leaseMs: number;
      readonly leases: readonly HeldLease[];
      readonly stray: readonly (StaleReason | null)[];
      readonly results: readonly HeartbeatResult[];
    })
  | (CallTimes & { readonly kind: "report"; readonly reports: readonly JournalReport[]; readonly results: readonly OutcomeResult[] })
  | (CallTimes & {
      readonly kind: "release";
      readonly workerId: string;
      readonly leases: readonly HeldLease[];
      readonly stray: readonly (StaleReason | null)[];
      readonly results: readonly ReleaseResult[];
    })
  | (CallTimes & { readonly kind: "expire"; readonly queues: readonly string[] | null; readonly max: number; readonly results: readonly ExpiredLease[] })
  | (CallTimes & { readonly kind: "cancel" | "requeue"; readonly actor: string; readonly jobId: string; readonly status: string })
  | (CallTimes & {
      readonly kind: "queue";
      readonly actor: string;
      readonly action: "pauseQueue" | "resumeQueue" | "setConcurrencyLimit";
      readonly queue: string;
      readonly limit: number | null;
    })
  | (CallTimes & { readonly kind: "trigger"; readonly actor: string; readonly scheduleId: string; readonly jobId: string; readonly status: string })
  | (CallTimes & { readonly kind: "upsertSchedule"; readonly scheduleId: string; readonly result: UpsertScheduleResult })
  | (CallTimes & { readonly kind: "removeSchedule"; readonly scheduleId: string; readonly status: string })
  | (CallTimes & { readonly kind: "mint"; readonly decisions: readonly MintDecision[]; readonly stale: readonly boolean[]; readonly results: readonly MintResult[] })
  /** Something a client saw that the contract forbids, checked on the spot (a read, an error). */
  | (CallTimes & { readonly kind: "anomaly"; readonly op: string; readonly message: string });

/** Everything one client (or the drain) writes. */
export interface Journal {
  readonly client: string;
  readonly entries: JournalEntry[];
  /** Transient store errors per operation, each retried. */
  readonly transient: Record<string, number>;
  /** Calls per operation. */
  readonly calls: Record<string, number>;
  /** Milliseconds spent per operation (all tries), and the slowest call. */
  readonly millis: Record<string, number>;
  readonly slowest: Record<string, number>;
  /** How the client ended: `null` when it finished its run. */
  failure: string | null;
}

export function newJournal(client: string): Journal {
  return { client, entries: [], transient: {}, calls: {}, millis: {}, slowest: {}, failure: null };
}
