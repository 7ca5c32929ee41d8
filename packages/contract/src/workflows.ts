import type { Bounds } from "./bounds.js";
import { type EnqueueResult, type NewJob, type NormalizedNewJob, checkId, checkJobName, validateNewJob } from "./enqueue.js";
import { boundRejection, type Rejection } from "./errors.js";
import type { Instant, JobState } from "./job.js";

/** A named group of jobs connected by parent edges, enqueued atomically. */
export interface NewWorkflow {
  readonly id: string;
  /** 1..`bounds.jobNameLength` characters. */
  readonly name: string;
  /** 1..`bounds.workflowJobs` jobs, in any order; every parent must be a member. */
  readonly jobs: readonly NewJob[];
}

export interface EnqueueWorkflowRequest {
  readonly workflow: NewWorkflow;
  readonly now: Instant;
  /** As for `enqueue`. */
  readonly tx?: unknown;
}

/**
 * `created`: the workflow and every member exist (results in input order). `duplicate`: a
 * workflow with this id exists; nothing changed. `rejected`: nothing was written; `jobId` names
 * the first member at fault, or is `null` for a fault of the workflow itself.
 */
export type EnqueueWorkflowResult =
  | { readonly status: "created"; readonly jobs: readonly Extract<EnqueueResult, { status: "created" }>[] }
  | { readonly status: "duplicate"; readonly workflowId: string }
  | { readonly status: "rejected"; readonly jobId: string | null; readonly rejection: Rejection };

/**
 * Derived from the members, never stored: `running` while any member is live; else `failed` if
 * any is dead-lettered or quarantined; else `cancelled` if any is cancelled; else `succeeded`.
 */
export type WorkflowStatus = "running" | "succeeded" | "failed" | "cancelled";

export interface WorkflowRecord {
  readonly id: string;
  readonly name: string;
  readonly createdAt: Instant;
  readonly status: WorkflowStatus;
  readonly jobCount: number;
  /** Members per state (non-zero only). */
  readonly counts: Readonly<Partial<Record<JobState, number>>>;
}

export interface ListWorkflowsRequest {
  readonly after?: string;
  readonly limit?: number;
}

export interface WorkflowPage {
  /** Oldest first. */
  readonly workflows: readonly WorkflowRecord[];
  readonly nextCursor: string | null;
}

/** The status a workflow with these member counts has. */
export function workflowStatus(counts: Readonly<Partial<Record<JobState, number>>>): WorkflowStatus {
  const has = (state: JobState) => (counts[state] ?? 0) > 0;
  if (has("scheduled") || has("awaitingParents") || has("leased")) return "running";
  if (has("deadLettered") || has("quarantined")) return "failed";
  if (has("cancelled")) return "cancelled";
  return "succeeded";
}

type WorkflowRejected = Extract<EnqueueWorkflowResult, { status: "rejected" }>;

function rejected(jobId: string | null, rejection: Rejection): WorkflowRejected {
  return { status: "rejected", jobId, rejection };
}

/**
 * The checks of a workflow itself that need no store — id, name, size — in the order every store
 * shares; `null` when they pass. Run before looking for an existing workflow.
 */
export function checkWorkflow(workflow: NewWorkflow, bounds: Bounds): WorkflowRejected | null {
  if (typeof workflow !== "object" || workflow === null) {
    return rejected(null, { code: "BELAY_INVALID_INPUT", field: "workflow", message: "must be an object" });
  }
  const idProblem = checkId(workflow.id, "workflow.id", bounds);
  if (idProblem) return rejected(null, idProblem);
  const nameProblem = checkJobName(workflow.name, "workflow.name", bounds);
  if (nameProblem) return rejected(null, nameProblem);
  if (!Array.isArray(workflow.jobs) || workflow.jobs.length === 0) {
    return rejected(null, { code: "BELAY_INVALID_INPUT", field: "workflow.jobs", message: "must hold at least one job" });
  }
  if (workflow.jobs.length > bounds.workflowJobs) {
    return rejected(null, boundRejection("BELAY_WORKFLOW_TOO_LARGE", "workflow.jobs", bounds.workflowJobs, workflow.jobs.length));
  }
  return null;
}

/**
 * A workflow's members checked — each one's fields, ids unique and not `taken` by existing jobs,
 * containment (every parent a member), no cycle — and ordered parent-before-child (input order
 * among members ready at the same time), or the first rejection. Every store shares it.
 */
export function planWorkflowMembers(
  workflow: NewWorkflow,
  bounds: Bounds,
  taken: (jobId: string) => boolean,
): { readonly ok: true; readonly members: readonly NormalizedNewJob[] } | { readonly ok: false; readonly result: WorkflowRejected } {
  const reject = (jobId: string | null, rejection: Rejection) => ({ ok: false as const, result: rejected(jobId, rejection) });
  const members = new Map<string, NormalizedNewJob>();
  for (const [i, raw] of workflow.jobs.entries()) {
    const checked = validateNewJob(raw, bounds);
    if (!checked.ok) return reject(typeof raw?.id === "string" ? raw.id : null, checked.rejection);
    const { job } = checked;
    if (members.has(job.id)) {
      return reject(job.id, { code: "BELAY_INVALID_INPUT", field: `workflow.jobs[${i}].id`, message: "repeats another member's id" });
    }
    if (taken(job.id)) {
      return reject(job.id, { code: "BELAY_JOB_EXISTS", field: `workflow.jobs[${i}].id`, message: `job ${job.id} already exists` });
    }
    members.set(job.id, job);
  }
  for (const job of members.values()) {
    for (const parentId of job.parentIds) {
      if (!members.has(parentId)) {
        return reject(job.id, {
          code: "BELAY_WORKFLOW_CONTAINMENT",
          field: "parentIds",
          parentId,
          message: `parent ${parentId} is not a member of workflow ${workflow.id}`,
        });
      }
    }
  }
  // Kahn's algorithm: members whose parents are all placed go next, in input order.
  const ordered: NormalizedNewJob[] = [];
  const placed = new Set<string>();
  while (ordered.length < members.size) {
    const ready = [...members.values()].filter((j) => !placed.has(j.id) && j.parentIds.every((p) => placed.has(p)));
    if (ready.length === 0) {
      const stuck = [...members.values()].find((j) => !placed.has(j.id))!;
      return reject(stuck.id, { code: "BELAY_INVALID_INPUT", field: "parentIds", message: "the workflow's parent edges form a cycle" });
    }
    for (const job of ready) {
      ordered.push(job);
      placed.add(job.id);
    }
  }
  return { ok: true, members: ordered };
}
