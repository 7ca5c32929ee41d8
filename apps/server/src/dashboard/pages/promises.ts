import { PROMISE_STATES, type PromiseRecord, type PromiseSearchRequest, type PromiseState, type PromiseStore, type TaskRecord, isBelayError } from "@belay/contract";
import { type View, card, empty, time } from "../components.js";
import { formatCount } from "../format.js";
import { type SafeHtml, html } from "../html.js";
import { PROMISE_STATE_LABELS, parseTagFilters, promiseBadge, promiseLink, promiseTags, targetOf, targetText, taskBadge } from "../promise-components.js";
import { href, pairsOf, without } from "../query.js";
import type { PageResult } from "./page-result.js";

const PAGE_SIZES = [25, 50, 100, 200];

/** The search the page's query asks for, or what is wrong with it. */
function searchOf(url: URL): { readonly request: PromiseSearchRequest; readonly problem: string | null; readonly tagTexts: readonly string[] } {
  const one = (key: string) => url.searchParams.get(key)?.trim() || undefined;
  const tagTexts = url.searchParams
    .getAll("tag")
    .map((t) => t.trim())
    .filter((t) => t.length > 0);
  const limitText = one("limit");
  const limitNumber = limitText === undefined ? NaN : Number(limitText);
  const limit = PAGE_SIZES.includes(limitNumber) ? limitNumber : 50;
  const state = one("state");
  const prefix = one("prefix");
  const cursor = one("cursor");
  const { tags, problem: tagProblem } = parseTagFilters(tagTexts);
  const knownState = state === undefined || (PROMISE_STATES as readonly string[]).includes(state);
  const request: PromiseSearchRequest = {
    kind: "promise.search",
    limit,
    ...(prefix === undefined ? {} : { prefix }),
    ...(state === undefined || !knownState ? {} : { state: state as PromiseState }),
    ...(Object.keys(tags).length === 0 ? {} : { tags }),
    ...(cursor === undefined ? {} : { cursor }),
  };
  const problem = tagProblem ?? (knownState ? null : `state: "${state}" is not a promise state`);
  return { request, problem, tagTexts };
}

/** Each promise's task (only promises with a target have one), by id. */
async function tasksOf(store: PromiseStore, promises: readonly PromiseRecord[], now: number): Promise<Map<string, TaskRecord>> {
  // A search answers without the tasks. `describePromise` is a plain read: `task.get` would run
  // as a protocol step, which on a SQL store locks the rows it loads, against the workers.
  const found = await Promise.all(promises.filter((p) => targetOf(p.tags) !== null).map(async (p) => (await store.describePromise(p.id, now))?.task ?? null));
  return new Map(found.filter((t): t is TaskRecord => t !== null).map((t) => [t.id, t]));
}

/** A table of promises: state, deadline, target, task, tags. */
export function promisesTable(promises: readonly PromiseRecord[], tasks: ReadonlyMap<string, TaskRecord>, view: View): SafeHtml {
  return html`<table class="grid" data-test="promises">
<thead><tr><th>Promise</th><th>State</th><th>Deadline</th><th>Target</th><th>Task</th><th class="hide-narrow">Created</th><th>Tags</th></tr></thead>
<tbody>${promises.map((p) => {
    const task = tasks.get(p.id);
    return html`<tr>
<td>${promiseLink(p.id)}</td>
<td>${promiseBadge(p.state)}${p.tags["resonate:timer"] === "true" ? html` <span class="pill">timer</span>` : ""}</td>
<td class="nowrap">${p.state === "pending" ? time(p.timeoutAt, view.now) : html`<span class="muted">${time(p.timeoutAt, view.now)}</span>`}</td>
<td>${targetText(targetOf(p.tags))}</td>
<td class="nowrap">${task === undefined ? html`<span class="muted">—</span>` : taskBadge(task.state, task.version)}</td>
<td class="nowrap hide-narrow">${time(p.createdAt, view.now)}</td>
<td>${promiseTags(p.tags, { max: 2, skipProtocol: true })}</td>
</tr>`;
  })}</tbody></table>`;
}

/** Durable promises: search by id prefix, state and tags, by id, paged by cursor. */
export async function promisesPage(store: PromiseStore, view: View, url: URL): Promise<PageResult> {
  const pairs = pairsOf(url);
  const { request, problem: filterProblem, tagTexts } = searchOf(url);
  let problem = filterProblem;
  let promises: readonly PromiseRecord[] = [];
  let cursor: string | undefined;
  if (problem === null) {
    try {
      const answer = await store.handle(request, view.now);
      if (answer.status === 200) {
        promises = answer.data.promises;
        cursor = answer.data.cursor;
      } else problem = answer.error;
    } catch (error) {
      if (isBelayError(error, "BELAY_INVALID_INPUT")) problem = error.message;
      else throw error;
    }
  }
  const tasks = await tasksOf(store, promises, view.now);

  const chips = tagTexts.map(
    (t) => html`<span class="chip">${t}<a href="${href("/promises", without(pairs, ["cursor"], [["tag", t]]))}" aria-label="Remove ${t}">×</a></span>`,
  );
  const form = html`<form class="filters" method="get" action="/promises" data-test="promise-search">
<label class="grow">Id prefix<input type="text" name="prefix" value="${request.prefix ?? ""}" placeholder="Any id" autocomplete="off"></label>
<label>State<select name="state"><option value="">All states</option>${PROMISE_STATES.map((s) => html`<option value="${s}" ${request.state === s ? "selected" : ""}>${PROMISE_STATE_LABELS[s]}</option>`)}</select></label>
<label class="grow">Tag<input type="text" name="tag" placeholder="key=value" autocomplete="off"></label>
${tagTexts.map((t) => html`<input type="hidden" name="tag" value="${t}">`)}
<label>Rows<select name="limit">${PAGE_SIZES.map((n) => html`<option ${n === request.limit ? "selected" : ""}>${n}</option>`)}</select></label>
<button class="btn btn-primary" type="submit">Search</button>
${pairs.length > 0 ? html`<a class="btn" href="/promises">Clear</a>` : ""}
</form>
${chips.length > 0 ? html`<div class="chips">${chips}</div>` : ""}`;

  const first = request.cursor !== undefined ? href("/promises", without(pairs, ["cursor"])) : null;
  const next = cursor !== undefined ? href("/promises", [...without(pairs, ["cursor"]), ["cursor", cursor]]) : null;
  const searching = pairs.some(([k]) => k !== "limit" && k !== "cursor");
  const body =
    problem !== null
      ? empty("This search cannot be read", problem)
      : promises.length === 0 && next === null
        ? empty(
            searching ? "No promises match this search" : "No promises yet",
            searching ? html`<a href="/promises">Clear the search</a>` : "Promises that Resonate SDK applications create on the durable-promise listener appear here.",
          )
        : html`${promises.length === 0 ? empty("No matches on this page", "The store read a page of ids and none matched the state; the next page may hold some.") : promisesTable(promises, tasks, view)}
<div class="pager"><span>${formatCount(promises.length)} promises on this page · by id</span><span class="btns">
<a class="btn btn-sm" href="${first ?? "#"}" aria-disabled="${String(first === null)}">« First page</a>
<a class="btn btn-sm" href="${next ?? "#"}" aria-disabled="${String(next === null)}" data-test="next-page">Next »</a></span></div>`;

  const content = html`${card("Search", form)}
${card(html`Promises`, body, { flush: true })}`;
  return { title: "Promises", section: "promises", content };
}
