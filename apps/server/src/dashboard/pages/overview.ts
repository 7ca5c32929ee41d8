import { JOB_STATES, type JobState } from "@belay/contract";
import type { WorkerHealth } from "@belay/core";
import type { ServerContext } from "../../context.js";
import type { ThroughputBucket } from "../../monitor/throughput.js";
import { loadQueueOverviews, totalsOf } from "../../monitor/queues.js";
import { type View, card, empty, jobLink, num, stateBadge, time } from "../components.js";
import { STATE_CLASS, STATE_LABELS, formatCount } from "../format.js";
import { type SafeHtml, html, raw } from "../html.js";
import type { PageResult } from "./page-result.js";

const TILE_ORDER: readonly JobState[] = ["scheduled", "awaitingParents", "leased", "succeeded", "deadLettered", "quarantined", "cancelled"];

function niceMax(value: number): number {
  if (value <= 4) return 4;
  const magnitude = 10 ** Math.floor(Math.log10(value));
  for (const step of [1, 2, 2.5, 5, 10]) if (step * magnitude >= value) return step * magnitude;
  return 10 * magnitude;
}

/** Stacked bars of succeeded (green) and failed (red) executions per bucket, as inline SVG. */
export function throughputChart(buckets: readonly ThroughputBucket[], bucketSeconds: number): SafeHtml {
  const width = 600;
  const height = 150;
  const slot = width / Math.max(1, buckets.length);
  const barWidth = Math.max(1, slot - 2);
  const max = niceMax(Math.max(0, ...buckets.map((b) => b.succeeded + b.failed)));
  const y = (n: number) => (n / max) * (height - 6);
  const bars = buckets.map((b, i) => {
    const x = (i * slot + 1).toFixed(1);
    const ok = y(b.succeeded);
    const bad = y(b.failed);
    const title = `${new Date(b.at).toISOString().slice(11, 19)} UTC: ${b.succeeded} succeeded, ${b.failed} failed`;
    return `<g><title>${title}</title>${ok > 0 ? `<rect class="ok" x="${x}" y="${(height - ok).toFixed(1)}" width="${barWidth.toFixed(1)}" height="${ok.toFixed(1)}" rx="1"/>` : ""}${
      bad > 0 ? `<rect class="bad" x="${x}" y="${(height - ok - bad).toFixed(1)}" width="${barWidth.toFixed(1)}" height="${bad.toFixed(1)}" rx="1"/>` : ""
    }</g>`;
  });
  const grid = [0.25, 0.5, 0.75].map((f) => `<line class="gl" x1="0" x2="${width}" y1="${(height - f * (height - 6)).toFixed(1)}" y2="${(height - f * (height - 6)).toFixed(1)}"/>`);
  const minutes = Math.round((buckets.length * bucketSeconds) / 60);
  return html`<svg class="chart" viewBox="0 0 ${width} ${height}" preserveAspectRatio="none" role="img" aria-label="Executions finished per ${bucketSeconds} seconds">${raw(
    `<rect class="bg" width="${width}" height="${height}"/>${grid.join("")}${bars.join("")}`,
  )}</svg>
<div class="axis"><span>${minutes} min ago</span><span>peak scale ${max} per ${bucketSeconds} s</span><span>now</span></div>`;
}

function workerCard(health: WorkerHealth | null, executing: number): SafeHtml {
  if (health === null) {
    return card(
      "Workers",
      html`<div class="legend"><span class="big">${formatCount(executing)}</span><span>executing on workers connected to this store</span></div>
<p class="notice spaced">No worker is embedded in this server. Start one with <code>--with-worker --jobs &lt;module&gt;</code>, or run <code>belay-worker</code> beside it.</p>`,
    );
  }
  const tone = health.status === "running" ? "ok" : health.status === "degraded" ? "warn" : health.status === "halted" ? "bad" : "";
  const groups = health.groups.map((g) => {
    const used = g.pumps.reduce((n, p) => n + p.executing, 0);
    const capacity = g.pumps.reduce((n, p) => n + p.poolSize, 0);
    const pct = capacity === 0 ? 0 : Math.round((used / capacity) * 100);
    return html`<div class="wg"><div class="legend"><b>${g.name}</b><span>${g.pumps.length} pump${g.pumps.length === 1 ? "" : "s"}</span><span class="num">${used} / ${capacity} slots</span><span class="pill ${g.status === "running" ? "ok" : "warn"}">${g.status}</span></div>
<div class="meter"><i class="w${Math.min(100, Math.ceil(pct / 5) * 5)}"></i></div></div>`;
  });
  return card(
    "Embedded worker",
    html`<div class="legend"><span class="big">${formatCount(executing)}</span><span>executing across the store</span><span class="pill ${tone}">${health.status}</span></div>
<div class="wgs">${groups}</div>`,
  );
}

/** The overview: totals per state, throughput, worker, queue depths, executing jobs, recent failures. */
export async function overviewPage(ctx: ServerContext, view: View): Promise<PageResult> {
  const { store } = ctx;
  const [counts, queues, executing, failures] = await Promise.all([
    store.countJobs(),
    loadQueueOverviews(store, ctx.catalog),
    store.listJobs({ states: ["leased"], order: "oldestFirst", limit: 10 }),
    store.listJobs({ states: ["deadLettered", "quarantined"], order: "newestFirst", limit: 8 }),
  ]);
  const totals = totalsOf(counts);
  const buckets = ctx.throughput.series(view.now, 5, 60);
  const succeeded = buckets.reduce((n, b) => n + b.succeeded, 0);
  const failed = buckets.reduce((n, b) => n + b.failed, 0);
  const lastMinute = buckets.slice(-12).reduce((n, b) => n + b.succeeded + b.failed, 0);

  const tiles = html`<div class="stats" data-live="tiles">${TILE_ORDER.map(
    (s) => html`<a class="stat s-${STATE_CLASS[s]}" href="/jobs?state=${s}"><span class="l"><span class="dot s-${STATE_CLASS[s]}"></span>${STATE_LABELS[s]}</span><div class="v num${totals[s] === 0 ? " zero" : ""}">${formatCount(totals[s])}</div></a>`,
  )}</div>`;

  const chart = card(
    html`Throughput <span class="sub">last 5 minutes</span>`,
    html`<div class="legend"><span><i class="sw-ok"></i>${formatCount(succeeded)} succeeded</span><span><i class="sw-bad"></i>${formatCount(failed)} failed</span><span>${formatCount(lastMinute)} in the last minute</span></div>
${throughputChart(buckets, 5)}`,
    { live: "throughput" },
  );

  const queueTable =
    queues.length === 0
      ? empty("No queues yet", "Queues appear when jobs are enqueued.")
      : html`<table class="grid"><thead><tr><th>Queue</th><th>Status</th>${JOB_STATES.map((s) => html`<th class="r">${STATE_LABELS[s]}</th>`)}<th class="r">Limit</th></tr></thead>
<tbody>${queues.map(
          (q) => html`<tr><td><a class="jn" href="/jobs?queue=${encodeURIComponent(q.queue)}">${q.queue}</a></td>
<td>${q.paused ? html`<span class="pill warn">Paused</span>` : html`<span class="pill ok">Active</span>`}</td>
${JOB_STATES.map((s) => html`<td class="r num">${q.counts[s] > 0 ? html`<a href="/jobs?queue=${encodeURIComponent(q.queue)}&state=${s}">${formatCount(q.counts[s])}</a>` : num(0)}</td>`)}
<td class="r num">${q.concurrencyLimit ?? html`<span class="zero">—</span>`}</td></tr>`,
        )}</tbody></table>`;

  const executingList =
    executing.jobs.length === 0
      ? empty("Nothing executing", "Leased jobs show here while their handlers run.")
      : html`<table class="grid"><thead><tr><th>Job</th><th>Job name</th><th>Queue</th><th class="r">Attempt</th><th>Lease ends</th></tr></thead><tbody>${executing.jobs.map(
          (j) => html`<tr><td>${jobLink(j.id, 18)}</td><td class="jn">${j.jobName}</td><td>${j.queue}</td><td class="r num">${j.attempt}</td><td>${time(j.leaseExpiresAt, view.now)}</td></tr>`,
        )}</tbody></table>`;

  const failureList =
    failures.jobs.length === 0
      ? empty("No failures", "Dead-lettered and quarantined jobs show here.")
      : html`<table class="grid"><thead><tr><th>Job</th><th>Job name</th><th>State</th><th>Ended</th></tr></thead><tbody>${failures.jobs.map(
          (j) => html`<tr><td>${jobLink(j.id, 18)}</td><td class="jn">${j.jobName}</td><td>${stateBadge(j.state)}</td><td class="nowrap">${time(j.terminalAt, view.now)}</td></tr>`,
        )}</tbody></table>`;

  const content = html`${tiles}
<div class="cols">${chart}<div data-live="worker">${workerCard(ctx.workerHealth(), totals.leased)}</div></div>
${card(html`Queues <span class="sub">${queues.length}</span>`, queueTable, { flush: true, live: "queues", actions: html`<a class="btn btn-sm" href="/queues">Manage</a>` })}
<div class="cols even">
${card(html`Executing <span class="sub">${formatCount(totals.leased)}</span>`, executingList, { flush: true, live: "executing", actions: html`<a class="btn btn-sm" href="/jobs?state=leased">All</a>` })}
${card(html`Recent failures <span class="sub">${formatCount(totals.deadLettered + totals.quarantined)}</span>`, failureList, {
  flush: true,
  live: "failures",
  actions: html`<a class="btn btn-sm" href="/failures">Failures</a>`,
})}
</div>`;
  return { title: "Overview", section: "overview", content };
}
