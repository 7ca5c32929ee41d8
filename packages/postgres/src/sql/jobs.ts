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

/**
 * How one transition is written. A job's history is a column of its own row (`history`, JSON
 * text: an array of `[position, cause, xid, worker]`, **newest first**, at most
 * `transitionsPerJob` entries), prepended by the same UPDATE that moves the state, so a state
 * change writes no row of its own. What the entries leave out — the instant, the state, the
 * attempt and the ordinal — is in the `feed`: one row per statement and transaction, whose arrays
 * name each job that moved (positions, seqs, ordinals, states, attempts) and share one instant;
 * observers walk it, and a history is read by joining its entries to it by (xid, position). A
 * feed row lives until the last of its jobs is purged. Failure detail, rare and up to 8 KiB,
 * lives in `failure_details` by (job, ordinal), so that it is not rewritten with the row on every
 * later update. Positions come from the `transition_positions` sequence, one per transition.
 *
 * Newest first, with the position leading each entry, because the text functions count
 * characters: putting an entry in front and reading the newest position back touch only the
 * text's first characters (`substr(h, 2)` and `substr(h, 3, 24)`), where appending at the end
 * would walk the whole history on every update (`pg_mblen` and `text_reverse` were about 2 % of
 * all samples in a `perf` profile of the processing bench).
 */
export interface TransitionWrite {
  /** The updated row's alias in the statement, e.g. `j`: its old values are read through it. */
  readonly row: string;
  /** The cause code: `TRANSITION_CAUSE_CODES` interpolated, or an expression choosing among them (SQL over the old row). */
  readonly cause: string;
  /** The writing worker's id (an SQL expression); `NULL` for writes no worker made. */
  readonly worker?: string;
  /** Where the update moves a row without a transition (its history then stays as it was). */
  readonly when?: string;
  /** Placeholders of whether history is kept and of the cap. */
  readonly history: string;
  readonly cap: string;
}

/** The text of one history entry: a new position, the cause, the xid and the worker. */
export function historyEntrySql(S: string, t: Pick<TransitionWrite, "cause" | "worker">): string {
  return `format('[%s,%s,%s,%s]', nextval('${S}.transition_positions'), (${t.cause})::int, pg_current_xact_id(),
                 coalesce(to_json((${t.worker ?? "NULL"})::text)::text, 'null'))`;
}

/**
 * The assignments of an UPDATE that records a transition: the count, and the entry put in front
 * of the row's history (the oldest dropped beyond the cap, by `trim_history`, only when over it).
 */
export function transitionAssignments(S: string, t: TransitionWrite): string {
  const r = t.row;
  const moved = t.when ?? "true";
  const prepended = `'[' || ${historyEntrySql(S, t)} || coalesce(',' || substr(${r}.history, 2), ']')`;
  return `transition_count = ${r}.transition_count + CASE WHEN ${moved} THEN 1 ELSE 0 END,
    history = CASE WHEN NOT (${t.history}) OR NOT (${moved}) THEN ${r}.history
                   WHEN ${r}.transition_count + 1 > ${t.cap} THEN ${S}.trim_history(${prepended}, ${t.cap})
                   ELSE ${prepended} END`;
}

/** The position of a history's newest entry: the number that opens it. */
export const NEWEST_POSITION = (history: string) => `split_part(substr(${history}, 3, 24), ',', 1)::bigint`;

/**
 * The key of the feed row that holds the entry at `position` of transaction `xid` (SQL
 * expressions): one session's positions rise across its statements, so it is the row of that
 * transaction with the largest first position up to it — one probe of the key, however many
 * statements the transaction made.
 */
export function feedRowOf(S: string, xid: string, position: string): string {
  return `SELECT x.xid, x.first_position FROM ${S}.feed x WHERE x.xid = ${xid} AND x.first_position <= ${position}
    ORDER BY x.first_position DESC LIMIT 1`;
}

/**
 * The CTEs that finish the transitions recorded by `transitionAssignments`: the statement's feed
 * row (from `source`, a CTE of the moved rows with seq, transition_count, state, attempt and
 * history), the failure details (`detail`, an SQL expression over `s.…`), and each job's details
 * beyond the cap dropped. `$history` and `$cap` are placeholders; `at` is the instant.
 */
export function feedCtes(S: string, source: string, at: string, history: string, cap: string, detail?: string): string {
  const details = detail === undefined ? "" : `,
  detail_${source} AS (
    INSERT INTO ${S}.failure_details (job_seq, ordinal, detail)
    SELECT s.seq, s.transition_count, d.detail FROM ${source} s CROSS JOIN LATERAL (SELECT ${detail} AS detail) d
    WHERE ${history} AND d.detail IS NOT NULL
  ),
  trim_${source} AS (
    DELETE FROM ${S}.failure_details t
    WHERE t.job_seq = ANY(ARRAY(SELECT s.seq FROM ${source} s WHERE s.transition_count > ${cap}))
      AND t.ordinal <= (SELECT s.transition_count - ${cap} FROM ${source} s WHERE s.seq = t.job_seq)
  )`;
  return `moved_${source} AS (
    SELECT s.seq, s.transition_count, s.state, s.attempt, ${NEWEST_POSITION("s.history")} AS position FROM ${source} s WHERE ${history}
  ),
  feed_${source} AS (
    INSERT INTO ${S}.feed (xid, first_position, at, positions, job_seqs, ordinals, states, attempts)
    SELECT pg_current_xact_id(), min(m.position), (${at})::bigint, array_agg(m.position ORDER BY m.position), array_agg(m.seq ORDER BY m.position),
           array_agg(m.transition_count ORDER BY m.position), array_agg(m.state ORDER BY m.position), array_agg(m.attempt ORDER BY m.position)
    FROM moved_${source} m HAVING count(*) > 0
  )${details}`;
}
