import {
  type EnqueueWorkflowResult, type EnqueueWorkflowThroughRequest, type JobState, type ListWorkflowsRequest, type NewWorkflow,
  type NormalizedNewJob, type WorkflowPage, type WorkflowRecord, checkWorkflow, clampToBound, decodeSeqCursor, encodeSeqCursor,
  jobStateFromCode, planWorkflowMembers, workflowStatus,
} from "@belay/contract";
import { type Io, exec, row } from "../io.js";
import type { Tables } from "../tables.js";
import type { IoContext, ReadContext } from "../transaction.js";
import { initialStateOf } from "./children.js";
import { insertJob } from "./enqueue.js";
import { findJob } from "./jobs.js";

const WORKFLOW_EXISTS = (t: Tables) => `SELECT 1 FROM ${t.workflows} WHERE id = ?`;

const INSERT_WORKFLOW = (t: Tables) => `INSERT INTO ${t.workflows} (id, name, created_at) VALUES (?, ?, ?)`;

const GET_WORKFLOW = (t: Tables) => `SELECT seq, id, name, created_at FROM ${t.workflows} WHERE id = ?`;

const LIST_WORKFLOWS = (t: Tables) => `SELECT seq, id, name, created_at FROM ${t.workflows} WHERE seq > ? ORDER BY seq LIMIT ?`;

/** Member counts per state, from the partial index of workflow members. */
const MEMBER_COUNTS = (t: Tables) => `SELECT state, count(*) AS count FROM ${t.jobs} WHERE workflow_id = ? GROUP BY state`;

/**
 * Checks a workflow before anything is written (see `checkWorkflow`, `planWorkflowMembers`):
 * whether it exists, and which member ids are taken, are the only questions for the database.
 */
function* plan(
  ctx: IoContext,
  workflow: NewWorkflow,
): Io<{ ok: true; members: readonly NormalizedNewJob[] } | { ok: false; result: EnqueueWorkflowResult }> {
  const early = checkWorkflow(workflow, ctx.bounds);
  if (early !== null) return { ok: false, result: early };
  if ((yield* row(WORKFLOW_EXISTS, workflow.id)) !== undefined) {
    return { ok: false, result: { status: "duplicate", workflowId: workflow.id } };
  }
  const taken = new Set<string>();
  for (const raw of workflow.jobs) {
    if (typeof raw?.id === "string" && (yield* findJob(raw.id)) !== undefined) taken.add(raw.id);
  }
  return planWorkflowMembers(workflow, ctx.bounds, (id) => taken.has(id));
}

/** See `JobStore.enqueueWorkflow`: the workflow row and every member in one transaction; results in input order. */
export function* enqueueWorkflow(ctx: IoContext, request: EnqueueWorkflowThroughRequest): Io<EnqueueWorkflowResult> {
  const { workflow, now } = request;
  const planned = yield* plan(ctx, workflow);
  if (!planned.ok) return planned.result;
  yield* exec(INSERT_WORKFLOW, workflow.id, workflow.name, now);
  yield "workflow row inserted";
  const created = new Map<string, Extract<EnqueueWorkflowResult, { status: "created" }>["jobs"][number]>();
  for (const [i, job] of planned.members.entries()) {
    const initial = yield* initialStateOf(job);
    const seq = yield* insertJob(ctx, job, initial, now, { cause: "enqueued", scheduleId: null, workflowId: workflow.id });
    created.set(job.id, { id: job.id, status: "created", state: initial.state, seq });
    yield `job ${i} inserted`;
  }
  return { status: "created", jobs: workflow.jobs.map((job) => created.get(job.id)!) };
}

interface WorkflowRow {
  seq: number;
  id: string;
  name: string;
  created_at: number;
}

function toWorkflowRecord(ctx: ReadContext, row: WorkflowRow): WorkflowRecord {
  const counts: Partial<Record<JobState, number>> = {};
  let jobCount = 0;
  for (const { state, count } of ctx.q.get(MEMBER_COUNTS).all(row.id) as { state: number; count: number }[]) {
    counts[jobStateFromCode(state)] = count;
    jobCount += count;
  }
  return { id: row.id, name: row.name, createdAt: row.created_at, status: workflowStatus(counts), jobCount, counts };
}

/** See `JobStore.getWorkflow`; call inside one snapshot. */
export function getWorkflow(ctx: ReadContext, workflowId: string): WorkflowRecord | null {
  const row = ctx.q.get(GET_WORKFLOW).get(workflowId) as WorkflowRow | undefined;
  return row === undefined ? null : toWorkflowRecord(ctx, row);
}

/** See `JobStore.listWorkflows`: oldest first; call inside one snapshot. */
export function listWorkflows(ctx: ReadContext, request: ListWorkflowsRequest): WorkflowPage {
  const { monitorPage } = ctx.bounds;
  const limit = clampToBound(request.limit ?? monitorPage, monitorPage);
  const after = request.after === undefined ? 0 : decodeSeqCursor(request.after);
  const rows = ctx.q.get(LIST_WORKFLOWS).all(after, limit + 1) as WorkflowRow[];
  const workflows = rows.slice(0, limit).map((row) => toWorkflowRecord(ctx, row));
  const last = rows[limit - 1];
  return { workflows, nextCursor: rows.length > limit && last ? encodeSeqCursor(last.seq) : null };
}
