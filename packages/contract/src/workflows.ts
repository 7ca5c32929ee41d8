import type { NewJob, EnqueueResult } from "./enqueue.js";
import type { Rejection } from "./errors.js";
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
