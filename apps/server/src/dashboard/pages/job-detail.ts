import { type JobRecord, type TransitionCause, type TransitionRecord, isTerminalState } from "@belay/contract";
import { type ServerContext, parseJson } from "../../context.js";
import { type View, actionForm, card, empty, jobLink, stateBadge, tagPill, time } from "../components.js";
import { STATE_CLASS, STATE_LABELS, formatDuration, formatInstant, tagText } from "../format.js";
import { type SafeHtml, html } from "../html.js";
import type { PageResult } from "./page-result.js";

function locked(what: string): SafeHtml {
  return html`<div class="locked"><svg width="16" height="16" viewBox="0 0 24 24" fill="none" stroke="currentColor" stroke-width="1.8" aria-hidden="true"><rect x="5" y="11" width="14" height="10" rx="2"/><path d="M8 11V8a4 4 0 0 1 8 0v3"/></svg>${what} hidden: needs the viewSensitive permission.</div>`;
}

function pretty(text: string | null): string {
  const value = parseJson(text);
  return typeof value === "string" ? value : JSON.stringify(value, null, 2);
}

/** What each recorded cause means, in words. */
const CAUSE_LABELS: Readonly<Record<TransitionCause, string>> = {
  enqueued: "Enqueued",
  minted: "Minted by its schedule",
  triggered: "Triggered from its schedule",
  parentsResolved: "Parents done",
  parentFailed: "Cancelled: a parent did not succeed",
  claimed: "Claimed",
  succeeded: "Succeeded",
  retryScheduled: "Retry scheduled",
  failed: "Failed at the attempt ceiling",
  cancelled: "Cancelled",
  unroutable: "Quarantined: cannot be routed",
  released: "Released by a stopping worker",
  leaseExpired: "Lease expired",
  operatorCancelled: "Cancelled by an operator",
  requeued: "Requeued by an operator",
};

/** A transition in words: its recorded cause, the state it entered, and the worker that wrote it. */
function transitionLabel(t: TransitionRecord): { title: string; detail: string } {
  const title = t.cause === null ? STATE_LABELS[t.state] : CAUSE_LABELS[t.cause];
  const parts = [t.cause === null || CAUSE_LABELS[t.cause] !== STATE_LABELS[t.state] ? `→ ${STATE_LABELS[t.state]}` : "", t.attempt > 0 ? `attempt ${t.attempt}` : ""];
  if (t.workerId !== null) parts.push(t.cause === "leaseExpired" ? `lease of ${t.workerId}` : `by ${t.workerId}`);
  return { title, detail: parts.filter(Boolean).join(" · ") };
}

function timeline(history: readonly TransitionRecord[], view: View, sensitive: boolean, policy: string): SafeHtml {
  if (policy === "off") return empty("History is off", "This store records no transitions (history policy: off).");
  if (history.length === 0) return empty("No transitions recorded");
  const items = history
    .map((t, i) => {
      const previous = history[i - 1];
      const label = transitionLabel(t);
      const waited = previous ? `+${formatDuration(t.at - previous.at)}` : "";
      const detail =
        t.failureDetail === null
          ? ""
          : sensitive
            ? html`<details><summary>Failure detail</summary><pre class="trace">${t.failureDetail}</pre></details>`
            : html`<div class="muted">Failure detail hidden (viewSensitive)</div>`;
      return html`<li><span class="dot s-${STATE_CLASS[t.state]}"></span><div><div class="what">${label.title}</div><div class="muted">${[label.detail, waited].filter(Boolean).join(" · ")}</div>${detail}</div>
<div class="meta"><span title="${formatInstant(t.at)}">${formatInstant(t.at).slice(11, 19)}</span><br>${time(t.at, view.now)}</div></li>`;
    })
    .reverse();
  const dropped = history[0] !== undefined && history[0].ordinal > 1 ? html`<p class="notice">${history[0].ordinal - 1} older transitions were dropped (the store keeps the newest).</p>` : "";
  return html`<ol class="timeline">${items}</ol>${dropped}`;
}

function actions(job: JobRecord, view: View): SafeHtml {
  const buttons: SafeHtml[] = [];
  const id = encodeURIComponent(job.id);
  if (!isTerminalState(job.state) && view.can("cancel")) {
    const running = job.state === "leased";
    buttons.push(
      actionForm(view, `/actions/jobs/${id}/cancel`, running ? "Request cancel" : "Cancel job", {
        confirm: running ? `Ask the running job ${job.id} to stop?` : `Cancel job ${job.id}? It will not run.`,
        variant: "danger",
        testId: "cancel",
      }),
    );
  }
  if ((job.state === "deadLettered" || job.state === "quarantined") && view.can("requeue")) {
    buttons.push(actionForm(view, `/actions/jobs/${id}/requeue`, "Requeue", { confirm: `Requeue job ${job.id}? Its attempts reset to 0.`, variant: "primary", testId: "requeue" }));
  }
  return html`${buttons}`;
}

/** One job: summary, dependencies, payload and output (viewSensitive), timeline, actions. */
export async function jobDetailPage(ctx: ServerContext, view: View, id: string): Promise<PageResult> {
  const { store } = ctx;
  const job = await store.getJob(id);
  if (job === null) {
    return {
      title: "Job not found",
      section: "jobs",
      crumbs: [["Jobs", "/jobs"]],
      content: card("Unknown job", empty(`No job ${id}`, "It may never have existed, or retention purged it.")),
      status: 404,
    };
  }
  const sensitive = view.can("viewSensitive");
  const [history, edges, output] = await Promise.all([
    store.getJobHistory(id),
    store.getDependencies(id),
    sensitive && job.state === "succeeded" ? store.getJobOutput(id) : Promise.resolve(null),
  ]);
  const kv = (label: string, value: SafeHtml | string | number | null) => html`<dt>${label}</dt><dd>${value ?? html`<span class="muted">—</span>`}</dd>`;
  const summary = html`<dl class="kv">
${kv("Job name", html`<a class="jn" href="/jobs?jobName=${encodeURIComponent(job.jobName)}">${job.jobName}</a>`)}
${kv("Queue", html`<a href="/jobs?queue=${encodeURIComponent(job.queue)}">${job.queue}</a>`)}
${kv("State", html`${stateBadge(job.state)}${job.cancelRequested ? html` <span class="pill warn">cancel requested</span>` : ""}`)}
${kv("Attempt", html`<span class="num">${job.attempt}</span>${job.releases > 0 ? html` <span class="muted">(${job.releases} released)</span>` : ""}`)}
${kv("Enqueued", html`${formatInstant(job.enqueuedAt)} · ${time(job.enqueuedAt, view.now)}`)}
${kv("Due", html`${formatInstant(job.dueAt)} · ${time(job.dueAt, view.now)}`)}
${job.state === "leased" ? kv("Lease", html`<span class="mono">${job.leaseOwner ?? ""}</span> · ends ${time(job.leaseExpiresAt, view.now)}`) : ""}
${job.terminalAt !== null ? kv("Ended", html`${formatInstant(job.terminalAt)} · ${time(job.terminalAt, view.now)}`) : ""}
${job.terminalCause !== null ? kv("Cause", job.terminalCause) : ""}
${job.scheduleId !== null ? kv("Schedule", html`<a href="/jobs?scheduleId=${encodeURIComponent(job.scheduleId)}">${job.scheduleId}</a>`) : ""}
${job.workflowId !== null ? kv("Workflow", html`<a href="/workflows/${encodeURIComponent(job.workflowId)}" data-test="workflow-link">${job.workflowId}</a> · <a class="muted" href="/jobs?workflowId=${encodeURIComponent(job.workflowId)}">its jobs</a>`) : ""}
${job.parentIds.length > 0 ? kv("Dependency mode", job.dependencyMode === "onSuccess" ? "runs when every parent succeeded" : "runs when every parent ended") : ""}
${job.traceContext !== null ? kv("Trace context", html`<span class="mono">${job.traceContext}</span>`) : ""}
${kv("Tags", job.tags.length === 0 ? html`<span class="muted">none</span>` : html`<span class="tags">${job.tags.map((t) => tagPill(t, `/jobs?tag=${encodeURIComponent(tagText(t))}`))}</span>`)}
</dl>`;

  const parents = edges?.parents ?? [];
  const children = edges?.children ?? [];
  const edgeTable = (rows: readonly { jobId: string; state: JobRecord["state"]; gating?: boolean }[], kind: string) =>
    rows.length === 0
      ? html`<p class="notice">No ${kind}.</p>`
      : html`<ul class="edges">${rows.map(
          (r) => html`<li>${jobLink(r.jobId, 30)}${stateBadge(r.state)}${r.gating ? html`<span class="pill info">holding it back</span>` : ""}</li>`,
        )}</ul>`;
  const dependencies =
    parents.length + children.length === 0
      ? ""
      : card(
          "Dependencies",
          html`<div class="cols even"><div><h3 class="notice">Parents</h3>${edgeTable(parents, "parents")}</div><div><h3 class="notice">Children</h3>${edgeTable(children, "children")}</div></div>`,
        );

  const data = sensitive
    ? html`<h3 class="notice">Payload</h3><pre class="json">${pretty(job.payload)}</pre>
${job.state === "succeeded" ? html`<h3 class="notice">Output</h3>${output === null ? html`<p class="notice">No output.</p>` : html`<pre class="json">${pretty(output)}</pre>`}` : ""}`
    : locked("Payload and output");

  const content = html`<div class="head"><span class="id">${job.id}</span>${stateBadge(job.state)}<div class="acts" data-live="actions">${actions(job, view)}</div></div>
<div class="cols" data-live="detail">
<div class="stack">${card("Summary", summary)}${dependencies}${card("Data", data)}</div>
${card(html`Timeline <span class="sub">${history.length} transitions</span>`, timeline(history, view, sensitive, store.capabilities.historyPolicy))}
</div>`;
  return { title: `Job ${job.jobName}`, section: "jobs", crumbs: [["Jobs", "/jobs"], [job.queue, `/jobs?queue=${encodeURIComponent(job.queue)}`]], content };
}
