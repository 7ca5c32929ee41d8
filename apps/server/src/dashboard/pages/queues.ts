import type { ServerContext } from "../../context.js";
import { loadQueueOverviews } from "../../monitor/queues.js";
import { type View, actionForm, card, empty, num } from "../components.js";
import { formatCount } from "../format.js";
import { html } from "../html.js";
import type { PageResult } from "./page-result.js";

/** Queues with depth, paused state and limit, and their actions. */
export async function queuesPage(ctx: ServerContext, view: View): Promise<PageResult> {
  const queues = await loadQueueOverviews(ctx.store, ctx.catalog);
  const canOperate = view.can("pauseQueue");
  const rows = queues.map((q) => {
    const path = `/actions/queues/${encodeURIComponent(q.queue)}`;
    const toggle = q.paused
      ? actionForm(view, `${path}/resume`, "Resume", { confirm: `Resume queue ${q.queue}? Workers start claiming its jobs again.`, small: true, variant: "primary", testId: `resume-${q.queue}` })
      : actionForm(view, `${path}/pause`, "Pause", { confirm: `Pause queue ${q.queue}? Running jobs finish; no new ones start.`, small: true, testId: `pause-${q.queue}` });
    const limit = actionForm(view, `${path}/limit`, "Set limit", {
      confirm: `Change the concurrency limit of ${q.queue}?`,
      small: true,
      inline: html`<input class="limit" type="number" name="limit" min="1" step="1" placeholder="none" value="${q.concurrencyLimit ?? ""}" aria-label="Concurrency limit of ${q.queue}">`,
      testId: `limit-${q.queue}`,
    });
    return html`<tr>
<td><a class="jn" href="/jobs?queue=${encodeURIComponent(q.queue)}">${q.queue}</a></td>
<td>${q.paused ? html`<span class="pill warn">Paused</span>` : html`<span class="pill ok">Active</span>`}</td>
<td class="r num">${num(q.counts.scheduled)}</td>
<td class="r num hide-narrow">${num(q.counts.awaitingParents)}</td>
<td class="r num">${num(q.counts.leased)}</td>
<td class="r num">${q.counts.deadLettered + q.counts.quarantined > 0 ? html`<a href="/jobs?queue=${encodeURIComponent(q.queue)}&state=deadLettered&state=quarantined">${formatCount(q.counts.deadLettered + q.counts.quarantined)}</a>` : num(0)}</td>
<td class="r num hide-narrow">${num(q.counts.succeeded)}</td>
<td class="r num">${q.concurrencyLimit === null ? html`<span class="muted">unlimited</span>` : html`<b>${q.concurrencyLimit}</b>`}</td>
${canOperate ? html`<td class="acts">${toggle} ${limit}</td>` : ""}
</tr>`;
  });
  const body =
    queues.length === 0
      ? empty("No queues yet", "A queue appears once a job is enqueued in it or a job type names it.")
      : html`<table class="grid"><thead><tr><th>Queue</th><th>Status</th><th class="r">Scheduled</th><th class="r hide-narrow">Awaiting</th><th class="r">Executing</th><th class="r">Failed</th><th class="r hide-narrow">Succeeded</th><th class="r">Limit</th>${canOperate ? html`<th class="r">Actions</th>` : ""}</tr></thead><tbody>${rows}</tbody></table>`;
  const note = canOperate
    ? ""
    : html`<p class="notice">Pausing, resuming and limits need the <b>pauseQueue</b> permission${view.actor ? "" : html` — <a href="/login?next=/queues">sign in</a>`}.</p>`;
  return {
    title: "Queues",
    section: "queues",
    content: html`${card(html`Queues <span class="sub">${queues.length}</span>`, body, { flush: true, live: "queues" })}${note}`,
  };
}
