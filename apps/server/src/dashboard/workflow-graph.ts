import type { JobSummary } from "@belay/contract";
import { STATE_CLASS, STATE_LABELS, shortId } from "./format.js";
import { type SafeHtml, html } from "./html.js";

const NODE_W = 196;
const NODE_H = 54;
const COL_GAP = 64;
const ROW_GAP = 16;
const PAD = 14;

/** Where each member is drawn: its column is its depth (longest parent chain), its row its place in that column. */
export interface GraphLayout {
  readonly width: number;
  readonly height: number;
  readonly nodes: readonly { readonly job: JobSummary; readonly x: number; readonly y: number }[];
}

/**
 * Lays a workflow out left to right: a member sits one column right of its deepest parent, and
 * within a column members are ordered by their parents' rows (then enqueue order), which keeps
 * most edges short and uncrossed. Parents outside `jobs` are ignored.
 */
export function layoutWorkflow(jobs: readonly JobSummary[]): GraphLayout {
  const byId = new Map(jobs.map((j) => [j.id, j]));
  const depth = new Map<string, number>();
  const depthOf = (job: JobSummary, seen: Set<string>): number => {
    const known = depth.get(job.id);
    if (known !== undefined) return known;
    // A cycle cannot be stored (enqueue refuses it); the guard only keeps a bad store from hanging the page.
    if (seen.has(job.id)) return 0;
    seen.add(job.id);
    const parents = job.parentIds.map((p) => byId.get(p)).filter((p): p is JobSummary => p !== undefined);
    const d = parents.length === 0 ? 0 : 1 + Math.max(...parents.map((p) => depthOf(p, seen)));
    depth.set(job.id, d);
    return d;
  };
  const columns: JobSummary[][] = [];
  for (const job of jobs) (columns[depthOf(job, new Set())] ??= []).push(job);
  const row = new Map<string, number>();
  const nodes: { job: JobSummary; x: number; y: number }[] = [];
  columns.forEach((column, c) => {
    const rank = (j: JobSummary) => {
      const rows = j.parentIds.map((p) => row.get(p)).filter((r): r is number => r !== undefined);
      return rows.length === 0 ? 0 : rows.reduce((a, b) => a + b, 0) / rows.length;
    };
    const ordered = c === 0 ? column : [...column].sort((a, b) => rank(a) - rank(b) || a.seq - b.seq);
    ordered.forEach((job, r) => {
      row.set(job.id, r);
      nodes.push({ job, x: PAD + c * (NODE_W + COL_GAP), y: PAD + r * (NODE_H + ROW_GAP) });
    });
  });
  const rows = Math.max(1, ...columns.map((c) => c.length));
  return {
    width: PAD * 2 + Math.max(1, columns.length) * NODE_W + Math.max(0, columns.length - 1) * COL_GAP,
    height: PAD * 2 + rows * NODE_H + (rows - 1) * ROW_GAP,
    nodes,
  };
}

function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

/**
 * A workflow's members and parent edges as inline SVG (no script): each member a box coloured
 * by its state that links to the job; an edge from a parent that still holds its child back is
 * dashed.
 */
export function workflowGraph(jobs: readonly JobSummary[]): SafeHtml {
  const layout = layoutWorkflow(jobs);
  const at = new Map(layout.nodes.map((n) => [n.job.id, n]));
  const edges = layout.nodes.flatMap(({ job, x, y }) =>
    job.parentIds.flatMap((parentId) => {
      const parent = at.get(parentId);
      if (parent === undefined) return [];
      const x1 = parent.x + NODE_W;
      const y1 = parent.y + NODE_H / 2;
      const x2 = x - 6;
      const y2 = y + NODE_H / 2;
      const bend = Math.max(20, (x2 - x1) / 2);
      const gating = parent.job.state !== "succeeded" && parent.job.terminalAt === null;
      return [
        html`<path class="wf-edge${gating ? " gating" : ""}" data-test="wf-edge" data-from="${parentId}" data-to="${job.id}" d="M${x1} ${y1} C${x1 + bend} ${y1}, ${x2 - bend} ${y2}, ${x2} ${y2}" marker-end="url(#wf-arrow)"/>`,
      ];
    }),
  );
  const nodes = layout.nodes.map(
    ({ job, x, y }) => html`<a href="/jobs/${encodeURIComponent(job.id)}" data-test="wf-node" data-job="${job.id}" data-state="${job.state}"><g class="wf-node s-${STATE_CLASS[job.state]}">
<title>${job.id} · ${job.jobName} · ${STATE_LABELS[job.state]}</title>
<rect x="${x}" y="${y}" width="${NODE_W}" height="${NODE_H}" rx="8"/>
<circle class="wf-dot" cx="${x + 14}" cy="${y + 17}" r="4.5"/>
<text class="wf-name" x="${x + 26}" y="${y + 21}">${clip(job.jobName, 24)}</text>
<text class="wf-id" x="${x + 12}" y="${y + 42}">${shortId(job.id, 17)}</text>
<text class="wf-state" x="${x + NODE_W - 10}" y="${y + 42}" text-anchor="end">${STATE_LABELS[job.state]}</text>
</g></a>`,
  );
  return html`<div class="wf-graph"><svg class="wf" width="${layout.width}" height="${layout.height}" viewBox="0 0 ${layout.width} ${layout.height}" role="img" aria-label="Workflow members and their parent edges">
<defs><marker id="wf-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0 0 L10 5 L0 10 z" fill="#98a2b3"/></marker></defs>
${edges}${nodes}</svg></div>`;
}
