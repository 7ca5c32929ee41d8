import type { Instant, JobState } from "./job.js";

/** Who asked for an operator action, as the host resolved it (user name, token name, `system`). */
export type Actor = string;

export interface JobActionRequest {
  readonly jobId: string;
  readonly actor: Actor;
  readonly now: Instant;
}

/**
 * `cancelled`: the job was scheduled or awaiting parents and is now cancelled (its `onSuccess`
 * children with it). `cancelRequested`: the job is leased; the request reaches the handler
 * through its next heartbeat (repeating the request is allowed and audited again).
 * `notCancellable`: the job is terminal; nothing changes and nothing is audited. Every call with
 * an effect appends an audit record in the same transaction as the effect.
 */
export type CancelResult =
  | { readonly status: "cancelled" }
  | { readonly status: "cancelRequested" }
  | { readonly status: "notCancellable"; readonly state: JobState }
  | { readonly status: "notFound" };

/**
 * `requeued`: a dead-lettered or quarantined job is scheduled again, due now, attempt reset to 0
 * (children already cancelled stay cancelled; children still awaiting their parents wait for
 * this one again), audited. `notRequeueable`: any other state;
 * nothing changes and nothing is audited.
 */
export type RequeueResult =
  | { readonly status: "requeued" }
  | { readonly status: "notRequeueable"; readonly state: JobState }
  | { readonly status: "notFound" };

export interface QueueActionRequest {
  readonly queue: string;
  readonly actor: Actor;
  readonly now: Instant;
}

export interface SetConcurrencyLimitRequest extends QueueActionRequest {
  /** Most jobs of the queue leased at once, cluster-wide; `null` removes the limit. A positive integer. */
  readonly limit: number | null;
}

/** Queue actions are idempotent and audited on every call. */
export type QueueActionResult = { readonly status: "applied" };

/** A queue's stored settings. A queue without a settings row is unpaused and unlimited. */
export interface QueueSettings {
  readonly queue: string;
  readonly paused: boolean;
  readonly concurrencyLimit: number | null;
}

export type AuditAction =
  | "cancel"
  | "requeue"
  | "pauseQueue"
  | "resumeQueue"
  | "setConcurrencyLimit"
  | "triggerSchedule"
  | "upsertSchedule"
  | "enqueue";

/** One operator action, recorded in the same transaction as its effect. */
export interface AuditRecord {
  /** Store-assigned, increasing in commit order; the keyset of `listAuditRecords`. */
  readonly seq: number;
  readonly at: Instant;
  readonly actor: Actor;
  readonly action: AuditAction;
  readonly targetKind: "job" | "queue" | "schedule";
  readonly target: string;
  /** What the action did, e.g. `cancelRequested`, `limit=3`, the triggered job's id. */
  readonly detail: string | null;
}

export interface ListAuditRequest {
  /** Only records about this target (job id, queue or schedule id). */
  readonly target?: string;
  readonly targetKind?: "job" | "queue" | "schedule";
  /** Keyset cursor from a previous page's `nextCursor`. */
  readonly after?: string;
  /** Clamped to `bounds.monitorPage`. */
  readonly limit?: number;
  /** Default `oldestFirst`. */
  readonly order?: "oldestFirst" | "newestFirst";
}

export interface AuditPage {
  readonly records: readonly AuditRecord[];
  readonly nextCursor: string | null;
}

/**
 * The audit records of an enqueue call made by an operator (`request.actor`): one per job the
 * call created, in input order, none for duplicates. Empty without an actor.
 */
export function enqueueAuditRecords(
  request: { readonly jobs: readonly { readonly id: string; readonly jobName: string }[]; readonly now: Instant; readonly actor?: Actor },
  results: readonly { readonly id: string; readonly status: string }[],
): Omit<AuditRecord, "seq">[] {
  if (request.actor === undefined) return [];
  const actor = request.actor;
  return results.flatMap((result, i) =>
    result.status === "created"
      ? [{ at: request.now, actor, action: "enqueue" as const, targetKind: "job" as const, target: result.id, detail: request.jobs[i]!.jobName }]
      : [],
  );
}
