import {
  type AuditAction, type CancelResult, type JobActionRequest, type QueueActionRequest, type QueueActionResult,
  type QueueSettings, type RequeueResult, type SetConcurrencyLimitRequest, compareCodePoints, isTerminalState, terminalCauseText,
} from "@belay/contract";
import type { MemoryState, QueueRow } from "../state.js";
import type { UndoLog } from "../undo-log.js";
import { appendAudit } from "./audit.js";
import { regateChildren, resolveChildren } from "./children.js";
import { moveJob } from "./jobs.js";

/** See `JobStore.cancelJob`. */
export async function cancelJob(state: MemoryState, undo: UndoLog, request: JobActionRequest): Promise<CancelResult> {
  const { jobId, actor, now } = request;
  const row = state.jobs.get(jobId);
  if (row === undefined) return { status: "notFound" };
  if (isTerminalState(row.state)) return { status: "notCancellable", state: row.state };
  let result: CancelResult;
  if (row.state === "leased") {
    // Cooperative: the handler hears of it on its next heartbeat; outcomes and expiry honour it.
    undo.patch(row, { cancelRequested: true, cancelRequestedBy: actor });
    result = { status: "cancelRequested" };
  } else {
    const terminalCause = terminalCauseText("cancelledBy", { actor });
    moveJob(state, undo, row, "cancelled", { terminalCause }, now, { cause: "operatorCancelled" });
    await undo.step("job cancelled");
    resolveChildren(state, undo, [row], now);
    result = { status: "cancelled" };
  }
  await undo.step("effect applied");
  appendAudit(state, undo, { actor, action: "cancel", targetKind: "job", target: jobId, detail: result.status, at: now });
  return result;
}

/** See `JobStore.requeueJob`. */
export async function requeueJob(state: MemoryState, undo: UndoLog, request: JobActionRequest): Promise<RequeueResult> {
  const { jobId, actor, now } = request;
  const row = state.jobs.get(jobId);
  if (row === undefined) return { status: "notFound" };
  if (row.state !== "deadLettered" && row.state !== "quarantined") return { status: "notRequeueable", state: row.state };
  moveJob(state, undo, row, "scheduled", { dueAt: now, attempt: 0, releases: 0 }, now, { cause: "requeued" });
  await undo.step("job requeued");
  regateChildren(state, undo, row);
  appendAudit(state, undo, { actor, action: "requeue", targetKind: "job", target: jobId, detail: null, at: now });
  return { status: "requeued" };
}

/** See `JobStore.pauseQueue`. */
export function pauseQueue(state: MemoryState, undo: UndoLog, request: QueueActionRequest): Promise<QueueActionResult> {
  return changeQueue(state, undo, request, "pauseQueue", { paused: true }, "paused");
}

/** See `JobStore.resumeQueue`. */
export function resumeQueue(state: MemoryState, undo: UndoLog, request: QueueActionRequest): Promise<QueueActionResult> {
  return changeQueue(state, undo, request, "resumeQueue", { paused: false }, "resumed");
}

/** See `JobStore.setConcurrencyLimit`. */
export function setConcurrencyLimit(
  state: MemoryState,
  undo: UndoLog,
  request: SetConcurrencyLimitRequest,
): Promise<QueueActionResult> {
  const detail = request.limit === null ? "limit=none" : `limit=${request.limit}`;
  return changeQueue(state, undo, request, "setConcurrencyLimit", { concurrencyLimit: request.limit }, detail);
}

/** See `JobStore.listQueueSettings`. */
export function listQueueSettings(state: MemoryState): QueueSettings[] {
  return [...state.queues.values()]
    .map((row) => ({ queue: row.queue, paused: row.paused, concurrencyLimit: row.concurrencyLimit }))
    .sort((a, b) => compareCodePoints(a.queue, b.queue));
}

/** Applies a change to a queue's settings row (created on first use), audited. */
async function changeQueue(
  state: MemoryState,
  undo: UndoLog,
  request: QueueActionRequest,
  action: AuditAction,
  changes: Partial<Pick<QueueRow, "paused" | "concurrencyLimit">>,
  detail: string,
): Promise<QueueActionResult> {
  const { queue, actor, now } = request;
  const row = state.queues.get(queue);
  if (row === undefined) undo.mapSet(state.queues, queue, { queue, paused: false, concurrencyLimit: null, ...changes });
  else undo.patch(row, changes);
  await undo.step("queue settings written");
  appendAudit(state, undo, { actor, action, detail, at: now, targetKind: "queue", target: queue });
  return { status: "applied" };
}
