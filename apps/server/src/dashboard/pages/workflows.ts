import { JOB_STATES } from "@belay/contract";
import type { ServerContext } from "../../context.js";
import { type View, card, empty, time } from "../components.js";
import { STATE_CLASS, STATE_LABELS } from "../format.js";
import { html } from "../html.js";
import { href } from "../query.js";
import type { PageResult } from "./page-result.js";

const STATUS_TONE = { running: "info", succeeded: "ok", failed: "bad", cancelled: "" } as const;

/** Workflows, oldest first, with their derived status and members per state. */
export async function workflowsPage(ctx: ServerContext, view: View, url: URL): Promise<PageResult> {
  const after = url.searchParams.get("after") ?? undefined;
  const page = await ctx.store.listWorkflows({ limit: 50, ...(after === undefined ? {} : { after }) }).catch(() => null);
  let body;
  if (page === null) body = empty("This page cannot be read", "The paging cursor is not valid.");
  else if (page.workflows.length === 0) body = empty("No workflows", "Workflows are groups of jobs joined by parents, enqueued together.");
  else
    body = html`<table class="grid"><thead><tr><th>Workflow</th><th>Name</th><th>Status</th><th class="r">Jobs</th><th>Members by state</th><th>Created</th></tr></thead><tbody>${page.workflows.map(
      (w) => html`<tr><td><a class="mono" href="/workflows/${encodeURIComponent(w.id)}">${w.id}</a></td><td class="jn">${w.name}</td>
<td><span class="pill ${STATUS_TONE[w.status]}">${w.status}</span></td><td class="r num">${w.jobCount}</td>
<td><span class="tags">${JOB_STATES.filter((s) => (w.counts[s] ?? 0) > 0).map((s) => html`<span class="badge s-${STATE_CLASS[s]}">${STATE_LABELS[s]} ${w.counts[s]}</span>`)}</span></td>
<td class="nowrap">${time(w.createdAt, view.now)}</td></tr>`,
    )}</tbody></table>
${page.nextCursor ? html`<div class="pager"><span>oldest first</span><span class="btns"><a class="btn btn-sm" href="${href("/workflows", [["after", page.nextCursor]])}">Next »</a></span></div>` : ""}`;
  return { title: "Workflows", section: "workflows", content: card("Workflows", body, { flush: true, live: "workflows" }) };
}
