import {
  type Bounds,
  type EnqueueWorkflowResult,
  type Instant,
  type JobState,
  type ListWorkflowsRequest,
  type NewWorkflow,
  type NormalizedNewJob,
  type WorkflowPage,
  type WorkflowRecord,
  boundRejection,
  checkId,
  clampToBound,
  decodeSeqCursor,
  encodeSeqCursor,
  jobStateFromCode,
  validateNewJob,
  workflowStatus,
} from "@belay/contract";
import type { Statements } from "../connection.js";
import type { Tables } from "../tables.js";
import type { OpContext, Steps } from "../transaction.js";
import { findJob, initialStateOf, insertJob } from "./jobs.js";

const WORKFLOW_EXISTS = (t: Tables) => `SELECT 1 FROM ${t.workflows} WHERE id = ?`;

const INSERT_WORKFLOW = (t: Tables) => `INSERT INTO ${t.workflows} (id, name, created_at) VALUES (?, ?, ?)`;

const GET_WORKFLOW = (t: Tables) => `SELECT seq, id, name, created_at FROM ${t.workflows} WHERE id = ?`;

const LIST_WORKFLOWS = (t: Tables) => `SELECT seq, id, name, created_at FROM ${t.workflows} WHERE seq > ? ORDER BY seq LIMIT ?`;

/** Member counts per state, from the partial index of workflow members. */
const MEMBER_COUNTS = (t: Tables) => `SELECT state, count(*) AS count FROM ${t.jobs} WHERE workflow_id = ? GROUP BY state`;

type Rejected = Extract<EnqueueWorkflowResult, { status: "rejected" }>;

/**
 * Checks a workflow before anything is written: its own id and name, its size, whether it exists,
 * each member's fields, member ids (unique, not taken), containment (every parent a member) and
 * the absence of cycles. Returns the members in parent-before-child order.
 */
function plan(ctx: OpContext, workflow: NewWorkflow): { ok: true; members: NormalizedNewJob[] } | { ok: false; result: EnqueueWorkflowResult } {
  const reject = (jobId: string | null, rejection: Rejected["rejection"]) =>
    ({ ok: false, result: { status: "rejected", jobId, rejection } }) as const;
  const { bounds } = ctx;
  const idProblem = checkId(workflow.id, "workflow.id", bounds);
  if (idProblem) return reject(null, idProblem);
  if (typeof workflow.name !== "string" || workflow.name.length === 0) {
    return reject(null, { code: "BELAY_INVALID_INPUT", field: "workflow.name", message: "must be a non-empty string" });
  }
  if (workflow.name.length > bounds.jobNameLength) {
    return reject(null, boundRejection("BELAY_JOB_NAME_TOO_LONG", "workflow.name", bounds.jobNameLength, workflow.name.length));
  }
  if (!Array.isArray(workflow.jobs) || workflow.jobs.length === 0) {
    return reject(null, { code: "BELAY_INVALID_INPUT", field: "workflow.jobs", message: "must hold at least one job" });
  }
  if (workflow.jobs.length > bounds.workflowJobs) {
    return reject(null, boundRejection("BELAY_WORKFLOW_TOO_LARGE", "workflow.jobs", bounds.workflowJobs, workflow.jobs.length));
  }
  if (ctx.q.get(WORKFLOW_EXISTS).get(workflow.id) !== undefined) {
    return { ok: false, result: { status: "duplicate", workflowId: workflow.id } };
  }
  const members = new Map<string, NormalizedNewJob>();
  for (const [i, raw] of workflow.jobs.entries()) {
    const checked = validateNewJob(raw, bounds);
    if (!checked.ok) return reject(typeof raw?.id === "string" ? raw.id : null, checked.rejection);
    const { job } = checked;
    if (members.has(job.id)) {
      return reject(job.id, { code: "BELAY_INVALID_INPUT", field: `workflow.jobs[${i}].id`, message: "repeats another member's id" });
    }
    if (findJob(ctx, job.id) !== undefined) {
      return reject(job.id, { code: "BELAY_JOB_EXISTS", field: `workflow.jobs[${i}].id`, message: `job ${job.id} already exists` });
    }
    members.set(job.id, job);
  }
  for (const job of members.values()) {
    for (const parentId of job.parentIds) {
      if (!members.has(parentId)) {
        return reject(job.id, {
          code: "BELAY_WORKFLOW_CONTAINMENT",
          field: "parentIds",
          parentId,
          message: `parent ${parentId} is not a member of workflow ${workflow.id}`,
        });
      }
    }
  }
  // Parent-before-child order (Kahn's algorithm, input order among ready members).
  const ordered: NormalizedNewJob[] = [];
  const placed = new Set<string>();
  while (ordered.length < members.size) {
    const ready = [...members.values()].filter((j) => !placed.has(j.id) && j.parentIds.every((p) => placed.has(p)));
    if (ready.length === 0) {
      const stuck = [...members.values()].find((j) => !placed.has(j.id))!;
      return reject(stuck.id, { code: "BELAY_INVALID_INPUT", field: "parentIds", message: "the workflow's parent edges form a cycle" });
    }
    for (const job of ready) {
      ordered.push(job);
      placed.add(job.id);
    }
  }
  return { ok: true, members: ordered };
}

/** See `JobStore.enqueueWorkflow`: the workflow row and every member in one transaction; results in input order. */
export function* enqueueWorkflow(ctx: OpContext, workflow: NewWorkflow, now: Instant): Steps<EnqueueWorkflowResult> {
  const planned = plan(ctx, workflow);
  if (!planned.ok) return planned.result;
  ctx.q.get(INSERT_WORKFLOW).run(workflow.id, workflow.name, now);
  yield "workflow row inserted";
  const created = new Map<string, Extract<EnqueueWorkflowResult, { status: "created" }>["jobs"][number]>();
  for (const [i, job] of planned.members.entries()) {
    const initial = initialStateOf(ctx, job);
    const seq = insertJob(ctx, job, initial, now, { scheduleId: null, workflowId: workflow.id });
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

function toWorkflowRecord(q: Statements, row: WorkflowRow): WorkflowRecord {
  const counts: Partial<Record<JobState, number>> = {};
  let jobCount = 0;
  for (const { state, count } of q.get(MEMBER_COUNTS).all(row.id) as { state: number; count: number }[]) {
    counts[jobStateFromCode(state)] = count;
    jobCount += count;
  }
  return { id: row.id, name: row.name, createdAt: row.created_at, status: workflowStatus(counts), jobCount, counts };
}

/** See `JobStore.getWorkflow`; call inside one snapshot. */
export function getWorkflow(q: Statements, workflowId: string): WorkflowRecord | null {
  const row = q.get(GET_WORKFLOW).get(workflowId) as WorkflowRow | undefined;
  return row === undefined ? null : toWorkflowRecord(q, row);
}

/** See `JobStore.listWorkflows`: oldest first; call inside one snapshot. */
export function listWorkflows(q: Statements, bounds: Readonly<Bounds>, request: ListWorkflowsRequest): WorkflowPage {
  const limit = clampToBound(request.limit ?? bounds.monitorPage, bounds.monitorPage);
  const after = request.after === undefined ? 0 : decodeSeqCursor(request.after);
  const rows = q.get(LIST_WORKFLOWS).all(after, limit + 1) as WorkflowRow[];
  const workflows = rows.slice(0, limit).map((row) => toWorkflowRecord(q, row));
  const last = rows[limit - 1];
  return { workflows, nextCursor: rows.length > limit && last ? encodeSeqCursor(last.seq) : null };
}
