import type { JobState, JobSummary, Tag } from "@belay/contract";
import { STATE_CLASS, STATE_LABELS, formatCount, formatInstant, formatRelative, shortId, tagText } from "./format.js";
import { type HtmlValue, type SafeHtml, html } from "./html.js";

/** What a page knows about the viewer and the request. */
export interface View {
  readonly now: number;
  /** The path and query of this page (for redirects back after an action). */
  readonly path: string;
  readonly csrf: string;
  readonly actor: string | null;
  readonly can: (permission: "viewSensitive" | "cancel" | "requeue" | "pauseQueue" | "triggerSchedule" | "enqueue" | "manageSchedules") => boolean;
}

/** A job state as a coloured badge. */
export function stateBadge(state: JobState, extra?: string): SafeHtml {
  return html`<span class="badge s-${STATE_CLASS[state]}">${STATE_LABELS[state]}${extra ? html` <small>${extra}</small>` : ""}</span>`;
}

/** A job state as a coloured dot. */
export function dot(state: JobState): SafeHtml {
  return html`<span class="dot s-${STATE_CLASS[state]}"></span>`;
}

/** `<time>` with the relative text and the absolute instant on hover. */
export function time(ms: number | null, now: number): SafeHtml {
  if (ms === null) return html`<span class="muted">—</span>`;
  return html`<time datetime="${new Date(ms).toISOString()}" title="${formatInstant(ms)}">${formatRelative(ms, now)}</time>`;
}

/** A count with a thousands separator; zero is greyed out. */
export function num(n: number, zeroMuted = true): SafeHtml {
  return zeroMuted && n === 0 ? html`<span class="zero">0</span>` : html`${formatCount(n)}`;
}

/** A link to a job, its id shortened for dense tables. */
export function jobLink(id: string, max = 26): SafeHtml {
  return html`<a class="mono" href="/jobs/${encodeURIComponent(id)}" title="${id}">${shortId(id, max)}</a>`;
}

/** One tag, optionally a link. */
export function tagPill(tag: Tag, href?: string): SafeHtml {
  const text = tagText(tag);
  const inner = tag.key === "" ? html`${text}` : html`<span class="tk">${tag.key}=</span>${tag.value}`;
  return href ? html`<a class="tag" href="${href}">${inner}</a>` : html`<span class="tag">${inner}</span>`;
}

/** A job's tags as links to the jobs carrying them, the first `max` of them. */
export function tagList(tags: readonly Tag[], max = 4): SafeHtml {
  if (tags.length === 0) return html``;
  const shown = tags.slice(0, max).map((t) => tagPill(t, `/jobs?tag=${encodeURIComponent(tagText(t))}`));
  return html`<span class="tags">${shown}${tags.length > max ? html`<span class="more">+${tags.length - max}</span>` : ""}</span>`;
}

/** A panel with a title bar, optional actions, and a body; `live` marks it for live refresh. */
export function card(title: HtmlValue, body: HtmlValue, options: { actions?: HtmlValue; flush?: boolean; id?: string; live?: string } = {}): SafeHtml {
  return html`<section class="card${options.flush ? " flush" : ""}"${options.id ? html` id="${options.id}"` : ""}${options.live ? html` data-live="${options.live}"` : ""}>
  <header class="card-h"><h2>${title}</h2>${options.actions ? html`<div class="card-actions">${options.actions}</div>` : ""}</header>
  <div class="card-b">${body}</div>
</section>`;
}

/** The empty state of a list: what is missing and what would fill it. */
export function empty(title: string, hint: HtmlValue = null): SafeHtml {
  return html`<div class="empty"><svg viewBox="0 0 24 24" width="28" height="28" aria-hidden="true"><path fill="none" stroke="currentColor" stroke-width="1.5" d="M4 7h16M4 12h16M4 17h10"/></svg><p class="empty-t">${title}</p>${hint ? html`<p class="empty-h">${hint}</p>` : ""}</div>`;
}

/**
 * An operator action: a POST form with the session's CSRF token, a browser confirmation and the
 * page to come back to. The server refuses it without both.
 */
export function actionForm(
  view: View,
  action: string,
  label: string,
  options: { confirm: string; variant?: "danger" | "primary" | "default"; fields?: Record<string, string>; inline?: HtmlValue; small?: boolean; testId?: string },
): SafeHtml {
  const fields = Object.entries(options.fields ?? {}).map(([k, v]) => html`<input type="hidden" name="${k}" value="${v}">`);
  return html`<form class="act" method="post" action="${action}" data-confirm="${options.confirm}">
<input type="hidden" name="_csrf" value="${view.csrf}"><input type="hidden" name="_back" value="${view.path}"><input type="hidden" name="_confirmed" value="">${fields}${options.inline ?? ""}<button type="submit" class="btn${options.variant && options.variant !== "default" ? ` btn-${options.variant}` : ""}${options.small ? " btn-sm" : ""}"${options.testId ? html` data-test="${options.testId}"` : ""}>${label}</button></form>`;
}

/** The standard jobs table. */
export function jobsTable(jobs: readonly JobSummary[], view: View, options: { showQueue?: boolean; when?: "due" | "terminal" | "enqueued" } = {}): SafeHtml {
  const when = options.when ?? "enqueued";
  const whenLabel = when === "due" ? "Due" : when === "terminal" ? "Ended" : "Enqueued";
  return html`<table class="grid">
<thead><tr><th>Job</th><th>Job name</th>${options.showQueue === false ? "" : html`<th class="hide-narrow">Queue</th>`}<th>State</th><th class="r hide-narrow">Attempt</th><th>${whenLabel}</th><th>Tags</th></tr></thead>
<tbody>${jobs.map(
    (j) => html`<tr>
<td>${jobLink(j.id)}</td>
<td><span class="jn">${j.jobName}</span></td>
${options.showQueue === false ? "" : html`<td class="hide-narrow"><a class="q" href="/jobs?queue=${encodeURIComponent(j.queue)}">${j.queue}</a></td>`}
<td>${stateBadge(j.state, j.cancelRequested ? "cancelling" : undefined)}</td>
<td class="r num hide-narrow">${j.attempt}</td>
<td class="nowrap">${time(when === "due" ? j.dueAt : when === "terminal" ? j.terminalAt : j.enqueuedAt, view.now)}</td>
<td>${tagList(j.tags)}</td>
</tr>`,
  )}</tbody></table>`;
}

