/**
 * A point in time: milliseconds since the Unix epoch, UTC. Every time-dependent store operation
 * receives its `now` as an `Instant` from the caller; no store reads a clock of its own.
 */
export type Instant = number;

/**
 * The seven states of a job. `succeeded`, `cancelled`, `deadLettered` and `quarantined` are
 * terminal: no automatic path ever moves a job out of them (only an operator requeue of a
 * dead-lettered or quarantined job does).
 */
export type JobState =
  | "scheduled"
  | "awaitingParents"
  | "leased"
  | "succeeded"
  | "cancelled"
  | "deadLettered"
  | "quarantined";

/** Every state, in the order of their stored codes. */
export const JOB_STATES: readonly JobState[] = Object.freeze([
  "scheduled",
  "awaitingParents",
  "leased",
  "succeeded",
  "cancelled",
  "deadLettered",
  "quarantined",
]);

/** The small integer each state is stored as in a database. Stable: never renumber. */
export const JOB_STATE_CODES: Readonly<Record<JobState, number>> = Object.freeze({
  scheduled: 0,
  awaitingParents: 1,
  leased: 2,
  succeeded: 3,
  cancelled: 4,
  deadLettered: 5,
  quarantined: 6,
});

/** The state stored as `code`; throws a `RangeError` for a code no version of Belay wrote. */
export function jobStateFromCode(code: number): JobState {
  const state = JOB_STATES[code];
  if (state === undefined) throw new RangeError(`unknown job state code ${code}`);
  return state;
}

/** Whether `state` is terminal (succeeded, cancelled, dead-lettered or quarantined). */
export function isTerminalState(state: JobState): boolean {
  return JOB_STATE_CODES[state] >= 3;
}

/** The states a job may be created in. */
export type InitialJobState = "scheduled" | "awaitingParents" | "cancelled";

/**
 * How a child's parents gate it. `onSuccess` (default): the child runs once every parent has
 * succeeded, and is cancelled (recursively, with its own `onSuccess` children) as soon as any
 * parent ends in another terminal state. `onAnyTerminal`: the child runs once every parent is
 * terminal, whatever the parents' outcomes.
 */
export type DependencyMode = "onSuccess" | "onAnyTerminal";

/** Every dependency mode, in the order of their stored codes. */
export const DEPENDENCY_MODES: readonly DependencyMode[] = Object.freeze(["onSuccess", "onAnyTerminal"]);

/** The small integer each dependency mode is stored as. Stable: never renumber. */
export const DEPENDENCY_MODE_CODES: Readonly<Record<DependencyMode, number>> = Object.freeze({ onSuccess: 0, onAnyTerminal: 1 });

/** The dependency mode stored as `code`; throws a `RangeError` for a code no version of Belay wrote. */
export function dependencyModeFromCode(code: number): DependencyMode {
  const mode = DEPENDENCY_MODES[code];
  if (mode === undefined) throw new RangeError(`unknown dependency mode code ${code}`);
  return mode;
}

/**
 * A tag. A label (`urgent`) has the empty key: `{ key: "", value: "urgent" }`. A keyed tag
 * (`tenant=acme`) has a non-empty key; one job may carry several values of the same key. A job
 * carries each distinct (key, value) pair at most once.
 */
export interface Tag {
  readonly key: string;
  readonly value: string;
}

/** A job as stored, without its payload or output (see {@link JobRecord}). */
export interface JobSummary {
  /** Caller-chosen or generated; unique in the store; the idempotency key of enqueue. */
  readonly id: string;
  /** Store-assigned, strictly increasing in enqueue order: the tie-break of claim order and the keyset of listings. */
  readonly seq: number;
  /** The stable wire name of the job type. */
  readonly jobName: string;
  readonly queue: string;
  readonly state: JobState;
  /** When the job becomes (or became) claimable. */
  readonly dueAt: Instant;
  /** Rises by one at every claim; reset to 0 only by an operator requeue. With `workerId`, the fencing token. */
  readonly attempt: number;
  /** Graceful releases so far: claims that ended in a fenced release rather than an outcome. */
  readonly releases: number;
  /** The worker holding the lease; `null` unless `state` is `leased`. */
  readonly leaseOwner: string | null;
  /** When the lease lapses; `null` unless `state` is `leased`. A lease is dead at exactly this instant. */
  readonly leaseExpiresAt: Instant | null;
  /** An operator asked to cancel this leased job; cleared whenever the job leaves `leased`. */
  readonly cancelRequested: boolean;
  readonly enqueuedAt: Instant;
  /** When the job reached its terminal state; `null` while it is live. */
  readonly terminalAt: Instant | null;
  /** Why the job is terminal (e.g. `succeeded`, `cancelled by alice`, `parent j1 deadLettered`); `null` while live. */
  readonly terminalCause: string | null;
  readonly parentIds: readonly string[];
  readonly dependencyMode: DependencyMode;
  readonly tags: readonly Tag[];
  readonly traceContext: string | null;
  /** The schedule that minted this job, if any. */
  readonly scheduleId: string | null;
  /** The workflow this job belongs to, if any. */
  readonly workflowId: string | null;
  /**
   * The job's own retry policy, stored with it at enqueue: it governs every path that ends an
   * attempt (a failure the Core decides, a lease expiry whichever process sweeps it). `null`: the
   * job has none, and the sweeper's or worker group's default applies.
   */
  readonly retry: RetryDisposition | null;
}

/** A job with its payload. Output is read separately (`getJobOutput`). */
export interface JobRecord extends JobSummary {
  /** The payload as JSON text, byte for byte as enqueued. */
  readonly payload: string;
}

/**
 * Why a job changed state. Each transition records one; where a worker wrote it, with the
 * worker's id.
 *
 * - `enqueued` — created `scheduled` or `awaitingParents` (enqueue, workflow).
 * - `minted` / `triggered` — created by a schedule's tick / by triggering a schedule now.
 * - `parentsResolved` — `awaitingParents` → `scheduled`: the last gating parent ended.
 * - `parentFailed` — → `cancelled`: an `onSuccess` parent ended other than succeeded (at enqueue
 *   or by a cascade).
 * - `claimed` — `scheduled` → `leased` (worker).
 * - `succeeded` — the handler returned (worker).
 * - `retryScheduled` — a failed attempt, rescheduled for a retry (worker).
 * - `failed` — a failed attempt at the ceiling, or a permanent failure: dead-lettered (worker).
 * - `cancelled` — the handler ended cancelled, or failed while a cancel was pending (worker).
 * - `unroutable` — quarantined: unknown job name or undecodable payload (worker).
 * - `released` — a graceful release by a stopping worker (worker).
 * - `leaseExpired` — an expiry sweep rescheduled, dead-lettered or cancelled the job; the worker is
 *   the owner of the lease that lapsed.
 * - `operatorCancelled` — an operator cancelled a job that was not leased.
 * - `requeued` — an operator requeued a dead-lettered or quarantined job.
 */
export type TransitionCause =
  | "enqueued"
  | "minted"
  | "triggered"
  | "parentsResolved"
  | "parentFailed"
  | "claimed"
  | "succeeded"
  | "retryScheduled"
  | "failed"
  | "cancelled"
  | "unroutable"
  | "released"
  | "leaseExpired"
  | "operatorCancelled"
  | "requeued";

/** Every transition cause, in the order of their stored codes. */
export const TRANSITION_CAUSES: readonly TransitionCause[] = Object.freeze([
  "enqueued",
  "minted",
  "triggered",
  "parentsResolved",
  "parentFailed",
  "claimed",
  "succeeded",
  "retryScheduled",
  "failed",
  "cancelled",
  "unroutable",
  "released",
  "leaseExpired",
  "operatorCancelled",
  "requeued",
]);

/** The small integer each transition cause is stored as. Stable: never renumber, only append. */
export const TRANSITION_CAUSE_CODES: Readonly<Record<TransitionCause, number>> = Object.freeze(
  Object.fromEntries(TRANSITION_CAUSES.map((cause, code) => [cause, code])) as Record<TransitionCause, number>,
);

/** The cause stored as `code`; `null` for a transition written before causes were recorded (no code). */
export function transitionCauseFromCode(code: number | null): TransitionCause | null {
  if (code === null) return null;
  const cause = TRANSITION_CAUSES[code];
  if (cause === undefined) throw new RangeError(`unknown transition cause code ${code}`);
  return cause;
}

/** The transition cause of an outcome's disposition: what a worker's report did to its job. */
export function outcomeCause(outcome: "succeeded" | "failed" | "cancelled" | "unroutable", state: JobState): TransitionCause {
  switch (outcome) {
    case "succeeded":
      return "succeeded";
    case "unroutable":
      return "unroutable";
    case "cancelled":
      return "cancelled";
    case "failed":
      return state === "scheduled" ? "retryScheduled" : state === "cancelled" ? "cancelled" : "failed";
  }
}

/**
 * One entry of a job's transition log: the state it entered, why, at which attempt, when, and the
 * worker that wrote it. Failure detail is present only on a transition caused by a failed attempt,
 * and only under the `transitionsAndFailureDetail` history policy.
 */
export interface TransitionRecord {
  readonly jobId: string;
  /** 1-based position in this job's own log; keeps counting when old entries are dropped. */
  readonly ordinal: number;
  /** Position in the store-wide log, in commit order: what observers walk. */
  readonly position: number;
  readonly at: Instant;
  readonly state: JobState;
  /** Why the job entered `state`; `null` only for a transition stored before causes were recorded. */
  readonly cause: TransitionCause | null;
  /** The worker whose write this was (claim, outcome, release; for `leaseExpired`, the lapsed lease's owner), else `null`. */
  readonly workerId: string | null;
  readonly attempt: number;
  readonly failureDetail: string | null;
}

/** How much history a store records. */
export type HistoryPolicy = "off" | "transitions" | "transitionsAndFailureDetail";

/**
 * Data a store needs to dispose of an expired lease without calling back into the Core: the
 * attempt ceiling and the delay before each retry.
 */
export interface RetryDisposition {
  /** A job whose counted attempts reach this number is dead-lettered instead of retried. */
  readonly maxAttempts: number;
  /** `delaysMs[n - 1]` is the delay after counted attempt `n` fails; the last entry repeats. */
  readonly delaysMs: readonly number[];
}

/**
 * The attempts that count towards the retry ceiling: claims minus graceful releases, so a deploy
 * that releases running jobs never pushes them towards dead-lettering.
 */
export function countedAttempts(job: { readonly attempt: number; readonly releases: number }): number {
  return job.attempt - job.releases;
}

/** The retry delay after counted attempt `attempt` failed, under `disposition`. */
export function retryDelayMs(disposition: RetryDisposition, attempt: number): number {
  const { delaysMs } = disposition;
  if (delaysMs.length === 0) return 0;
  const index = Math.min(Math.max(attempt, 1), delaysMs.length) - 1;
  return delaysMs[index] ?? 0;
}
