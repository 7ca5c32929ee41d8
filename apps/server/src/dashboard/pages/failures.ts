import type { ServerContext } from "../../context.js";
import { totalsOf } from "../../monitor/queues.js";
import { type View, actionForm, card, empty, jobLink, tagList, time } from "../components.js";
import { formatCount } from "../format.js";
import { html } from "../html.js";
import { href } from "../query.js";
import type { PageResult } from "./page-result.js";

/** Dead-lettered and quarantined jobs in two tabs, with requeue. */
export async function failuresPage(ctx: ServerContext, view: View, url: URL): Promise<PageResult> {
  const { store } = ctx;
  const tab = url.searchParams.get("tab") === "quarantined" ? "quarantined" : "deadLettered";
  const after = url.searchParams.get("after") ?? undefined;
  const [counts, page] = await Promise.all([
    store.countJobs(),
    store.listJobs({ states: [tab], order: "newestFirst", limit: 50, ...(after === undefined ? {} : { after }) }).catch(() => null),
  ]);
  const totals = totalsOf(counts);
  const canRequeue = view.can("requeue");
  const tabs = html`<nav class="tabs">
<a href="/failures" class="${tab === "deadLettered" ? "on" : ""}">Dead-lettered <span class="badge s-dead">${formatCount(totals.deadLettered)}</span></a>
<a href="/failures?tab=quarantined" class="${tab === "quarantined" ? "on" : ""}">Quarantined <span class="badge s-quarantined">${formatCount(totals.quarantined)}</span></a></nav>`;
  const explain =
    tab === "deadLettered"
      ? "Ran and kept failing until the attempt ceiling. Fix the cause, then requeue: attempts reset to 0."
      : "Could not be routed: unknown job name or a payload its schema rejects. Deploy a worker that knows them, then requeue.";
  let body;
  if (page === null) body = empty("This page cannot be read", "The paging cursor is not valid; start from the first page.");
  else if (page.jobs.length === 0) body = empty(tab === "deadLettered" ? "No dead-lettered jobs" : "No quarantined jobs", "Nothing needs attention here.");
  else
    body = html`<table class="grid"><thead><tr><th>Job</th><th>Job name</th><th>Queue</th><th class="r">Attempts</th><th>Ended</th><th>Cause</th><th>Tags</th>${canRequeue ? html`<th></th>` : ""}</tr></thead><tbody>${page.jobs.map(
      (j) => html`<tr><td>${jobLink(j.id)}</td><td class="jn">${j.jobName}</td><td>${j.queue}</td><td class="r num">${j.attempt}</td><td class="nowrap">${time(j.terminalAt, view.now)}</td>
<td class="muted">${j.terminalCause ?? ""}</td><td>${tagList(j.tags, 3)}</td>
${canRequeue ? html`<td class="acts">${actionForm(view, `/actions/jobs/${encodeURIComponent(j.id)}/requeue`, "Requeue", { confirm: `Requeue job ${j.id}? Its attempts reset to 0.`, small: true, testId: "requeue" })}</td>` : ""}</tr>`,
    )}</tbody></table>
${page.nextCursor ? html`<div class="pager"><span></span><span class="btns"><a class="btn btn-sm" href="${href("/failures", [...(tab === "quarantined" ? [["tab", tab] as const] : []), ["after", page.nextCursor]])}">Older »</a></span></div>` : ""}`;
  return {
    title: "Failures",
    section: "failures",
    content: html`<section class="card flush" data-live="failures">${tabs}<p class="hint-bar">${explain}</p><div class="card-b">${body}</div></section>`,
  };
}
