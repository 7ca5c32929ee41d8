import {
  type AuditAction, type AuditPage, type AuditRecord, type Instant, type ListAuditRequest, clampToBound, decodeSeqCursor,
  encodeSeqCursor,
} from "@belay/contract";
import { type Io, exec } from "../io.js";
import type { Tables } from "../tables.js";
import type { OpContext, ReadContext } from "../transaction.js";

/** Stored codes of audit actions and target kinds. Stable: never renumber. */
// Stored as the index in this list: new actions are appended, never inserted.
const ACTIONS: readonly AuditAction[] = ["cancel", "requeue", "triggerSchedule", "pauseQueue", "resumeQueue", "setConcurrencyLimit", "upsertSchedule", "enqueue"];
const TARGET_KINDS: readonly AuditRecord["targetKind"][] = ["job", "queue", "schedule"];

const APPEND = (t: Tables) => `INSERT INTO ${t.audit} (at, actor, action, target_kind, target, detail) VALUES (?, ?, ?, ?, ?, ?)`;

const columns = (record: Omit<AuditRecord, "seq">) =>
  [record.at, record.actor, ACTIONS.indexOf(record.action), TARGET_KINDS.indexOf(record.targetKind), record.target, record.detail] as const;

/** Appends one audit record, in the caller's transaction (so it commits with the action's effect). */
export function appendAudit(ctx: OpContext, record: Omit<AuditRecord, "seq">): void {
  ctx.q.get(APPEND).run(...columns(record));
}

/** {@link appendAudit} as `Io`, for the statements that also run inside a caller's transaction (enqueue). */
export function* auditIo(record: Omit<AuditRecord, "seq">): Io<void> {
  yield* exec(APPEND, ...columns(record));
}

interface AuditRow {
  seq: number;
  at: Instant;
  actor: string;
  action: number;
  target_kind: number;
  target: string;
  detail: string | null;
}

/** See `JobStore.listAuditRecords`: keyset paging over `seq` in either order, filtered by target and kind. */
export function listAuditRecords(ctx: ReadContext, request: ListAuditRequest): AuditPage {
  const { monitorPage } = ctx.bounds;
  const limit = clampToBound(request.limit ?? monitorPage, monitorPage);
  const newestFirst = request.order === "newestFirst";
  const after = request.after === undefined ? undefined : decodeSeqCursor(request.after);
  const where: string[] = [];
  const params: unknown[] = [];
  if (request.target !== undefined) {
    where.push("target = ?");
    params.push(request.target);
  }
  if (request.targetKind !== undefined) {
    where.push("target_kind = ?");
    params.push(TARGET_KINDS.indexOf(request.targetKind));
  }
  if (after !== undefined) {
    where.push(newestFirst ? "seq < ?" : "seq > ?");
    params.push(after);
  }
  const shape = `audit:${where.join(" AND ")}:${newestFirst}`;
  const rows = ctx.q
    .shaped(
      shape,
      (t) => `SELECT seq, at, actor, action, target_kind, target, detail FROM ${t.audit}
        ${where.length > 0 ? `WHERE ${where.join(" AND ")}` : ""} ORDER BY seq ${newestFirst ? "DESC" : "ASC"} LIMIT ?`,
    )
    .all(...params, limit + 1) as AuditRow[];
  const more = rows.length > limit;
  const records: AuditRecord[] = rows.slice(0, limit).map((row) => ({
    seq: row.seq,
    at: row.at,
    actor: row.actor,
    action: ACTIONS[row.action]!,
    targetKind: TARGET_KINDS[row.target_kind]!,
    target: row.target,
    detail: row.detail,
  }));
  const last = records.at(-1);
  return { records, nextCursor: more && last ? encodeSeqCursor(last.seq) : null };
}
