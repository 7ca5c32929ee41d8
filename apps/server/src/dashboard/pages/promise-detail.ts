import { PROMISE_TAGS, type PromiseDetail, type PromiseRecord, type PromiseStore, type TaskRecord, utf8ByteLength } from "@belay/contract";
import { type View, card, empty, time } from "../components.js";
import { formatCount, formatDuration, formatInstant } from "../format.js";
import { type SafeHtml, html } from "../html.js";
import { promiseBadge, promiseLink, promiseTags, promiseValue, promisesByTag, targetOf, targetText, taskBadge } from "../promise-components.js";
import type { PageResult } from "./page-result.js";

/** How many ids each list of the page shows (a callback list or a branch can be long). */
const SHOWN = 50;

const kv = (label: string, value: SafeHtml | string | number | null) => html`<dt>${label}</dt><dd>${value ?? html`<span class="muted">—</span>`}</dd>`;

function locked(what: string): SafeHtml {
  return html`<div class="locked"><svg width="16" height="16" viewBox="0 0 24 24" fill="none" stroke="currentColor" stroke-width="1.8" aria-hidden="true"><rect x="5" y="11" width="14" height="10" rx="2"/><path d="M8 11V8a4 4 0 0 1 8 0v3"/></svg>${what} hidden: needs the viewSensitive permission.</div>`;
}

function notFound(id: string): PageResult {
  return {
    title: "Promise not found",
    section: "promises",
    crumbs: [["Promises", "/promises"]],
    content: card("Unknown promise", empty(`No promise ${id}`, "It may never have been created, or the store was reset.")),
    status: 404,
  };
}

/** The records of `ids` (the first {@link SHOWN}), for their states; ids no longer stored are `null`. */
async function recordsOf(store: PromiseStore, ids: readonly string[], now: number): Promise<Map<string, PromiseRecord | null>> {
  // Plain reads (`promise.get` is a protocol step, which on a SQL store locks what it loads).
  const records = await Promise.all(ids.slice(0, SHOWN).map(async (id) => [id, (await store.describePromise(id, now))?.promise ?? null] as const));
  return new Map(records);
}

/** Links to promises, each with its state. */
function idList(ids: readonly string[], records: ReadonlyMap<string, PromiseRecord | null>, none: string, more: SafeHtml | string = ""): SafeHtml {
  if (ids.length === 0) return html`<p class="notice">${none}</p>`;
  const rows = ids.slice(0, SHOWN).map((id) => {
    const record = records.get(id);
    return html`<li>${promiseLink(id, 40)}${record ? promiseBadge(record.state) : record === null ? html`<span class="pill">not stored</span>` : ""}</li>`;
  });
  return html`<ul class="edges">${rows}</ul>${ids.length > SHOWN ? html`<p class="notice spaced">${formatCount(ids.length - SHOWN)} more not shown. ${more}</p>` : ""}`;
}

function taskCard(task: TaskRecord | null, promise: PromiseRecord): SafeHtml {
  if (task === null) {
    const why = targetOf(promise.tags) === null ? "This promise names no resonate:target, so nothing executes it." : "The store holds no task for it.";
    return card("Task", empty("No task", why));
  }
  const acquired = task.state === "acquired";
  const body = html`<dl class="kv" data-test="task">
${kv("State", taskBadge(task.state))}
${kv("Version", html`<span class="num">${task.version}</span> <span class="muted">(the fencing token)</span>`)}
${kv("Resumes", html`<span class="num">${task.resumes}</span>${task.resumes > 0 ? html` <span class="muted">awaited promises settled while it ran</span>` : ""}`)}
${acquired ? kv("Process", task.pid === undefined ? null : html`<span class="mono">${task.pid}</span>`) : ""}
${acquired ? kv("Lease", task.ttl === undefined ? null : html`${formatDuration(task.ttl)} <span class="muted">per heartbeat</span>`) : ""}
${acquired ? kv("Lease ends", html`<span class="muted">not reported by the store</span>`) : ""}
</dl>`;
  return card("Task", body);
}

function messagesTable(detail: PromiseDetail, view: View): SafeHtml {
  if (detail.messages.length === 0) return empty("No messages waiting", "Its task's execute and its listeners' unblocks are deleted once delivered.");
  return html`<table class="grid" data-test="messages"><thead><tr><th>Kind</th><th>Address</th><th class="r">Version</th><th class="r">Takes</th><th>Age</th><th>Available</th></tr></thead><tbody>${detail.messages.map(
    (m) => html`<tr><td><span class="pill${m.kind === "execute" ? " info" : ""}">${m.kind}</span></td><td>${targetText(m.address)}</td>
<td class="r num">${m.kind === "execute" ? m.version : html`<span class="muted">—</span>`}</td><td class="r num">${m.takes}</td>
<td class="nowrap" title="${formatInstant(m.createdAt)}">${formatDuration(view.now - m.createdAt)}</td><td class="nowrap">${time(m.availableAt, view.now)}</td></tr>`,
  )}</tbody></table>`;
}

/** The promises of its branch and those it created elsewhere, from `promise.search` by lineage tag. */
async function lineage(store: PromiseStore, promise: PromiseRecord, view: View): Promise<SafeHtml> {
  const search = async (key: string) => {
    const answer = await store.handle({ kind: "promise.search", tags: { [key]: promise.id }, limit: SHOWN + 1 }, view.now);
    if (answer.status !== 200) return { promises: [] as PromiseRecord[], more: false };
    const promises = answer.data.promises.filter((p) => p.id !== promise.id);
    return { promises: promises.slice(0, SHOWN), more: promises.length > SHOWN || answer.data.cursor !== undefined };
  };
  const [branch, parented] = await Promise.all([search(PROMISE_TAGS.branch), search(PROMISE_TAGS.parent)]);
  const inBranch = new Set(branch.promises.map((p) => p.id));
  const elsewhere = parented.promises.filter((p) => !inBranch.has(p.id));
  const list = (promises: readonly PromiseRecord[], none: string, more: boolean, key: string) =>
    promises.length === 0
      ? html`<p class="notice">${none}</p>`
      : html`<ul class="edges">${promises.map((p) => html`<li>${promiseLink(p.id, 40)}${promiseBadge(p.state)}${targetOf(p.tags) === null ? "" : html`<span class="muted">task</span>`}</li>`)}</ul>${
          more ? html`<p class="notice spaced"><a href="${promisesByTag(key, promise.id)}">All of them →</a></p>` : ""
        }`;

  const tags = promise.tags;
  const link = (key: string, label: string) => {
    const id = tags[key];
    if (id === undefined) return "";
    return kv(label, id === promise.id ? html`<span class="muted">itself</span>` : promiseLink(id, 40));
  };
  const ancestry = html`<dl class="kv">${link(PROMISE_TAGS.parent, "Parent")}${link(PROMISE_TAGS.branch, "Branch")}${link(PROMISE_TAGS.origin, "Origin")}</dl>`;
  const hasAncestry = tags[PROMISE_TAGS.parent] !== undefined || tags[PROMISE_TAGS.branch] !== undefined || tags[PROMISE_TAGS.origin] !== undefined;
  return card(
    "Lineage",
    html`${hasAncestry ? ancestry : html`<p class="notice">No lineage tags (resonate:parent, resonate:branch, resonate:origin).</p>`}
<div class="cols even spaced" data-test="lineage"><div><h3 class="notice">In its branch</h3>${list(branch.promises, "No other promise names it as its branch.", branch.more, PROMISE_TAGS.branch)}</div>
<div><h3 class="notice">Children in other branches</h3>${list(elsewhere, "No promise in another branch names it as its parent.", parented.more, PROMISE_TAGS.parent)}</div></div>`,
  );
}

/** One promise: its record, its task, callbacks both ways, listeners, waiting messages and lineage. */
export async function promiseDetailPage(store: PromiseStore, view: View, id: string): Promise<PageResult> {
  // An id longer than the store keeps cannot exist: no need to ask.
  if (utf8ByteLength(id) > store.capabilities.bounds.idLength) return notFound(id);
  const detail = await store.describePromise(id, view.now);
  if (detail === null) return notFound(id);
  const { promise } = detail;
  const sensitive = view.can("viewSensitive");
  const [awaitingRecords, awaiterRecords, lineageCard] = await Promise.all([
    recordsOf(store, detail.awaiting, view.now),
    recordsOf(store, detail.awaiters, view.now),
    lineage(store, promise, view),
  ]);
  const target = targetOf(promise.tags);
  const schedule = promise.tags[PROMISE_TAGS.schedule];

  const summary = html`<dl class="kv" data-test="summary">
${kv("State", promiseBadge(promise.state))}
${kv("Created", html`${formatInstant(promise.createdAt)} · ${time(promise.createdAt, view.now)}`)}
${kv(promise.tags[PROMISE_TAGS.timer] === "true" ? "Fires" : "Deadline", html`${formatInstant(promise.timeoutAt)} · ${time(promise.timeoutAt, view.now)}`)}
${promise.settledAt !== undefined ? kv("Settled", html`${formatInstant(promise.settledAt)} · ${time(promise.settledAt, view.now)}`) : ""}
${kv("Target", target === null ? html`<span class="muted">none (no task)</span>` : html`<a href="${promisesByTag(PROMISE_TAGS.target, target)}" class="mono addr" title="${target}">${target}</a>`)}
${schedule !== undefined ? kv("Schedule", html`<a href="${promisesByTag(PROMISE_TAGS.schedule, schedule)}">${schedule}</a>`) : ""}
${kv("Tags", Object.keys(promise.tags).length === 0 ? html`<span class="muted">none</span>` : promiseTags(promise.tags))}
</dl>`;

  const data = sensitive
    ? html`${promiseValue("Param", promise.param)}<div class="spaced">${promiseValue("Value", promise.value)}</div>`
    : locked("Param and value");

  const callbacks = html`<div class="cols even" data-test="callbacks">
<div><h3 class="notice">Its task waits on</h3>${idList(detail.awaiting, awaitingRecords, "Nothing: its task has no callbacks.")}</div>
<div><h3 class="notice">Tasks waiting on it</h3>${idList(detail.awaiters, awaiterRecords, "No task waits on it.")}</div></div>`;

  const listeners =
    detail.listeners.length === 0
      ? html`<p class="notice">No client waits on it.</p>`
      : html`<ul class="edges" data-test="listeners">${detail.listeners.slice(0, SHOWN).map((a) => html`<li>${targetText(a)}</li>`)}</ul>${
          detail.listeners.length > SHOWN ? html`<p class="notice spaced">${formatCount(detail.listeners.length - SHOWN)} more not shown.</p>` : ""
        }`;

  const content = html`<div class="head"><span class="id">${promise.id}</span>${promiseBadge(promise.state)}${detail.task ? taskBadge(detail.task.state, detail.task.version) : ""}</div>
<div class="cols">
<div class="stack">${card("Promise", summary)}${card("Param and value", data)}${card("Callbacks", callbacks)}${lineageCard}${card(
    html`Outbox <span class="sub">${detail.messages.length} waiting</span>`,
    messagesTable(detail, view),
    { flush: true },
  )}</div>
<div class="stack">${taskCard(detail.task, promise)}${card(html`Listeners <span class="sub">${detail.listeners.length}</span>`, listeners)}</div>
</div>`;
  return { title: "Promise", section: "promises", crumbs: [["Promises", "/promises"]], content };
}
