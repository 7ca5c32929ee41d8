import { type AuditAction, type AuditPage, type AuditRecord, type ListAuditRequest, encodeSeqCursor, seqPageRequest } from "@belay/contract";
import type { StoreContext } from "../context.js";
import { key, keyOrNull, textOfKey, toInt } from "../keys.js";
import type { Session } from "../session.js";
import { COLUMN_BYTES } from "../sqlserver-store-config.js";
import { seqPages, statement } from "../statements.js";

// The audit trail of operator actions. Each action appends its record inside its own
// transaction, so the effect and the record commit together.

export const APPEND_AUDIT = statement(
  "appendAudit",
  { at: "bigint", actor: "nvarchar(max)", action: "nvarchar(32)", kind: "nvarchar(16)", target: `varbinary(${COLUMN_BYTES.id})`, detail: "nvarchar(max)" },
  (S) => `INSERT INTO ${S}.audit (at, actor, action, target_kind, target, detail) VALUES (@at, @actor, @action, @kind, @target, @detail)`,
);

/** Appends one audit record inside the operation's transaction. */
export async function appendAudit(session: Session, record: Omit<AuditRecord, "seq">): Promise<void> {
  await session.query(APPEND_AUDIT, { at: record.at, actor: record.actor, action: record.action, kind: record.targetKind, target: key(record.target), detail: record.detail });
}

const AUDIT_PAGES = seqPages(
  "listAudit",
  { after: "bigint", target: `varbinary(${COLUMN_BYTES.id})`, kind: "nvarchar(16)", limit: "int" },
  (S, after, order) => `SELECT TOP (@limit) a.seq, a.at, a.actor, a.action, a.target_kind, a.target, a.detail FROM ${S}.audit AS a
WHERE (@after IS NULL OR a.seq ${after} @after) AND (@target IS NULL OR a.target = @target) AND (@kind IS NULL OR a.target_kind = @kind)
ORDER BY a.seq ${order}`,
);

/** See `JobStore.listAuditRecords`. */
export async function listAuditRecords(ctx: StoreContext, request: ListAuditRequest): Promise<AuditPage> {
  const { limit, after } = seqPageRequest(request, ctx.bounds);
  // A target too long to be an id names nothing.
  if (request.target !== undefined && Buffer.byteLength(request.target, "utf8") > COLUMN_BYTES.id) return { records: [], nextCursor: null };
  const rows = await ctx.executor.read("listAuditRecords", (s) =>
    s.rows(request.order === "newestFirst" ? AUDIT_PAGES.newestFirst : AUDIT_PAGES.oldestFirst, { after, target: keyOrNull(request.target), kind: request.targetKind ?? null, limit: limit + 1 }),
  );
  const records: AuditRecord[] = rows.slice(0, limit).map((row) => ({
    seq: toInt(row["seq"]),
    at: toInt(row["at"]),
    actor: row["actor"] as string,
    action: row["action"] as AuditAction,
    targetKind: row["target_kind"] as AuditRecord["targetKind"],
    target: textOfKey(row["target"]),
    detail: (row["detail"] as string | null) ?? null,
  }));
  const last = records.at(-1);
  return { records, nextCursor: rows.length > limit && last ? encodeSeqCursor(last.seq) : null };
}
