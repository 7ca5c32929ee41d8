import { type AuditPage, type AuditRecord, type ListAuditRequest, clampToBound, decodeSeqCursor, encodeSeqCursor } from "@belay/contract";
import type { MemoryState } from "../state.js";
import type { UndoLog } from "../undo-log.js";

/** Appends one audit record, in the caller's write, so the effect and its record commit together. */
export function appendAudit(state: MemoryState, undo: UndoLog, record: Omit<AuditRecord, "seq">): void {
  const seq = state.sequences.audit + 1;
  undo.patch(state.sequences, { audit: seq });
  undo.push(state.audit, { seq, ...record });
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
