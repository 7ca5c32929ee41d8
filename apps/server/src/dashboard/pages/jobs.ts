import { JOB_STATES, type JobFilter, type JobPage, type TagSuggestion, isBelayError } from "@belay/contract";
import { listRequestOf } from "../../api/job-routes.js";
import type { ServerContext } from "../../context.js";
import { HttpError } from "../../http/errors.js";
import { loadQueueOverviews } from "../../monitor/queues.js";
import { type View, card, empty, jobsTable } from "../components.js";
import { STATE_LABELS, formatCount } from "../format.js";
import { type SafeHtml, html } from "../html.js";
import { href, pairsOf, without } from "../query.js";
import type { PageResult } from "./page-result.js";

const PAGE_SIZES = [25, 50, 100, 200];

/** The listing query of the jobs page, as the API's jobs query reads it. */
function listQuery(url: URL) {
  const all = (key: string, split = true) => {
    const values = url.searchParams
      .getAll(key)
      .flatMap((v) => (split ? v.split(",") : [v]))
      .map((v) => v.trim())
      .filter((v) => v.length > 0);
    return values.length === 0 ? undefined : values;
  };
  const one = (key: string) => url.searchParams.get(key)?.trim() || undefined;
  const limitText = one("limit");
  const limit = limitText === undefined ? undefined : Number(limitText);
  return {
    state: all("state"),
    queue: all("queue"),
    jobName: all("jobName"),
    tag: all("tag", false),
    scheduleId: one("scheduleId"),
    workflowId: one("workflowId"),
    order: "newestFirst" as const,
    after: one("after"),
    limit: limit !== undefined && Number.isSafeInteger(limit) && limit > 0 ? limit : undefined,
  };
}

async function facets(ctx: ServerContext, scope: JobFilter, pairs: [string, string][]): Promise<SafeHtml> {
  const { store } = ctx;
  const active = new Set(pairs.filter(([k]) => k === "tag").map(([, v]) => v));
  const link = (text: string) => href("/jobs", [...without(pairs, ["after"]), ["tag", text]]);
  const suggestions = await store.suggestTags({ prefix: "", max: 50 });
  const keys = suggestions.suggestions.filter((s): s is Extract<TagSuggestion, { kind: "key" }> => s.kind === "key").slice(0, 3);
  const groups = await Promise.all([
    store.facetTags({ key: "", scope, max: 16 }).then((values) => ({ key: "", values })),
    ...keys.map((k) => store.facetTags({ key: k.key, scope, max: 10 }).then((values) => ({ key: k.key, values }))),
  ]);
  const rows = groups
    .filter((g) => g.values.length > 0)
    .map((g) => {
      const pills = g.values.map((v) => {
        const text = g.key === "" ? v.value : `${g.key}=${v.value}`;
        if (active.has(text)) return html`<span class="tag on">${v.value}<b>${formatCount(v.count)}</b></span>`;
        return html`<a class="tag" href="${link(text)}" data-test="facet">${v.value}<b>${formatCount(v.count)}</b></a>`;
      });
      return html`<div class="facet"><b>${g.key === "" ? "Labels" : g.key}</b>${pills}</div>`;
    });
  return rows.length === 0 ? html`` : html`<div class="facets">${rows}</div>`;
}

/** The jobs list: filters, tag facets and completion, newest first, keyset paging. */
export async function jobsPage(ctx: ServerContext, view: View, url: URL): Promise<PageResult> {
  const { store, catalog } = ctx;
  const pairs = pairsOf(url);
  const query = listQuery(url);
  const limit = query.limit ?? 50;
  let page: JobPage | null = null;
  let problem: string | null = null;
  let scope: JobFilter = {};
  try {
    const request = listRequestOf({ ...query, limit }, store.capabilities.bounds.monitorPage);
    const { order: _o, after: _a, limit: _l, ...filter } = request;
    scope = filter;
    page = await store.listJobs(request);
  } catch (error) {
    if (error instanceof HttpError && error.status < 500) problem = `${error.body.error.field ?? "filter"}: ${error.body.error.message}`;
    else if (isBelayError(error, "BELAY_INVALID_INPUT")) problem = error.message;
    else throw error;
  }
  const queues = (await loadQueueOverviews(store, catalog)).map((q) => q.queue);
  const tags = query.tag ?? [];
  const selected = (list: readonly string[] | undefined, value: string) => (list?.includes(value) ? "selected" : "");

  const chips = [
    ...tags.map((t) => ["tag", t] as const),
    ...(query.scheduleId ? [["scheduleId", query.scheduleId] as const] : []),
    ...(query.workflowId ? [["workflowId", query.workflowId] as const] : []),
  ].map(
    ([k, v]) =>
      html`<span class="chip">${k === "tag" ? "" : `${k === "scheduleId" ? "schedule" : "workflow"}: `}${v}<a href="${href("/jobs", without(pairs, ["after"], [[k, v]]))}" aria-label="Remove ${v}">×</a></span>`,
  );

  const form = html`<form class="filters" method="get" action="/jobs">
<label>State<select name="state"><option value="">All states</option>${JOB_STATES.map((s) => html`<option value="${s}" ${selected(query.state, s)}>${STATE_LABELS[s]}</option>`)}</select></label>
<label>Queue<select name="queue"><option value="">All queues</option>${queues.map((q) => html`<option ${selected(query.queue, q)}>${q}</option>`)}</select></label>
<label>Job name<input type="text" name="jobName" value="${query.jobName?.join(",") ?? ""}" list="job-names" placeholder="Any"></label>
<label class="grow">Tag<input type="text" name="tag" placeholder="label or key=value" data-tag-suggest list="tag-suggestions" autocomplete="off"></label>
${tags.map((t) => html`<input type="hidden" name="tag" value="${t}">`)}
${query.scheduleId ? html`<input type="hidden" name="scheduleId" value="${query.scheduleId}">` : ""}
${query.workflowId ? html`<input type="hidden" name="workflowId" value="${query.workflowId}">` : ""}
<label>Rows<select name="limit">${PAGE_SIZES.map((n) => html`<option ${n === limit ? "selected" : ""}>${n}</option>`)}</select></label>
<button class="btn btn-primary" type="submit">Apply</button>
${pairs.length > 0 ? html`<a class="btn" href="/jobs">Clear</a>` : ""}
<datalist id="job-names">${catalog.names.map((n) => html`<option value="${n}">`)}</datalist>
</form>
${chips.length > 0 ? html`<div class="chips">${chips}</div>` : ""}
${problem === null ? await facets(ctx, scope, pairs) : ""}`;

  const first = query.after !== undefined ? href("/jobs", without(pairs, ["after"])) : null;
  const next = page?.nextCursor ? href("/jobs", [...without(pairs, ["after"]), ["after", page.nextCursor]]) : null;
  const body =
    problem !== null
      ? empty("This filter cannot be read", problem)
      : page!.jobs.length === 0
        ? empty(pairs.length > 0 ? "No jobs match these filters" : "No jobs yet", pairs.length > 0 ? html`<a href="/jobs">Clear the filters</a>` : "Enqueued jobs appear here, newest first.")
        : html`${jobsTable(page!.jobs, view)}
<div class="pager"><span>${formatCount(page!.jobs.length)} jobs on this page · newest first</span><span class="btns">
<a class="btn btn-sm" href="${first ?? "#"}" aria-disabled="${String(first === null)}">« First page</a>
<a class="btn btn-sm" href="${next ?? "#"}" aria-disabled="${String(next === null)}" data-test="next-page">Older »</a></span></div>`;

  const enqueue = view.can("enqueue") ? html`<a class="btn btn-sm btn-primary" href="/enqueue" data-test="enqueue-link">Enqueue a job</a>` : undefined;
  const content = html`${card("Filters", form, enqueue === undefined ? {} : { actions: enqueue })}
${card(html`Jobs`, body, { flush: true, ...(query.after === undefined ? { live: "jobs" } : {}) })}`;
  return { title: "Jobs", section: "jobs", content };
}
