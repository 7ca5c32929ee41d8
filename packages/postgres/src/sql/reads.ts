import {
  type DependencyEdges, type JobCount, type JobPage, type JobRecord, type ListJobsRequest, type TransitionRecord, clampToBound,
  decodeSeqCursor, encodeSeqCursor, isTerminalState, transitionCauseFromCode,
} from "@belay/contract";
import type { StoreContext } from "../context.js";
import { adHoc } from "../session.js";
import { filterSql } from "./filters.js";
import { SUMMARY_COLUMNS, decodeIds, feedRowOf, stateOf, toRecord, toSummary } from "./jobs.js";

// Monitoring reads: each runs on its own in autocommit, so it sees committed effects only and
// never waits for a writer (MVCC).

const GET_JOB = (S: string) => `SELECT ${SUMMARY_COLUMNS}, j.payload FROM ${S}.jobs j WHERE j.id = $1`;

/** See `JobStore.getJob`. */
export async function getJob(ctx: StoreContext, jobId: string): Promise<JobRecord | null> {
  const [row] = await ctx.executor.run("getJob", "autocommit", (s) => s.query(ctx.sql.get("getJob", GET_JOB), [jobId]));
  return row === undefined ? null : toRecord(row);
}

const GET_OUTPUT = (S: string) => `SELECT o.output FROM ${S}.jobs j JOIN ${S}.job_outputs o ON o.job_seq = j.seq WHERE j.id = $1`;

/** See `JobStore.getJobOutput`. */
export async function getJobOutput(ctx: StoreContext, jobId: string): Promise<string | null> {
  const [row] = await ctx.executor.run("getJobOutput", "autocommit", (s) => s.query(ctx.sql.get("getOutput", GET_OUTPUT), [jobId]));
  return (row?.["output"] as string | undefined) ?? null;
}

// A history entry holds the cause, the worker and the feed row's key (xid, position); the rest
// is read from that feed row (see `transitionAssignments`).
const GET_HISTORY = (S: string) => `
SELECT f.ordinals[k] AS ordinal, e.position, f.at, f.states[k] AS state, e.cause, e.worker_id, f.attempts[k] AS attempt, d.detail AS failure_detail
FROM ${S}.jobs j
CROSS JOIN LATERAL json_to_recordset(
  (SELECT json_agg(json_build_object('position', x->0, 'cause', x->1, 'xid', x->>2, 'worker_id', x->3)) FROM json_array_elements(j.history::json) AS x)
) AS e(cause int2, worker_id text, xid xid8, position bigint)
CROSS JOIN LATERAL (${feedRowOf(S, "e.xid", "e.position")}) AS r
JOIN ${S}.feed f ON f.xid = r.xid AND f.first_position = r.first_position
CROSS JOIN LATERAL array_position(f.positions, e.position) AS k
LEFT JOIN ${S}.failure_details d ON d.job_seq = j.seq AND d.ordinal = f.ordinals[k]
WHERE j.id = $1 AND k IS NOT NULL
ORDER BY f.ordinals[k]`;

/** See `JobStore.getJobHistory`. */
export async function getJobHistory(ctx: StoreContext, jobId: string): Promise<TransitionRecord[]> {
  const rows = await ctx.executor.run("getJobHistory", "autocommit", (s) => s.query(ctx.sql.get("getHistory", GET_HISTORY), [jobId]));
  return rows.map((row) => ({
    jobId,
    ordinal: row["ordinal"] as number,
    position: row["position"] as number,
    at: row["at"] as number,
    state: stateOf(row["state"]),
    cause: transitionCauseFromCode((row["cause"] as number | null) ?? null),
    workerId: (row["worker_id"] as string | null) ?? null,
    attempt: row["attempt"] as number,
    failureDetail: (row["failure_detail"] as string | null) ?? null,
  }));
}

/**
 * The statement of one listing page: keyset over seq in either direction, `limit + 1` rows (the
 * extra one tells whether a next page exists). Built per call from the filter (never prepared).
 */
export function listJobsQuery(S: string, request: ListJobsRequest, limit: number): { text: string; values: unknown[] } {
  const descending = request.order === "newestFirst";
  const values: unknown[] = [];
  const { from, conditions } = filterSql(S, request, values);
  if (request.after !== undefined) {
    values.push(decodeSeqCursor(request.after));
    conditions.push(`j.seq ${descending ? "<" : ">"} $${values.length}`);
  }
  values.push(limit + 1);
  const text = `SELECT ${SUMMARY_COLUMNS} FROM ${from}
    ${conditions.length > 0 ? `WHERE ${conditions.join(" AND ")}` : ""}
    ORDER BY j.seq ${descending ? "DESC" : "ASC"} LIMIT $${values.length}`;
  return { text, values };
}

/** See `JobStore.listJobs`: keyset pages over seq, in either direction. */
export async function listJobs(ctx: StoreContext, request: ListJobsRequest): Promise<JobPage> {
  const limit = clampToBound(request.limit ?? ctx.bounds.monitorPage, ctx.bounds.monitorPage);
  const { text, values } = listJobsQuery(ctx.sql.schema, request, limit);
  const rows = await ctx.executor.run("listJobs", "autocommit", (s) => s.query(adHoc(text), values));
  const jobs = rows.slice(0, limit).map(toSummary);
  const last = jobs.at(-1);
  return { jobs, nextCursor: rows.length > limit && last ? encodeSeqCursor(last.seq) : null };
}

const COUNT_JOBS = (S: string) => `SELECT queue, state, count(*) AS count FROM ${S}.jobs GROUP BY queue, state ORDER BY queue, state`;

/** See `JobStore.countJobs`. A full scan: a monitoring read, not a hot path. */
export async function countJobs(ctx: StoreContext): Promise<JobCount[]> {
  const rows = await ctx.executor.run("countJobs", "autocommit", (s) => s.query(ctx.sql.get("countJobs", COUNT_JOBS)));
  return rows.map((row) => ({ queue: row["queue"] as string, state: stateOf(row["state"]), count: row["count"] as number }));
}

const DEPENDENCIES = (S: string) => `
SELECT 'self' AS kind, j.id, j.state, j.parent_ids, j.seq FROM ${S}.jobs j WHERE j.id = $1
UNION ALL
SELECT 'parent', p.id, p.state, NULL, p.seq
FROM ${S}.jobs j JOIN ${S}.jobs p ON p.id IN (SELECT json_array_elements_text(j.parent_ids::json)) WHERE j.id = $1
UNION ALL
SELECT 'child', c.id, c.state, NULL, c.seq
FROM ${S}.jobs j JOIN ${S}.job_edges e ON e.parent_seq = j.seq JOIN ${S}.jobs c ON c.seq = e.child_seq WHERE j.id = $1
ORDER BY 1, 5`;

/** See `JobStore.getDependencies`. */
export async function getDependencies(ctx: StoreContext, jobId: string): Promise<DependencyEdges | null> {
  const rows = await ctx.executor.run("getDependencies", "autocommit", (s) => s.query(ctx.sql.get("dependencies", DEPENDENCIES), [jobId]));
  const self = rows.find((r) => r["kind"] === "self");
  if (self === undefined) return null;
  const parentStates = new Map(rows.filter((r) => r["kind"] === "parent").map((r) => [r["id"] as string, r["state"] as number]));
  const parents = decodeIds(self["parent_ids"]).flatMap((id) => {
    const state = parentStates.get(id);
    return state === undefined ? [] : [{ jobId: id, state: stateOf(state), gating: !isTerminalState(stateOf(state)) }];
  });
  const children = rows.filter((r) => r["kind"] === "child").map((r) => ({ jobId: r["id"] as string, state: stateOf(r["state"]) }));
  return { parents, children };
}
