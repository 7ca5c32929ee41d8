import {
  type AuditPage,
  type AuditRecord,
  type CancelResult,
  type JobActionRequest,
  type ListAuditRequest,
  type QueueSettings,
  type RequeueResult,
  clampToBound,
  compareCodePoints,
  decodeSeqCursor,
  encodeSeqCursor,
  isTerminalState,
} from "@belay/contract";
import { moveJob, resolveChildren } from "../jobs.js";
import type { MemoryState, QueueRow } from "../state.js";
import type { UndoLog } from "../undo-log.js";

/** Appends one audit record (in the caller's transaction). */
export function appendAudit(state: MemoryState, undo: UndoLog, record: Omit<AuditRecord, "seq">): void {
  const seq = state.sequences.audit + 1;
  undo.patch(state.sequences, { audit: seq });
  undo.push(state.audit, { seq, ...record });
}

/** See `JobStore.cancelJob`. */
export async function cancelJob(state: MemoryState, undo: UndoLog, request: JobActionRequest): Promise<CancelResult> {
  const { jobId, actor, now } = request;
  const row = state.jobs.get(jobId);
  if (row === undefined) return { status: "notFound" };
  if (isTerminalState(row.state)) return { status: "notCancellable", state: row.state };
  let result: CancelResult;
  if (row.state === "leased") {
    undo.patch(row, { cancelRequested: true, cancelRequestedBy: actor });
    result = { status: "cancelRequested" };
  } else {
    moveJob(state, undo, row, "cancelled", { terminalCause: `cancelled by ${actor}` }, now);
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
  moveJob(state, undo, row, "scheduled", { dueAt: now, attempt: 0, releases: 0 }, now);
  await undo.step("job requeued");
  // The job is live again: children still waiting for their parents wait for it again, so its
  // next terminal state resolves their latch exactly once more (never twice for one gating).
  for (const childId of row.children) {
    const child = state.jobs.get(childId);
    if (child?.state === "awaitingParents") undo.patch(child, { parentsRemaining: child.parentsRemaining + 1 });
  }
  appendAudit(state, undo, { actor, action: "requeue", targetKind: "job", target: jobId, detail: null, at: now });
  return { status: "requeued" };
}

/** Applies a change to a queue's settings row (created on first use), audited. */
export async function changeQueue(
  state: MemoryState,
  undo: UndoLog,
  queue: string,
  changes: Partial<Pick<QueueRow, "paused" | "concurrencyLimit">>,
  audit: Pick<AuditRecord, "actor" | "action" | "detail" | "at">,
): Promise<void> {
  const row = state.queues.get(queue);
  if (row === undefined) undo.mapSet(state.queues, queue, { queue, paused: false, concurrencyLimit: null, ...changes });
  else undo.patch(row, changes);
  await undo.step("queue settings written");
  appendAudit(state, undo, { ...audit, targetKind: "queue", target: queue });
}

export function listQueueSettings(state: MemoryState): QueueSettings[] {
  return [...state.queues.values()]
    .map((row) => ({ queue: row.queue, paused: row.paused, concurrencyLimit: row.concurrencyLimit }))
    .sort((a, b) => compareCodePoints(a.queue, b.queue));
}

/** See `JobStore.listAuditRecords`. */
export function listAuditRecords(state: MemoryState, request: ListAuditRequest): AuditPage {
  const limit = clampToBound(request.limit ?? state.bounds.monitorPage, state.bounds.monitorPage);
  const newestFirst = request.order === "newestFirst";
  const after = request.after === undefined ? undefined : decodeSeqCursor(request.after);
  const ordered = newestFirst ? [...state.audit].reverse() : state.audit;
  const records: AuditRecord[] = [];
  let more = false;
  for (const record of ordered) {
    if (after !== undefined && (newestFirst ? record.seq >= after : record.seq <= after)) continue;
    if (request.target !== undefined && record.target !== request.target) continue;
    if (request.targetKind !== undefined && record.targetKind !== request.targetKind) continue;
    if (records.length === limit) {
      more = true;
      break;
    }
    records.push(record);
  }
  const last = records.at(-1);
  return { records, nextCursor: more && last ? encodeSeqCursor(last.seq) : null };
}
