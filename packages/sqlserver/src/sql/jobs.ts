import {
  type ClaimedJob, type DependencyMode, type JobRecord, type JobSummary, type QueryRow, type RetryDisposition, type Tag,
  type TransitionCause, JOB_STATE_CODES, TRANSITION_CAUSE_CODES, decodeIds, decodeRetry, decodeTags, dependencyModeFromCode, jobStateFromCode,
} from "@belay/contract";
import type { StoreContext } from "../context.js";
import { fromHex, hex, hexOrNull, textOf, textOfKey, toBool, toInt, toIntOrNull } from "../keys.js";
import type { Session } from "../session.js";
import { statement } from "../statements.js";
import { COLUMN_BYTES } from "../sqlserver-store-config.js";

// How rows become contract records, the locked-row model the operations decide on, and the one
// statement that writes decided rows with their transitions. Tags and parent ids are JSON text on
// the job row (tags as [key, value] pairs in the order the job got them), and so is a retry
// policy. States, dependency modes and transition causes are the contract's codes.

export const ID_HEX = `varchar(${COLUMN_BYTES.id * 2})`;
/** SQL: the id (or queue, job name, worker id) a hex expression stands for. */
export const idOf = (expression: string) => fromHex(expression, COLUMN_BYTES.id);

/** The columns of a job summary, for `SELECT` lists over `S.jobs j`. */
export const SUMMARY_COLUMNS = `j.seq, j.id, j.job_name, j.queue, j.state, j.due_at, j.attempt, j.releases, j.lease_owner,
  j.lease_expires_at, j.cancel_requested_by, j.enqueued_at, j.terminal_at, j.terminal_cause, j.parent_ids,
  j.dependency_mode, j.tags, j.trace_context, j.schedule_id, j.workflow_id, j.retry`;

/** The row encodings of tags, parent ids and retry policies are the contract's. */
export { decodeIds, decodeRetry, decodeTags, encodeIds, encodeRetry, encodeTags } from "@belay/contract";

export const stateOf = (code: unknown) => jobStateFromCode(toInt(code));

/**
 * SQL: the transitions of a worker's change to the jobs in table variable `changed` (columns
 * `n, seq, attempt, transition_count`, read as `alias`), to `state` by `cause` at `@now`, and
 * each job's history capped to its newest `@cap` — when `@history` says history is kept.
 */
export const workerTransitions = (S: string, changed: string, alias: string, state: number, cause: number) => `IF @history = 1
BEGIN
  INSERT INTO ${S}.transitions (job_seq, ordinal, at, state, attempt, cause, worker_id)
  SELECT ${alias}.seq, ${alias}.transition_count, @now, ${state}, ${alias}.attempt, ${cause}, @worker FROM ${changed} AS ${alias} ORDER BY ${alias}.n;
  DELETE t FROM ${S}.transitions AS t INNER JOIN ${changed} AS ${alias} ON t.job_seq = ${alias}.seq
  WHERE ${alias}.transition_count > @cap AND t.ordinal <= ${alias}.transition_count - @cap;
END;`;

/** What a job summary and a claimed job read alike from a job's columns. */
function jobColumns(row: QueryRow) {
  return {
    id: textOfKey(row["id"]),
    seq: toInt(row["seq"]),
    jobName: textOfKey(row["job_name"]),
    queue: textOfKey(row["queue"]),
    dueAt: toInt(row["due_at"]),
    attempt: toInt(row["attempt"]),
    releases: toInt(row["releases"]),
    enqueuedAt: toInt(row["enqueued_at"]),
    parentIds: decodeIds(row["parent_ids"]),
    dependencyMode: dependencyModeFromCode(toInt(row["dependency_mode"])) as DependencyMode,
    tags: decodeTags(row["tags"]),
    traceContext: (row["trace_context"] as string | null) ?? null,
    scheduleId: textOf(row["schedule_id"]),
    workflowId: textOf(row["workflow_id"]),
    retry: decodeRetry(row["retry"]),
  };
}

export function toSummary(row: QueryRow): JobSummary {
  // Keys in the order every store gives them (a summary serialized by the server reads the same).
  const { id, seq, jobName, queue, dueAt, attempt, releases, enqueuedAt, ...rest } = jobColumns(row);
  return {
    id, seq, jobName, queue,
    state: stateOf(row["state"]),
    dueAt, attempt, releases,
    leaseOwner: textOf(row["lease_owner"]),
    leaseExpiresAt: toIntOrNull(row["lease_expires_at"]),
    cancelRequested: row["cancel_requested_by"] != null,
    enqueuedAt,
    terminalAt: toIntOrNull(row["terminal_at"]),
    terminalCause: (row["terminal_cause"] as string | null) ?? null,
    ...rest,
  };
}

export function toRecord(row: QueryRow): JobRecord {
  return { ...toSummary(row), payload: row["payload"] as string };
}

/** A claimed job from a row of the claim's output (the job's columns after the update). */
export function toClaimed(row: QueryRow): ClaimedJob {
  const { id, seq, jobName, queue, attempt, releases, dueAt, enqueuedAt, tags, ...rest } = jobColumns(row);
  return {
    id, seq, jobName, queue,
    payload: row["payload"] as string,
    attempt, releases, dueAt, enqueuedAt,
    leaseExpiresAt: toInt(row["lease_expires_at"]),
    tags,
    ...rest,
  };
}

// ---- locked rows -----------------------------------------------------------------------------

/** The mutable state of a job, as an operation locked it (and as it writes it back). */
export interface JobRow {
  readonly seq: number;
  readonly id: string;
  readonly queue: string;
  readonly state: number;
  readonly dueAt: number;
  readonly attempt: number;
  readonly releases: number;
  readonly leaseOwner: string | null;
  readonly leaseExpiresAt: number | null;
  readonly cancelRequestedBy: string | null;
  readonly terminalAt: number | null;
  readonly terminalCause: string | null;
  readonly parentsRemaining: number;
  readonly transitionCount: number;
  readonly hasChildren: boolean;
  readonly dependencyMode: number;
  readonly tags: string | null;
  readonly retry: string | null;
}

const LOCKED_COLUMNS = `j.seq, j.id, j.queue, j.state, j.due_at, j.attempt, j.releases, j.lease_owner, j.lease_expires_at,
  j.cancel_requested_by, j.terminal_at, j.terminal_cause, j.parents_remaining, j.transition_count, j.has_children,
  j.dependency_mode, j.tags, j.retry`;

function toJobRow(row: QueryRow): JobRow {
  return {
    seq: toInt(row["seq"]),
    id: textOfKey(row["id"]),
    queue: textOfKey(row["queue"]),
    state: toInt(row["state"]),
    dueAt: toInt(row["due_at"]),
    attempt: toInt(row["attempt"]),
    releases: toInt(row["releases"]),
    leaseOwner: textOf(row["lease_owner"]),
    leaseExpiresAt: toIntOrNull(row["lease_expires_at"]),
    cancelRequestedBy: (row["cancel_requested_by"] as string | null) ?? null,
    terminalAt: toIntOrNull(row["terminal_at"]),
    terminalCause: (row["terminal_cause"] as string | null) ?? null,
    parentsRemaining: toInt(row["parents_remaining"]),
    transitionCount: toInt(row["transition_count"]),
    hasChildren: toBool(row["has_children"]),
    dependencyMode: toInt(row["dependency_mode"]),
    tags: (row["tags"] as string | null) ?? null,
    retry: (row["retry"] as string | null) ?? null,
  };
}

/** Locks jobs by id (update locks held to commit), in seq order. */
const LOCK_BY_ID = statement(
  "lockJobsById",
  { ids: "nvarchar(max)" },
  (S) => `SELECT ${LOCKED_COLUMNS} FROM ${S}.jobs AS j WITH (UPDLOCK, ROWLOCK)
WHERE j.id IN (SELECT ${idOf("x.value")} FROM OPENJSON(@ids) AS x) ORDER BY j.seq`,
);

/** Locks jobs by id; returns them by id. */
export async function lockJobs(session: Session, ids: readonly string[]): Promise<Map<string, JobRow>> {
  const out = new Map<string, JobRow>();
  if (ids.length === 0) return out;
  for (const row of await session.rows(LOCK_BY_ID, { ids: JSON.stringify([...new Set(ids)].map(hex)) })) {
    const job = toJobRow(row);
    out.set(job.id, job);
  }
  return out;
}

/** The children of some parents that still await them, locked, each with the parent it was found by. */
const LOCK_CHILDREN = statement(
  "lockAwaitingChildren",
  { parents: "nvarchar(max)" },
  (S) => `SELECT e.parent_seq, ${LOCKED_COLUMNS}
FROM ${S}.job_edges AS e INNER JOIN ${S}.jobs AS j WITH (UPDLOCK, ROWLOCK) ON j.seq = e.child_seq
WHERE e.parent_seq IN (SELECT CAST(x.value AS bigint) FROM OPENJSON(@parents) AS x) AND j.state = ${JOB_STATE_CODES.awaitingParents}
ORDER BY j.seq, e.parent_seq`,
);

export async function lockAwaitingChildren(session: Session, parentSeqs: readonly number[]): Promise<{ parentSeq: number; child: JobRow }[]> {
  if (parentSeqs.length === 0) return [];
  const rows = await session.rows(LOCK_CHILDREN, { parents: JSON.stringify(parentSeqs) });
  return rows.map((row) => ({ parentSeq: toInt(row["parent_seq"]), child: toJobRow(row) }));
}

// ---- writing decided rows ---------------------------------------------------------------------

/** What a write appends to the log with the row (omit for a write that is not a transition). */
export interface TransitionWrite {
  readonly cause: TransitionCause;
  readonly workerId?: string | null;
  readonly detail?: string | null;
}

/** One decided row and, when it changes state, its transition. */
export interface JobWrite {
  readonly row: JobRow;
  readonly transition: TransitionWrite | null;
}

/**
 * Writes decided rows by seq — every mutable column, as the operation computed it from the row it
 * locked — and appends their transitions (when history is on), dropping each job's entries beyond
 * the cap. One statement batch.
 */
const WRITE_JOBS = statement(
  "writeJobs",
  { rows: "nvarchar(max)", log: "nvarchar(max)", at: "bigint", history: "bit", cap: "int" },
  (S) => `UPDATE j SET state = r.state, due_at = r.due_at, attempt = r.attempt, releases = r.releases,
  lease_owner = ${idOf("r.lease_owner")}, lease_expires_at = r.lease_expires_at, cancel_requested_by = r.cancel_requested_by,
  terminal_at = r.terminal_at, terminal_cause = r.terminal_cause, parents_remaining = r.parents_remaining,
  transition_count = r.transition_count, tags = r.tags
FROM ${S}.jobs AS j INNER JOIN OPENJSON(@rows) WITH (
  seq bigint '$[0]', state tinyint '$[1]', due_at bigint '$[2]', attempt int '$[3]', releases int '$[4]', lease_owner ${ID_HEX} '$[5]',
  lease_expires_at bigint '$[6]', cancel_requested_by nvarchar(max) '$[7]', terminal_at bigint '$[8]', terminal_cause nvarchar(max) '$[9]',
  parents_remaining int '$[10]', transition_count int '$[11]', tags nvarchar(max) '$[12]'
) AS r ON j.seq = r.seq;
IF @history = 1
BEGIN
  INSERT INTO ${S}.transitions (job_seq, ordinal, at, state, attempt, cause, worker_id, failure_detail)
  SELECT l.seq, l.ordinal, @at, l.state, l.attempt, l.cause, ${idOf("l.worker")}, l.detail
  FROM OPENJSON(@log) WITH (seq bigint '$[0]', ordinal int '$[1]', state tinyint '$[2]', attempt int '$[3]', cause tinyint '$[4]',
    worker ${ID_HEX} '$[5]', detail nvarchar(max) '$[6]', n int '$[7]') AS l
  ORDER BY l.n;
  DELETE t FROM ${S}.transitions AS t
  INNER JOIN OPENJSON(@log) WITH (seq bigint '$[0]', ordinal int '$[1]') AS l ON t.job_seq = l.seq
  WHERE l.ordinal > @cap AND t.ordinal <= l.ordinal - @cap;
END`,
);

/** See {@link WRITE_JOBS}. A row with a transition must have its `transitionCount` raised by one already. */
export async function writeJobs(session: Session, ctx: StoreContext, writes: readonly JobWrite[], at: number): Promise<void> {
  if (writes.length === 0) return;
  const rows = writes.map(({ row: r }) => [
    r.seq,
    r.state,
    r.dueAt,
    r.attempt,
    r.releases,
    hexOrNull(r.leaseOwner),
    r.leaseExpiresAt,
    r.cancelRequestedBy,
    r.terminalAt,
    r.terminalCause,
    r.parentsRemaining,
    r.transitionCount,
    r.tags,
  ]);
  const log = writes
    .filter((w) => w.transition !== null)
    .map(({ row: r, transition: t }, n) => [
      r.seq,
      r.transitionCount,
      r.state,
      r.attempt,
      TRANSITION_CAUSE_CODES[t!.cause],
      hexOrNull(t!.workerId ?? null),
      ctx.detail ? (t!.detail ?? null) : null,
      n,
    ]);
  await session.query(WRITE_JOBS, { rows: JSON.stringify(rows), log: JSON.stringify(log), at, history: ctx.history, cap: ctx.bounds.transitionsPerJob });
}

/** `row` moved to a terminal state at `now` (lease and cancel request cleared), one transition more. */
export function ended(row: JobRow, state: number, terminalCause: string, now: number): JobRow {
  return { ...row, state, terminalAt: now, terminalCause, leaseOwner: null, leaseExpiresAt: null, cancelRequestedBy: null, transitionCount: row.transitionCount + 1 };
}

/** `row` scheduled again at `dueAt` (lease and cancel request cleared), one transition more. */
export function rescheduled(row: JobRow, dueAt: number): JobRow {
  return { ...row, state: JOB_STATE_CODES.scheduled, dueAt, terminalAt: null, terminalCause: null, leaseOwner: null, leaseExpiresAt: null, cancelRequestedBy: null, transitionCount: row.transitionCount + 1 };
}
