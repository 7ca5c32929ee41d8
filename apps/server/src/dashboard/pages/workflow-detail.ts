import { JOB_STATES, type JobSummary, type JobStore } from "@belay/contract";
import type { ServerContext } from "../../context.js";
import { type View, actionForm, card, empty, jobsTable, time } from "../components.js";
import { STATE_CLASS, STATE_LABELS } from "../format.js";
import { html } from "../html.js";
import { workflowGraph } from "../workflow-graph.js";
import type { PageResult } from "./page-result.js";

/** Every member of a workflow, oldest first (a workflow holds at most `bounds.workflowJobs`). */
export async function workflowMembers(store: JobStore, workflowId: string, states?: JobSummary["state"][]): Promise<JobSummary[]> {
  const members: JobSummary[] = [];
  let after: string | undefined;
  do {
    const page = await store.listJobs({ workflowId, order: "oldestFirst", ...(states ? { states } : {}), ...(after === undefined ? {} : { after }) });
    members.push(...page.jobs);
    after = page.nextCursor ?? undefined;
  } while (after !== undefined);
  return members;
}

const STATUS_TONE = { running: "info", succeeded: "ok", failed: "bad", cancelled: "" } as const;

/** One workflow: its status, its members and edges drawn as SVG, the members' table, cancel. */
export async function workflowDetailPage(ctx: ServerContext, view: View, id: string): Promise<PageResult> {
  const crumbs: [string, string][] = [["Workflows", "/workflows"]];
  const workflow = await ctx.store.getWorkflow(id);
  if (workflow === null) {
    return { title: "Workflow not found", section: "workflows", crumbs, content: card("Unknown workflow", empty(`No workflow ${id}`, "It may never have existed, or retention purged its members.")), status: 404 };
  }
  const members = await workflowMembers(ctx.store, id);
  const live = members.filter((m) => m.terminalAt === null).length;
  const cancel =
    workflow.status === "running" && view.can("cancel")
      ? actionForm(view, `/actions/workflows/${encodeURIComponent(id)}/cancel`, "Cancel workflow", {
          confirm: `Cancel every unfinished member of workflow ${id} (${live})? Running ones are asked to stop.`,
          variant: "danger",
          testId: "cancel-workflow",
        })
      : "";
  const legend = html`<span class="tags">${JOB_STATES.filter((s) => (workflow.counts[s] ?? 0) > 0).map((s) => html`<span class="badge s-${STATE_CLASS[s]}">${STATE_LABELS[s]} ${workflow.counts[s]}</span>`)}</span>`;
  const content = html`<div class="head"><span class="id">${workflow.id}</span><span class="pill ${STATUS_TONE[workflow.status]}" data-test="workflow-status">${workflow.status}</span><span class="muted">${workflow.name} · created ${time(workflow.createdAt, view.now)}</span><div class="acts" data-live="wf-actions">${cancel}</div></div>
${card(html`Graph <span class="sub">${workflow.jobCount} jobs</span>`, html`<div class="legend spaced-b">${legend}<span>dashed: the parent still holds its child back</span></div>${workflowGraph(members)}`, { live: "wf-graph" })}
${card("Members", members.length === 0 ? empty("No members left", "Retention purged them.") : jobsTable(members, view), { flush: true, live: "wf-members" })}`;
  return { title: `Workflow ${workflow.name}`, section: "workflows", crumbs, content };
}
