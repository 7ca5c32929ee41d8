import { type AuditAction, type AuditPage, type AuditRecord, type ListAuditRequest, clampToBound, decodeSeqCursor, encodeSeqCursor } from "@belay/contract";
import type { StoreContext } from "../context.js";
import { type Session, adHoc } from "../session.js";

// The audit trail of operator actions. Each action appends its record inside its own
// transaction, so the effect and the record commit together.

const APPEND_AUDIT = (S: string) =>
  `INSERT INTO ${S}.audit (at, actor, action, target_kind, target, detail) VALUES ($1, $2, $3, $4, $5, $6)`;

/** Appends one audit record inside the operation's transaction. */
export async function appendAudit(session: Session, ctx: StoreContext, record: Omit<AuditRecord, "seq">): Promise<void> {
  await session.query(ctx.sql.get("appendAudit", APPEND_AUDIT), [
    record.at,
    record.actor,
    record.action,
    record.targetKind,
    record.target,
    record.detail,
  ]);
}

/** See `JobStore.listAuditRecords`. */
export async function listAuditRecords(ctx: StoreContext, request: ListAuditRequest): Promise<AuditPage> {
  const limit = clampToBound(request.limit ?? ctx.bounds.monitorPage, ctx.bounds.monitorPage);
  const newestFirst = request.order === "newestFirst";
  const values: unknown[] = [];
  const where: string[] = [];
  if (request.after !== undefined) {
    values.push(decodeSeqCursor(request.after));
    where.push(newestFirst ? `seq < $${values.length}` : `seq > $${values.length}`);
  }
  if (request.target !== undefined) {
    values.push(request.target);
    where.push(`target = $${values.length}`);
  }
  if (request.targetKind !== undefined) {
    values.push(request.targetKind);
    where.push(`target_kind = $${values.length}`);
  }
  values.push(limit + 1);
  const text = `SELECT seq, at, actor, action, target_kind, target, detail FROM ${ctx.sql.schema}.audit
    ${where.length > 0 ? `WHERE ${where.join(" AND ")}` : ""}
    ORDER BY seq ${newestFirst ? "DESC" : "ASC"} LIMIT $${values.length}`;
  const rows = await ctx.executor.run("listAuditRecords", "autocommit", (s) => s.query(adHoc(text), values));
  const records: AuditRecord[] = rows.slice(0, limit).map((row) => ({
    seq: row["seq"] as number,
    at: row["at"] as number,
    actor: row["actor"] as string,
    action: row["action"] as AuditAction,
    targetKind: row["target_kind"] as AuditRecord["targetKind"],
    target: row["target"] as string,
    detail: (row["detail"] as string | null) ?? null,
  }));
  const last = records.at(-1);
  return { records, nextCursor: rows.length > limit && last ? encodeSeqCursor(last.seq) : null };
}
