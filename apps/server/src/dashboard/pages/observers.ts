import { observerView } from "../../api/monitoring-routes.js";
import type { ServerContext } from "../../context.js";
import { type View, card, empty, jobLink, stateBadge, time } from "../components.js";
import { STATE_LABELS, formatCount, formatDuration } from "../format.js";
import { html } from "../html.js";
import type { PageResult } from "./page-result.js";

/** Observers: subscription, cursor, backlog and lag, delivery lease, dead letters. */
export async function observersPage(ctx: ServerContext, view: View): Promise<PageResult> {
  const observers = (await ctx.store.listObservers()).map((o) => observerView(o, view.now));
  const sensitive = view.can("viewSensitive");
  const withLetters = await Promise.all(
    observers.filter((o) => o.deadLetters > 0).map(async (o) => ({ id: o.id, letters: await ctx.store.listObserverDeadLetters(o.id) })),
  );
  const body =
    observers.length === 0
      ? empty("No observers", "Observers are application callbacks told when jobs reach chosen states, registered by workers.")
      : html`<table class="grid"><thead><tr><th>Observer</th><th>States</th><th>Filter</th><th class="r">Cursor</th><th class="r">Pending</th><th>Lag</th><th>Delivering</th><th class="r">Dead letters</th></tr></thead><tbody>${observers.map(
          (o) => html`<tr><td class="jn">${o.id}</td><td>${o.states.map((s) => STATE_LABELS[s]).join(", ")}</td>
<td class="muted">${[o.jobNames ? `jobs: ${o.jobNames.join(", ")}` : "", o.queues ? `queues: ${o.queues.join(", ")}` : ""].filter(Boolean).join(" · ") || "all jobs"}</td>
<td class="r num">${o.cursor < 0 ? "—" : formatCount(o.cursor)}</td><td class="r num">${formatCount(o.pending)}</td>
<td>${o.lagMs === null ? html`<span class="pill ok">caught up</span>` : html`<span class="pill ${o.lagMs > 60_000 ? "bad" : "warn"}">${formatDuration(o.lagMs)} behind</span>`}</td>
<td class="mono muted">${o.leaseOwner ?? "—"}</td>
<td class="r num">${o.deadLetters > 0 ? html`<span class="pill bad">${o.deadLetters}</span>` : html`<span class="zero">0</span>`}</td></tr>`,
        )}</tbody></table>`;
  const letters = withLetters.map(({ id, letters: list }) =>
    card(
      html`Dead letters of ${id} <span class="sub">${list.length}</span>`,
      html`<table class="grid"><thead><tr><th>Job</th><th>Transition</th><th class="r">Deliveries</th><th>Given up</th><th>Error</th></tr></thead><tbody>${list.map(
        (d) => html`<tr><td>${jobLink(d.jobId)}</td><td>${stateBadge(d.state)} <span class="muted">attempt ${d.attempt}</span></td><td class="r num">${d.deliveryAttempts}</td>
<td>${time(d.deadLetteredAt, view.now)}</td><td class="muted">${sensitive ? d.error : "hidden (viewSensitive)"}</td></tr>`,
      )}</tbody></table>`,
      { flush: true },
    ),
  );
  return { title: "Observers", section: "observers", content: html`${card("Transition observers", body, { flush: true, live: "observers" })}${letters}` };
}
