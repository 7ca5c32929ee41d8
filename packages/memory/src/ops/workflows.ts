import {
  type EnqueueWorkflowRequest, type EnqueueWorkflowResult, type JobState, type ListWorkflowsRequest, type WorkflowPage,
  type WorkflowRecord, checkWorkflow, clampToBound, decodeSeqCursor, encodeSeqCursor, planWorkflowMembers, workflowStatus,
} from "@belay/contract";
import type { MemoryState, WorkflowRow } from "../state.js";
import type { UndoLog } from "../undo-log.js";
import { writeEnqueue } from "./enqueue.js";

/**
 * See `JobStore.enqueueWorkflow`. The workflow is checked whole (`checkWorkflow`, a duplicate
 * id, then `planWorkflowMembers`) before anything is written; results in the caller's order.
 */
export async function enqueueWorkflow(
  state: MemoryState,
  undo: UndoLog,
  request: EnqueueWorkflowRequest,
): Promise<EnqueueWorkflowResult> {
  const { workflow, now } = request;
  const early = checkWorkflow(workflow, state.bounds);
  if (early !== null) return early;
  if (state.workflows.has(workflow.id)) return { status: "duplicate", workflowId: workflow.id };
  const plan = planWorkflowMembers(workflow, state.bounds, (id) => state.jobs.has(id));
  if (!plan.ok) return plan.result;
  const { members } = plan;
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

/** See `JobStore.getWorkflow`. */
export function getWorkflow(state: MemoryState, workflowId: string): WorkflowRecord | null {
  const row = state.workflows.get(workflowId);
  return row ? toWorkflowRecord(state, row) : null;
}

/** See `JobStore.listWorkflows`. */
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

function toWorkflowRecord(state: MemoryState, row: WorkflowRow): WorkflowRecord {
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
