import {
  type EnqueuePlan, type EnqueueRequest, type EnqueueResult, type Instant, type JobState, type NormalizedNewJob, isTerminalState,
  planEnqueue, refusedEnqueue, enqueueAuditRecords,
} from "@belay/contract";
import { appendAudit } from "./audit.js";
import type { JobRow, MemoryState } from "../state.js";
import type { UndoLog } from "../undo-log.js";
import { initialStateOf } from "./children.js";
import { countJob, countLiveInstance, placementOf, recordTransition } from "./jobs.js";
import { countTag } from "./tags.js";

/** Where a job came from: a schedule's tick, a workflow, or neither. */
export interface JobOrigin {
  readonly scheduleId: string | null;
  readonly workflowId: string | null;
}

const NO_ORIGIN: JobOrigin = { scheduleId: null, workflowId: null };

/**
 * See `JobStore.enqueue`. Plans the call against the store's jobs (see `planEnqueue` in the
 * contract: each job's own fields, then whether its id exists, then whether its parents exist)
 * and writes it only when no job is rejected.
 */
export async function enqueue(state: MemoryState, undo: UndoLog, request: EnqueueRequest): Promise<EnqueueResult[]> {
  const planned = planEnqueue(request.jobs, state.bounds, (id) => state.jobs.has(id));
  if (planned.some((p) => p.kind === "rejected")) return refusedEnqueue(planned);
  const results = await writeEnqueue(state, undo, planned, request.now);
  for (const record of enqueueAuditRecords(request, results)) appendAudit(state, undo, record);
  return results;
}

/** Writes a planned call whose jobs all passed; returns the per-job results. */
export async function writeEnqueue(
  state: MemoryState,
  undo: UndoLog,
  planned: readonly EnqueuePlan[],
  now: Instant,
  origin: JobOrigin = NO_ORIGIN,
): Promise<EnqueueResult[]> {
  const results: EnqueueResult[] = [];
  for (const [i, plan] of planned.entries()) {
    if (plan.kind === "rejected") throw new Error("writeEnqueue called with a rejected plan");
    if (plan.kind === "duplicate") {
      results.push({ id: plan.id, status: "duplicate", state: state.jobs.get(plan.id)!.state });
      continue;
    }
    const initial = initialStateOf(state, plan.job);
    const row = insertJob(state, undo, plan.job, initial, now, origin, "enqueued");
    results.push({ id: row.id, status: "created", state: initial.state as "scheduled", seq: row.seq });
    await undo.step(`job ${i} inserted`);
  }
  return results;
}

/**
 * Inserts a new job in its initial state, with its edges, tags, counters and first transition:
 * caused by `createdBy`, or `parentFailed` when it is born cancelled.
 */
export function insertJob(
  state: MemoryState,
  undo: UndoLog,
  job: NormalizedNewJob,
  initial: { state: JobState; parentsRemaining: number; terminalCause: string | null },
  now: Instant,
  origin: JobOrigin,
  createdBy: "enqueued" | "minted" | "triggered",
): JobRow {
  const seq = state.sequences.job + 1;
  undo.patch(state.sequences, { job: seq });
  const terminal = isTerminalState(initial.state);
  const row: JobRow = {
    id: job.id,
    seq,
    jobName: job.jobName,
    queue: job.queue,
    payload: job.payload,
    state: initial.state,
    dueAt: job.dueAt,
    attempt: 0,
    releases: 0,
    leaseOwner: null,
    leaseExpiresAt: null,
    cancelRequested: false,
    cancelRequestedBy: null,
    enqueuedAt: now,
    terminalAt: terminal ? now : null,
    terminalCause: terminal ? initial.terminalCause : null,
    parentIds: job.parentIds,
    dependencyMode: job.dependencyMode,
    parentsRemaining: initial.parentsRemaining,
    children: [],
    tags: job.tags,
    traceContext: job.traceContext,
    scheduleId: origin.scheduleId,
    workflowId: origin.workflowId,
    retry: job.retry,
    output: null,
    transitions: [],
    transitionCount: 0,
  };
  undo.mapSet(state.jobs, row.id, row);
  undo.indexInsert(state.bySeq, { at: 0, seq, id: row.id });
  const placed = placementOf(state, row);
  if (placed) undo.indexInsert(placed.index, placed.entry);
  countJob(state, undo, row, 1);
  if (row.scheduleId !== null && !terminal) countLiveInstance(state, undo, row.scheduleId, 1);
  for (const tag of row.tags) countTag(state, undo, tag, 1);
  for (const parentId of row.parentIds) {
    const parent = state.jobs.get(parentId)!;
    undo.patch(parent, { children: [...parent.children, row.id] });
  }
  recordTransition(state, undo, row, now, { cause: row.state === "cancelled" ? "parentFailed" : createdBy });
  if (row.state === "scheduled" && row.dueAt <= now) state.dueQueues.add(row.queue);
  return row;
}
