import type { AuditRecord } from "@belay/contract";
import type { ServerContext } from "../../context.js";
import { type View, card, empty, time } from "../components.js";
import { formatInstant } from "../format.js";
import { html } from "../html.js";
import { href } from "../query.js";
import type { PageResult } from "./page-result.js";

const ACTIONS: Record<AuditRecord["action"], string> = {
  cancel: "Cancel",
  requeue: "Requeue",
  pauseQueue: "Pause queue",
  resumeQueue: "Resume queue",
  setConcurrencyLimit: "Set limit",
  triggerSchedule: "Trigger schedule",
  upsertSchedule: "Define schedule",
  enqueue: "Enqueue",
};

function target(record: AuditRecord) {
  const id = encodeURIComponent(record.target);
  if (record.targetKind === "job") return html`<a class="mono" href="/jobs/${id}">${record.target}</a>`;
  if (record.targetKind === "queue") return html`queue <a href="/jobs?queue=${id}">${record.target}</a>`;
  return html`schedule <a href="/jobs?scheduleId=${id}">${record.target}</a>`;
}

/** The audit log, newest first. */
export async function auditPage(ctx: ServerContext, view: View, url: URL): Promise<PageResult> {
  const after = url.searchParams.get("after") ?? undefined;
  const page = await ctx.store.listAuditRecords({ order: "newestFirst", limit: 50, ...(after === undefined ? {} : { after }) }).catch(() => null);
  let body;
  if (page === null) body = empty("This page cannot be read", "The paging cursor is not valid.");
  else if (page.records.length === 0) body = empty("No operator actions yet", "Cancels, requeues, pauses, limits and triggers are recorded here with who did them.");
  else
    body = html`<table class="grid"><thead><tr><th>When</th><th>Actor</th><th>Action</th><th>Target</th><th>Detail</th></tr></thead><tbody>${page.records.map(
      (r) => html`<tr><td class="nowrap" title="${formatInstant(r.at)}">${time(r.at, view.now)}</td><td><span class="avatar">${r.actor.slice(0, 1)}</span> ${r.actor}</td>
<td><span class="pill">${ACTIONS[r.action] ?? r.action}</span></td><td>${target(r)}</td><td class="muted mono">${r.detail ?? ""}</td></tr>`,
    )}</tbody></table>
<div class="pager"><span>newest first</span><span class="btns">${after ? html`<a class="btn btn-sm" href="/audit">« Newest</a>` : ""}${page.nextCursor ? html`<a class="btn btn-sm" href="${href("/audit", [["after", page.nextCursor]])}">Older »</a>` : ""}</span></div>`;
  return { title: "Audit log", section: "audit", content: card("Operator actions", body, { flush: true, ...(after ? {} : { live: "audit" }) }) };
}
