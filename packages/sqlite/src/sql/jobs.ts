import {
  type Instant, type JobState, type JobSummary, type RetryDisposition, type Tag, type TransitionCause, JOB_STATE_CODES,
  TRANSITION_CAUSE_CODES, dependencyModeFromCode, failureDetailText, jobStateFromCode,
} from "@belay/contract";
import { type Io, row } from "../io.js";
import { S, type Tables } from "../tables.js";
import { type IoContext, type OpContext, noteDue } from "../transaction.js";

// Every change of a job's state goes through `moveToTerminal` or `moveToScheduled` (or the claim,
// release and cancel-request statements of their own operations), followed by `recordTransition`
// with the change's provenance; latches are resolved in `children.ts`. The SQL of each is here, in
// one place.

/** The job columns of a summary, with its tags and parents as JSON arrays; `j` aliases the jobs table. */
export const summaryColumns = (t: Tables) => `j.seq, j.id, j.job_name, j.queue, j.state, j.due_at, j.attempt,
  j.releases, j.lease_owner, j.lease_expires_at, j.cancel_requested_by, j.enqueued_at, j.terminal_at,
  j.terminal_cause, j.dependency_mode, j.trace_context, j.schedule_id, j.workflow_id,
  (SELECT json_group_array(json_array(g.key, g.value) ORDER BY g.ordinal) FROM ${t.tags} g WHERE g.job_seq = j.seq) AS tags,
  (SELECT json_group_array(e.parent_id ORDER BY e.ordinal) FROM ${t.edges} e WHERE e.child_seq = j.seq) AS parents,
  (SELECT p.retry FROM ${t.payloads} p WHERE p.job_seq = j.seq) AS retry`;

/** A row selected with {@link summaryColumns}. */
export interface SummaryRow {
  readonly seq: number;
  readonly id: string;
  readonly job_name: string;
  readonly queue: string;
  readonly state: number;
  readonly due_at: number;
  readonly attempt: number;
  readonly releases: number;
  readonly lease_owner: string | null;
  readonly lease_expires_at: number | null;
  readonly cancel_requested_by: string | null;
  readonly enqueued_at: number;
  readonly terminal_at: number | null;
  readonly terminal_cause: string | null;
  readonly dependency_mode: number;
  readonly trace_context: string | null;
  readonly schedule_id: string | null;
  readonly workflow_id: string | null;
  readonly tags: string;
  readonly parents: string;
  readonly retry: string | null;
}

/** Tags from their JSON form `[[key, value], …]`. */
export function parseTags(json: string): Tag[] {
  return (JSON.parse(json) as [string, string][]).map(([key, value]) => ({ key, value }));
}

/** A retry policy as stored (JSON text), or `null` for none. */
export function retryJson(retry: RetryDisposition | null): string | null {
  return retry === null ? null : JSON.stringify({ maxAttempts: retry.maxAttempts, delaysMs: retry.delaysMs });
}

/** A retry policy from its stored form; `null` (none, or written before policies were stored) stays `null`. */
export function parseRetry(json: string | null): RetryDisposition | null {
  return json === null ? null : (JSON.parse(json) as RetryDisposition);
}

/** A summary row as the contract's `JobSummary`. */
export function toSummary(row: SummaryRow): JobSummary {
  return {
    id: row.id,
    seq: row.seq,
    jobName: row.job_name,
    queue: row.queue,
    state: jobStateFromCode(row.state),
    dueAt: row.due_at,
    attempt: row.attempt,
    releases: row.releases,
    leaseOwner: row.lease_owner,
    leaseExpiresAt: row.lease_expires_at,
    cancelRequested: row.cancel_requested_by !== null,
    enqueuedAt: row.enqueued_at,
    terminalAt: row.terminal_at,
    terminalCause: row.terminal_cause,
    parentIds: JSON.parse(row.parents) as string[],
    dependencyMode: dependencyModeFromCode(row.dependency_mode),
    tags: parseTags(row.tags),
    traceContext: row.trace_context,
    scheduleId: row.schedule_id,
    workflowId: row.workflow_id,
    retry: parseRetry(row.retry),
  };
}

const FIND_JOB = (t: Tables) => `SELECT seq, id, state FROM ${t.jobs} WHERE id = ?`;

/** Appends one entry to a job's transition log; `enqueue.ts` writes a new job's first with it. */
export const INSERT_TRANSITION = (t: Tables) => `INSERT INTO ${t.transitions}
  (job_seq, ordinal, at, state, attempt, failure_detail, cause, worker_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`;

const TRIM_TRANSITIONS = (t: Tables) => `DELETE FROM ${t.transitions} WHERE job_seq = ? AND ordinal <= ?`;

const MOVED = "seq, id, queue, state, attempt, transition_count, has_children";

const TO_TERMINAL = (t: Tables) => `UPDATE ${t.jobs} SET state = ?, lease_owner = NULL, lease_expires_at = NULL,
  cancel_requested_by = NULL, terminal_at = ?, terminal_cause = ?, transition_count = transition_count + ?
  WHERE seq = ? RETURNING ${MOVED}`;

const TO_SCHEDULED = (t: Tables) => `UPDATE ${t.jobs} SET state = ${S.scheduled}, due_at = ?, attempt = ?, releases = ?,
  lease_owner = NULL, lease_expires_at = NULL, cancel_requested_by = NULL, terminal_at = NULL, terminal_cause = NULL,
  transition_count = transition_count + ? WHERE seq = ? RETURNING ${MOVED}`;

/** A job as a state change returns it: enough to record its transition and resolve its children. */
export interface MovedJob {
  readonly seq: number;
  readonly id: string;
  readonly queue: string;
  readonly state: number;
  readonly attempt: number;
  readonly transition_count: number;
  readonly has_children: number;
}

/** A job looked up by id: its seq and state, or `undefined`. */
export function* findJob(id: string): Io<{ seq: number; id: string; state: number } | undefined> {
  const found = yield* row<{ seq: number | bigint; id: string; state: number | bigint }>(FIND_JOB, id);
  // Number(): a caller's connection may read integers as bigint (better-sqlite3's safeIntegers).
  return found === undefined ? undefined : { seq: Number(found.seq), id: found.id, state: Number(found.state) };
}

/** Why a job changed state, and the worker whose write it was (`null`: none). */
export interface Provenance {
  readonly cause: TransitionCause;
  readonly workerId: string | null;
}

/** A change no worker wrote: enqueue, schedules, dependencies, operators. */
export const byStore = (cause: TransitionCause): Provenance => ({ cause, workerId: null });

/** 1 when transitions are recorded, else 0: what a state change adds to `transition_count`. */
export function recorded(ctx: IoContext): number {
  return ctx.history === "off" ? 0 : 1;
}

/**
 * Appends one transition for a job that just entered `moved.state` (unless history is off), with
 * its cause and writing worker, and drops the oldest beyond `bounds.transitionsPerJob`. Failure
 * detail is kept only under `transitionsAndFailureDetail`, as the contract's `failureDetailText`
 * rewrites it (storable text, truncated on a UTF-8 boundary).
 */
export function recordTransition(
  ctx: OpContext,
  moved: MovedJob,
  now: Instant,
  by: Provenance,
  failureDetail: string | null = null,
): void {
  if (ctx.history === "off") return;
  const detail =
    ctx.history === "transitionsAndFailureDetail" && failureDetail !== null
      ? failureDetailText(failureDetail, ctx.bounds.failureDetailBytes)
      : null;
  ctx.q
    .get(INSERT_TRANSITION)
    .run(moved.seq, moved.transition_count, now, moved.state, moved.attempt, detail, TRANSITION_CAUSE_CODES[by.cause], by.workerId);
  const excess = moved.transition_count - ctx.bounds.transitionsPerJob;
  if (excess > 0) ctx.q.get(TRIM_TRANSITIONS).run(moved.seq, excess);
}

/**
 * Moves a job to a terminal state (clearing lease and cancel request) and records the transition.
 * `terminalCause` comes from the contract's terminal causes (`terminalCauseText` or a disposition).
 */
export function moveToTerminal(
  ctx: OpContext,
  seq: number,
  to: JobState,
  terminalCause: string,
  now: Instant,
  by: Provenance,
  failureDetail: string | null = null,
): MovedJob {
  const moved = ctx.q.get(TO_TERMINAL).get(JOB_STATE_CODES[to], now, terminalCause, recorded(ctx), seq) as MovedJob;
  recordTransition(ctx, moved, now, by, failureDetail);
  return moved;
}

/** Moves a job to scheduled at `dueAt` (clearing lease, cancel request and terminal fields) and records the transition. */
export function moveToScheduled(
  ctx: OpContext,
  seq: number,
  fields: { dueAt: Instant; attempt: number; releases: number },
  now: Instant,
  by: Provenance,
  failureDetail: string | null = null,
): MovedJob {
  const moved = ctx.q.get(TO_SCHEDULED).get(fields.dueAt, fields.attempt, fields.releases, recorded(ctx), seq) as MovedJob;
  recordTransition(ctx, moved, now, by, failureDetail);
  noteDue(ctx, moved.queue, fields.dueAt, now);
  return moved;
}
