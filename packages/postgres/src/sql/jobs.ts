import {
  type ClaimedJob, type JobRecord, type JobState, type JobSummary, type QueryRow, type RetryDisposition, type Tag,
  decodeIds, decodeRetry, decodeTags, dependencyModeFromCode, jobStateFromCode,
} from "@belay/contract";

// How rows become contract records, and the transition log every state move appends to. Tags
// and parent ids are stored as JSON text on the job row (tags as [key, value] pairs, in the
// order the job got them), and so is a retry policy. States, dependency modes and transition
// causes are stored as the contract's codes (`JOB_STATE_CODES`, `DEPENDENCY_MODE_CODES`,
// `TRANSITION_CAUSE_CODES`), interpolated into the SQL text where it names one.

/** The columns of a job summary, for `SELECT` lists over `S.jobs j`. */
export const SUMMARY_COLUMNS = `j.seq, j.id, j.job_name, j.queue, j.state, j.due_at, j.attempt, j.releases, j.lease_owner,
  j.lease_expires_at, j.cancel_requested_by, j.enqueued_at, j.terminal_at, j.terminal_cause, j.parent_ids,
  j.dependency_mode, j.tags, j.trace_context, j.schedule_id, j.workflow_id, j.retry`;

/** The row encodings of tags, parent ids and retry policies are the contract's. */
export { decodeIds, decodeRetry, decodeTags, encodeIds, encodeRetry, encodeTags } from "@belay/contract";

/**
 * An integer column as a number, whatever the driver parsed it into: a caller's connection
 * (`enqueueThrough`) may return bigint columns as text or `BigInt`. Throws beyond 2^53.
 */
export function toInt(value: unknown): number {
  const n = Number(value);
  if (!Number.isSafeInteger(n)) throw new RangeError(`${String(value)} is not an integer that fits a JavaScript number`);
  return n;
}

/** The state a stored code stands for. */
export function stateOf(code: unknown): JobState {
  return jobStateFromCode(code as number);
}

/** A job summary from a row selected with {@link SUMMARY_COLUMNS}. */
export function toSummary(row: QueryRow): JobSummary {
  return {
    id: row["id"] as string,
    seq: row["seq"] as number,
    jobName: row["job_name"] as string,
    queue: row["queue"] as string,
    state: stateOf(row["state"]),
    dueAt: row["due_at"] as number,
    attempt: row["attempt"] as number,
    releases: row["releases"] as number,
    leaseOwner: (row["lease_owner"] as string | null) ?? null,
    leaseExpiresAt: (row["lease_expires_at"] as number | null) ?? null,
    cancelRequested: row["cancel_requested_by"] != null,
    enqueuedAt: row["enqueued_at"] as number,
    terminalAt: (row["terminal_at"] as number | null) ?? null,
    terminalCause: (row["terminal_cause"] as string | null) ?? null,
    parentIds: decodeIds(row["parent_ids"]),
    dependencyMode: dependencyModeFromCode(row["dependency_mode"] as number),
    tags: decodeTags(row["tags"]),
    traceContext: (row["trace_context"] as string | null) ?? null,
    scheduleId: (row["schedule_id"] as string | null) ?? null,
    workflowId: (row["workflow_id"] as string | null) ?? null,
    retry: decodeRetry(row["retry"]),
  };
}

/** A job record: the summary plus `payload`. */
export function toRecord(row: QueryRow): JobRecord {
  return { ...toSummary(row), payload: row["payload"] as string };
}

/**
 * A claimed job from the positional JSON array a claim statement builds:
 * [seq, id, job_name, queue, payload, attempt, releases, due_at, enqueued_at, lease_expires_at,
 *  tags, parent_ids, dependency_mode, trace_context, schedule_id, workflow_id, retry (as JSON)].
 */
export function toClaimed(tuple: readonly unknown[]): ClaimedJob {
  return {
    seq: tuple[0] as number,
    id: tuple[1] as string,
    jobName: tuple[2] as string,
    queue: tuple[3] as string,
    payload: tuple[4] as string,
    attempt: tuple[5] as number,
    releases: tuple[6] as number,
    dueAt: tuple[7] as number,
    enqueuedAt: tuple[8] as number,
    leaseExpiresAt: tuple[9] as number,
    tags: decodeTags(tuple[10]),
    parentIds: decodeIds(tuple[11]),
    dependencyMode: dependencyModeFromCode(tuple[12] as number),
    traceContext: (tuple[13] as string | null) ?? null,
    scheduleId: (tuple[14] as string | null) ?? null,
    workflowId: (tuple[15] as string | null) ?? null,
    retry: decodeRetry(tuple[16]),
  };
}

/** What a transition records besides its state: why (an SQL expression for its cause code), by which worker, with what detail. */
export interface TransitionWrite {
  /** The cause code: `TRANSITION_CAUSE_CODES` interpolated, or an expression choosing among them. */
  readonly cause: string;
  /** The writing worker's id (an SQL expression); `NULL` for writes no worker made. */
  readonly worker?: string;
  /** The failure detail (an SQL expression). */
  readonly detail?: string;
}

/**
 * SQL appending the transition rows of `source` (a CTE with seq, transition_count, state and
 * attempt, and whatever `write`'s expressions read as `s.…`) and dropping each job's entries
 * beyond the cap. `$history` and `$cap` are parameter placeholders; `at` is an SQL expression for
 * the instant. The cause and the worker ride the same insert: no statement of their own.
 */
export function transitionCtes(S: string, source: string, at: string, history: string, cap: string, write: TransitionWrite): string {
  return `log_${source} AS (
    INSERT INTO ${S}.transitions (xid, job_seq, ordinal, at, state, attempt, failure_detail, cause, worker_id)
    SELECT pg_current_xact_id(), s.seq, s.transition_count, ${at}, s.state, s.attempt, ${write.detail ?? "NULL"}, ${write.cause},
           ${write.worker ?? "NULL"}
    FROM ${source} s WHERE ${history}
    ORDER BY s.seq
  ),
  trim_${source} AS (
    DELETE FROM ${S}.transitions t
    WHERE t.job_seq = ANY(ARRAY(SELECT s.seq FROM ${source} s WHERE s.transition_count > ${cap}))
      AND t.ordinal <= (SELECT s.transition_count - ${cap} FROM ${source} s WHERE s.seq = t.job_seq)
  )`;
}
