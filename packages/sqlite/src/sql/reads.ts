import {
  type DependencyEdges, type JobCount, type JobPage, type JobRecord, type ListJobsRequest, type TransitionRecord, clampToBound,
  decodeSeqCursor, encodeSeqCursor, jobStateFromCode, transitionCauseFromCode,
} from "@belay/contract";
import { S, type Tables } from "../tables.js";
import type { ReadContext } from "../transaction.js";
import { filterSql } from "./filters.js";
import { type SummaryRow, summaryColumns, toSummary } from "./jobs.js";

const GET_JOB = (t: Tables) => `SELECT ${summaryColumns(t)},
  (SELECT p.payload FROM ${t.payloads} p WHERE p.job_seq = j.seq) AS payload
  FROM ${t.jobs} j WHERE j.id = ?`;

const GET_OUTPUT = (t: Tables) => `SELECT o.output FROM ${t.outputs} o JOIN ${t.jobs} j ON j.seq = o.job_seq WHERE j.id = ?`;

const GET_HISTORY = (t: Tables) => `SELECT tr.position, tr.ordinal, tr.at, tr.state, tr.attempt, tr.failure_detail,
  tr.cause, tr.worker_id FROM ${t.transitions} tr JOIN ${t.jobs} j ON j.seq = tr.job_seq WHERE j.id = ? ORDER BY tr.ordinal`;

const COUNT_JOBS = (t: Tables) => `SELECT queue, state, count(*) AS count FROM ${t.jobs} GROUP BY queue, state ORDER BY queue, state`;

const SEQ_OF = (t: Tables) => `SELECT seq FROM ${t.jobs} WHERE id = ?`;

/** Parents by id (a purged parent no longer shows), in the order the child named them. */
const PARENTS = (t: Tables) => `SELECT e.parent_id AS job_id, p.state FROM ${t.edges} e JOIN ${t.jobs} p ON p.id = e.parent_id
  WHERE e.child_seq = ? ORDER BY e.ordinal`;

/** Children that named this very job (not an earlier job with the same id), in enqueue order. */
const CHILDREN = (t: Tables) => `SELECT c.id AS job_id, c.state FROM ${t.edges} e JOIN ${t.jobs} c ON c.seq = e.child_seq
  WHERE e.parent_seq = ? ORDER BY c.seq`;

/** See `JobStore.getJob`: one statement, so one snapshot. */
export function getJob(ctx: ReadContext, jobId: string): JobRecord | null {
  const row = ctx.q.get(GET_JOB).get(jobId) as (SummaryRow & { payload: string }) | undefined;
  return row === undefined ? null : { ...toSummary(row), payload: row.payload };
}

/** See `JobStore.getJobOutput`. */
export function getJobOutput(ctx: ReadContext, jobId: string): string | null {
  return (ctx.q.get(GET_OUTPUT).get(jobId) as { output: string } | undefined)?.output ?? null;
}

/** See `JobStore.getJobHistory`: oldest first. */
export function getJobHistory(ctx: ReadContext, jobId: string): TransitionRecord[] {
  const rows = ctx.q.get(GET_HISTORY).all(jobId) as {
    position: number;
    ordinal: number;
    at: number;
    state: number;
    attempt: number;
    failure_detail: string | null;
    cause: number | null;
    worker_id: string | null;
  }[];
  return rows.map((row) => ({
    jobId,
    ordinal: row.ordinal,
    position: row.position,
    at: row.at,
    state: jobStateFromCode(row.state),
    cause: transitionCauseFromCode(row.cause),
    workerId: row.worker_id,
    attempt: row.attempt,
    failureDetail: row.failure_detail,
  }));
}

/** See `JobStore.listJobs`: keyset paging over `seq` in either direction; the request is already validated. */
export function listJobs(ctx: ReadContext, request: ListJobsRequest): JobPage {
  const { monitorPage } = ctx.bounds;
  const limit = clampToBound(request.limit ?? monitorPage, monitorPage);
  const descending = request.order === "newestFirst";
  const after = request.after === undefined ? undefined : decodeSeqCursor(request.after);
  const filter = filterSql(ctx.q.t.tags, request);
  const conditions = [...filter.conditions];
  if (after !== undefined) conditions.push(descending ? "j.seq < ?" : "j.seq > ?");
  const rows = ctx.q
    .shaped(
      `list:${filter.shape}:${after !== undefined}:${descending}`,
      (t) => `SELECT ${summaryColumns(t)} FROM ${t.jobs} j
        ${conditions.length > 0 ? `WHERE ${conditions.join(" AND ")}` : ""}
        ORDER BY j.seq ${descending ? "DESC" : "ASC"} LIMIT ?`,
    )
    .all(...filter.params, ...(after === undefined ? [] : [after]), limit + 1) as SummaryRow[];
  const jobs = rows.slice(0, limit).map(toSummary);
  const last = jobs.at(-1);
  return { jobs, nextCursor: rows.length > limit && last ? encodeSeqCursor(last.seq) : null };
}

/** See `JobStore.countJobs`. */
export function countJobs(ctx: ReadContext): JobCount[] {
  return (ctx.q.get(COUNT_JOBS).all() as { queue: string; state: number; count: number }[]).map((row) => ({
    queue: row.queue,
    state: jobStateFromCode(row.state),
    count: row.count,
  }));
}

/** See `JobStore.getDependencies`; call inside one snapshot. */
export function getDependencies(ctx: ReadContext, jobId: string): DependencyEdges | null {
  const job = ctx.q.get(SEQ_OF).get(jobId) as { seq: number } | undefined;
  if (job === undefined) return null;
  const parents = (ctx.q.get(PARENTS).all(job.seq) as { job_id: string; state: number }[]).map((row) => ({
    jobId: row.job_id,
    state: jobStateFromCode(row.state),
    gating: row.state < S.succeeded,
  }));
  const children = (ctx.q.get(CHILDREN).all(job.seq) as { job_id: string; state: number }[]).map((row) => ({
    jobId: row.job_id,
    state: jobStateFromCode(row.state),
  }));
  return { parents, children };
}
