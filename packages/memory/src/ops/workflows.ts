import {
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
  validateNewJob,
  workflowStatus,
} from "@belay/contract";
import type { MemoryState, WorkflowRow } from "../state.js";
import type { UndoLog } from "../undo-log.js";
import { writeEnqueue } from "./enqueue.js";

type WorkflowPlan =
  | { ok: true; members: NormalizedNewJob[] }
  | { ok: false; result: EnqueueWorkflowResult };

/**
 * Checks a workflow before anything is written: its own id and name, its size, each member's
 * fields, member ids (unique, not taken), containment (every parent a member) and the absence of
 * cycles. Returns the members in parent-before-child order.
 */
export function planWorkflow(state: MemoryState, workflow: NewWorkflow): WorkflowPlan {
  const reject = (jobId: string | null, rejection: Extract<EnqueueWorkflowResult, { status: "rejected" }>["rejection"]) =>
    ({ ok: false, result: { status: "rejected", jobId, rejection } }) as const;
  const idProblem = checkId(workflow.id, "workflow.id", state.bounds);
  if (idProblem) return reject(null, idProblem);
  if (typeof workflow.name !== "string" || workflow.name.length === 0) {
    return reject(null, { code: "BELAY_INVALID_INPUT", field: "workflow.name", message: "must be a non-empty string" });
  }
  if (workflow.name.length > state.bounds.jobNameLength) {
    return reject(null, boundRejection("BELAY_JOB_NAME_TOO_LONG", "workflow.name", state.bounds.jobNameLength, workflow.name.length));
  }
  if (!Array.isArray(workflow.jobs) || workflow.jobs.length === 0) {
    return reject(null, { code: "BELAY_INVALID_INPUT", field: "workflow.jobs", message: "must hold at least one job" });
  }
  if (workflow.jobs.length > state.bounds.workflowJobs) {
    return reject(null, boundRejection("BELAY_WORKFLOW_TOO_LARGE", "workflow.jobs", state.bounds.workflowJobs, workflow.jobs.length));
  }
  if (state.workflows.has(workflow.id)) return { ok: false, result: { status: "duplicate", workflowId: workflow.id } };

  const members = new Map<string, NormalizedNewJob>();
  for (const [i, raw] of workflow.jobs.entries()) {
    const checked = validateNewJob(raw, state.bounds);
    if (!checked.ok) return reject(typeof raw?.id === "string" ? raw.id : null, checked.rejection);
    const { job } = checked;
    if (members.has(job.id)) {
      return reject(job.id, { code: "BELAY_INVALID_INPUT", field: `workflow.jobs[${i}].id`, message: "repeats another member's id" });
    }
    if (state.jobs.has(job.id)) {
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

/** Writes a planned workflow; results in the caller's input order. */
export async function writeWorkflow(
  state: MemoryState,
  undo: UndoLog,
  workflow: NewWorkflow,
  members: readonly NormalizedNewJob[],
  now: Instant,
): Promise<EnqueueWorkflowResult> {
  const seq = state.sequences.workflow + 1;
  undo.patch(state.sequences, { workflow: seq });
  const row: WorkflowRow = { id: workflow.id, name: workflow.name, createdAt: now, seq, memberIds: members.map((m) => m.id) };
  undo.mapSet(state.workflows, row.id, row);
  undo.indexInsert(state.workflowsBySeq, { at: 0, seq, id: row.id });
  await undo.step("workflow row inserted");
  const results = await writeEnqueue(
    state,
    undo,
    members.map((job) => ({ kind: "create", job })),
    now,
    { scheduleId: null, workflowId: workflow.id },
  );
  const byId = new Map(results.map((r) => [r.id, r]));
  const jobs = workflow.jobs.map((j) => byId.get(j.id) as Extract<(typeof results)[number], { status: "created" }>);
  return { status: "created", jobs };
}

export function toWorkflowRecord(state: MemoryState, row: WorkflowRow): WorkflowRecord {
  const counts: Partial<Record<JobState, number>> = {};
  let jobCount = 0;
  for (const id of row.memberIds) {
    const member = state.jobs.get(id);
    if (member === undefined) continue;
    counts[member.state] = (counts[member.state] ?? 0) + 1;
    jobCount++;
  }
  return { id: row.id, name: row.name, createdAt: row.createdAt, status: workflowStatus(counts), jobCount, counts };
}

export function listWorkflows(state: MemoryState, request: ListWorkflowsRequest): WorkflowPage {
  const limit = clampToBound(request.limit ?? state.bounds.monitorPage, state.bounds.monitorPage);
  const after = request.after === undefined ? undefined : { at: 0, seq: decodeSeqCursor(request.after) };
  const workflows: WorkflowRecord[] = [];
  let lastSeq = 0;
  let more = false;
  for (const entry of state.workflowsBySeq.after(after)) {
    if (workflows.length === limit) {
      more = true;
      break;
    }
    workflows.push(toWorkflowRecord(state, state.workflows.get(entry.id)!));
    lastSeq = entry.seq;
  }
  return { workflows, nextCursor: more ? encodeSeqCursor(lastSeq) : null };
}
