import {
  type DependencyEdges, type JobCount, type JobPage, type JobRecord, type ListJobsRequest, type TransitionRecord, encodeSeqCursor,
  isTerminalState, seqPageRequest, transitionCauseFromCode,
} from "@belay/contract";
import type { StoreContext } from "../context.js";
import { key, textOf, textOfKey, toInt, toIntOrNull } from "../keys.js";
import { COLUMN_BYTES } from "../sqlserver-store-config.js";
import { seqPages, statement } from "../statements.js";
import { FILTER_PARAMS, FILTER_SQL, filterValues } from "./filters.js";
import { SUMMARY_COLUMNS, decodeIds, stateOf, toRecord, toSummary } from "./jobs.js";

// Monitoring reads: each runs on its own in autocommit, so it sees committed effects only and,
// under READ_COMMITTED_SNAPSHOT, never waits for a writer.

const ID = `varbinary(${COLUMN_BYTES.id})`;
const fits = (id: string) => Buffer.byteLength(id, "utf8") <= COLUMN_BYTES.id;

const GET_JOB = statement("getJob", { id: ID }, (S) => `SELECT ${SUMMARY_COLUMNS}, j.payload FROM ${S}.jobs AS j WHERE j.id = @id`);

export async function getJob(ctx: StoreContext, jobId: string): Promise<JobRecord | null> {
  if (!fits(jobId)) return null;
  const [row] = await ctx.executor.read("getJob", (s) => s.rows(GET_JOB, { id: key(jobId) }));
  return row === undefined ? null : toRecord(row);
}

const GET_OUTPUT = statement(
  "getJobOutput",
  { id: ID },
  (S) => `SELECT o.output FROM ${S}.jobs AS j INNER JOIN ${S}.job_outputs AS o ON o.job_seq = j.seq WHERE j.id = @id`,
);

export async function getJobOutput(ctx: StoreContext, jobId: string): Promise<string | null> {
  if (!fits(jobId)) return null;
  const [row] = await ctx.executor.read("getJobOutput", (s) => s.rows(GET_OUTPUT, { id: key(jobId) }));
  return (row?.["output"] as string | undefined) ?? null;
}

const GET_HISTORY = statement(
  "getJobHistory",
  { id: ID },
  (S) => `SELECT t.ordinal, t.position, t.at, t.state, t.cause, t.worker_id, t.attempt, t.failure_detail
FROM ${S}.jobs AS j INNER JOIN ${S}.transitions AS t ON t.job_seq = j.seq
WHERE j.id = @id ORDER BY t.ordinal`,
);

export async function getJobHistory(ctx: StoreContext, jobId: string): Promise<TransitionRecord[]> {
  if (!fits(jobId)) return [];
  const rows = await ctx.executor.read("getJobHistory", (s) => s.rows(GET_HISTORY, { id: key(jobId) }));
  return rows.map((row) => ({
    jobId,
    ordinal: toInt(row["ordinal"]),
    position: toInt(row["position"]),
    at: toInt(row["at"]),
    state: stateOf(row["state"]),
    cause: transitionCauseFromCode(toIntOrNull(row["cause"])),
    workerId: textOf(row["worker_id"]),
    attempt: toInt(row["attempt"]),
    failureDetail: (row["failure_detail"] as string | null) ?? null,
  }));
}

const JOB_PAGES = seqPages(
  "listJobs",
  { ...FILTER_PARAMS, after: "bigint", limit: "int" },
  (S, after, order) => `SELECT TOP (@limit) ${SUMMARY_COLUMNS} FROM ${S}.jobs AS j
WHERE ${FILTER_SQL(S)}
  AND (@after IS NULL OR j.seq ${after} @after)
ORDER BY j.seq ${order}`,
);

/** See `JobStore.listJobs`: keyset pages over seq, in either direction. */
export async function listJobs(ctx: StoreContext, request: ListJobsRequest): Promise<JobPage> {
  const { limit, after } = seqPageRequest(request, ctx.bounds);
  const st = request.order === "newestFirst" ? JOB_PAGES.newestFirst : JOB_PAGES.oldestFirst;
  const filter = filterValues(request);
  if (filter === null) return { jobs: [], nextCursor: null };
  const rows = await ctx.executor.read("listJobs", (s) => s.rows(st, { ...filter, after, limit: limit + 1 }));
  const jobs = rows.slice(0, limit).map(toSummary);
  const last = jobs.at(-1);
  return { jobs, nextCursor: rows.length > limit && last ? encodeSeqCursor(last.seq) : null };
}

const COUNT_JOBS = statement("countJobs", {}, (S) => `SELECT j.queue, j.state, COUNT_BIG(*) AS n FROM ${S}.jobs AS j GROUP BY j.queue, j.state ORDER BY j.queue, j.state`);

/** See `JobStore.countJobs`. A full scan: a monitoring read, not a hot path. */
export async function countJobs(ctx: StoreContext): Promise<JobCount[]> {
  const rows = await ctx.executor.read("countJobs", (s) => s.rows(COUNT_JOBS));
  return rows.map((row) => ({ queue: textOfKey(row["queue"]), state: stateOf(row["state"]), count: toInt(row["n"]) }));
}

const DEPENDENCIES = statement(
  "getDependencies",
  { id: ID },
  (S) => `SELECT j.seq, j.state, j.parent_ids FROM ${S}.jobs AS j WHERE j.id = @id;
SELECT p.id, p.state FROM ${S}.jobs AS j
INNER JOIN ${S}.job_edges AS e ON e.child_seq = j.seq INNER JOIN ${S}.jobs AS p ON p.seq = e.parent_seq WHERE j.id = @id;
SELECT c.id, c.state FROM ${S}.jobs AS j
INNER JOIN ${S}.job_edges AS e ON e.parent_seq = j.seq INNER JOIN ${S}.jobs AS c ON c.seq = e.child_seq WHERE j.id = @id ORDER BY c.seq`,
);

/** See `JobStore.getDependencies`. */
export async function getDependencies(ctx: StoreContext, jobId: string): Promise<DependencyEdges | null> {
  if (!fits(jobId)) return null;
  const [selfRows, parentRows, childRows] = await ctx.executor.read("getDependencies", (s) => s.query(DEPENDENCIES, { id: key(jobId) }));
  const self = selfRows?.[0];
  if (self === undefined) return null;
  const parentStates = new Map((parentRows ?? []).map((r) => [textOfKey(r["id"]), toInt(r["state"])]));
  const parents = decodeIds(self["parent_ids"]).flatMap((id) => {
    const state = parentStates.get(id);
    return state === undefined ? [] : [{ jobId: id, state: stateOf(state), gating: !isTerminalState(stateOf(state)) }];
  });
  const children = (childRows ?? []).map((r) => ({ jobId: textOfKey(r["id"]), state: stateOf(r["state"]) }));
  return { parents, children };
}
