import { PROMISE_TAGS, type PromiseScheduleRecord, type PromiseStore, isBelayError } from "@belay/contract";
import { type View, card, empty, time } from "../components.js";
import { formatCount, formatDuration, formatTick, shortId } from "../format.js";
import { html } from "../html.js";
import { promiseTags, promisesByTag, targetOf, targetText } from "../promise-components.js";
import { href } from "../query.js";
import type { PageResult } from "./page-result.js";

const PAGE_SIZE = 50;

/** Promise schedules (`schedule.search`): cron, promise id template, next and last run, target; paged by cursor. */
export async function promiseSchedulesPage(store: PromiseStore, view: View, url: URL): Promise<PageResult> {
  const after = url.searchParams.get("cursor")?.trim() || undefined;
  let schedules: readonly PromiseScheduleRecord[] = [];
  let cursor: string | undefined;
  let problem: string | null = null;
  try {
    const answer = await store.handle({ kind: "schedule.search", limit: PAGE_SIZE, ...(after === undefined ? {} : { cursor: after }) }, view.now);
    if (answer.status === 200) {
      schedules = answer.data.schedules;
      cursor = answer.data.cursor;
    } else problem = answer.error;
  } catch (error) {
    if (isBelayError(error, "BELAY_INVALID_INPUT")) problem = error.message;
    else throw error;
  }

  const rows = schedules.map(
    (s) => html`<tr>
<td><a class="jn mono" href="${promisesByTag(PROMISE_TAGS.schedule, s.id)}" title="Promises of ${s.id}">${shortId(s.id, 30)}</a></td>
<td class="nowrap"><code>${s.cron}</code></td>
<td><span class="mono addr" title="${s.promiseId}">${s.promiseId}</span><div class="muted">deadline ${formatDuration(s.promiseTimeout)} after each run</div></td>
<td class="nowrap">${time(s.nextRunAt, view.now)}<div class="muted">${formatTick(s.nextRunAt, view.now)} UTC</div></td>
<td class="nowrap">${s.lastRunAt === undefined ? html`<span class="muted">never</span>` : html`${time(s.lastRunAt, view.now)}<div class="muted">${formatTick(s.lastRunAt, view.now)} UTC</div>`}</td>
<td>${targetText(targetOf(s.promiseTags))}</td>
<td>${promiseTags(s.promiseTags, { max: 2, skipProtocol: true })}</td>
</tr>`,
  );
  const first = after !== undefined ? "/promise-schedules" : null;
  const next = cursor !== undefined ? href("/promise-schedules", [["cursor", cursor]]) : null;
  const body =
    problem !== null
      ? empty("This page cannot be read", problem)
      : schedules.length === 0 && after === undefined
        ? empty("No promise schedules", html`Resonate SDK applications create them with <code>resonate.schedule(…)</code> (the envelope's <code>schedule.create</code>).`)
        : html`${schedules.length === 0 ? empty("No more schedules") : html`<table class="grid" data-test="promise-schedules"><thead><tr><th>Schedule</th><th>Cron</th><th>Promise id</th><th>Next run</th><th>Last run</th><th>Target</th><th>Tags</th></tr></thead><tbody>${rows}</tbody></table>`}
<div class="pager"><span>${formatCount(schedules.length)} schedules on this page · by id</span><span class="btns">
<a class="btn btn-sm" href="${first ?? "#"}" aria-disabled="${String(first === null)}">« First page</a>
<a class="btn btn-sm" href="${next ?? "#"}" aria-disabled="${String(next === null)}" data-test="next-page">Next »</a></span></div>`;
  return { title: "Promise schedules", section: "promiseSchedules", content: card(html`Promise schedules`, body, { flush: true }) };
}
