import { withNextTicks } from "../../api/schedule-routes.js";
import type { ServerContext } from "../../context.js";
import { type View, actionForm, card, empty, tagList, time } from "../components.js";
import { formatInstant, formatTick } from "../format.js";
import { html } from "../html.js";
import type { PageResult } from "./page-result.js";

/** Schedules: cron, next ticks, cursor, skipped ticks, live instance, trigger. */
export async function schedulesPage(ctx: ServerContext, view: View): Promise<PageResult> {
  const schedules = (await ctx.store.listSchedules()).map((s) => withNextTicks(s, view.now));
  const canTrigger = view.can("triggerSchedule");
  const canManage = view.can("manageSchedules");
  const hasActions = canTrigger || canManage;
  const rows = schedules.map((s) => {
    const skipped = s.skippedTicks.length;
    const lastSkipped = s.skippedTicks.at(-1);
    return html`<tr>
<td class="nowrap"><a class="jn" href="/jobs?scheduleId=${encodeURIComponent(s.id)}" title="Jobs of this schedule">${s.id}</a></td>
<td class="nowrap"><code>${s.cron}</code><div class="muted">${s.timeZone}</div></td>
<td>${s.jobName}<div class="muted">${s.queue}</div></td>
<td>${s.nextTicks.length === 0 ? html`<span class="pill bad">cron does not parse</span>` : html`${time(s.nextTicks[0]!, view.now)}<div class="muted">then ${s.nextTicks.slice(1).map((t, i) => html`${i > 0 ? ", " : ""}<span title="${formatInstant(t)}">${formatTick(t, view.now)}</span>`)}</div>`}</td>
<td class="nowrap">${time(s.cursor, view.now)}</td>
<td>${skipped === 0 ? html`<span class="zero">none</span>` : html`<span class="pill warn" title="${s.skippedTicks.map(formatInstant).join("\n")}">${skipped} skipped</span><div class="muted">last ${time(lastSkipped!, view.now)}</div>`}</td>
<td>${s.hasLiveInstance ? html`<span class="pill info">running</span>` : html`<span class="muted">idle</span>`}${s.noOverlap ? html` <span class="pill">no overlap</span>` : ""}${s.catchUp === "coalesce" ? html` <span class="pill">coalesce</span>` : ""}</td>
<td class="tags-cell">${tagList(s.tags, 2)}</td>
${hasActions ? html`<td class="acts pinned">${canTrigger ? actionForm(view, `/actions/schedules/${encodeURIComponent(s.id)}/trigger`, "Trigger now", { confirm: `Run one extra instance of ${s.id} now?`, small: true, testId: `trigger-${s.id}` }) : ""}${
  canManage ? html`<a class="btn btn-sm" href="/schedules/${encodeURIComponent(s.id)}/edit" data-test="edit-${s.id}">Edit</a>` : ""
}</td>` : ""}
</tr>`;
  });
  const body =
    schedules.length === 0
      ? empty("No schedules", html`Define one with <code>PUT /api/v1/schedules/:id</code> or in a jobs module's <code>schedules</code> export.`)
      : html`<table class="grid schedules"><thead><tr><th>Schedule</th><th>Cron</th><th>Job</th><th>Next ticks</th><th>Planned up to</th><th>Skipped ticks</th><th>Instance</th><th>Tags</th>${hasActions ? html`<th class="acts pinned"><span class="sr">Actions</span></th>` : ""}</tr></thead><tbody>${rows}</tbody></table>`;
  const create = canManage ? html`<a class="btn btn-sm btn-primary" href="/schedules/new" data-test="new-schedule">New schedule</a>` : undefined;
  return {
    title: "Schedules",
    section: "schedules",
    content: card(html`Schedules <span class="sub">${schedules.length}</span>`, body, { flush: true, live: "schedules", ...(create === undefined ? {} : { actions: create }) }),
  };
}
