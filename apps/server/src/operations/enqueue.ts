import {
  type Bounds, BoundExceededError, type DependencyMode, type EnqueueResult, type Instant, type JobState, type JobStore,
  MAX_INSTANT, type NewJob, InvalidInputError, errorFromRejection,
} from "@belay/contract";
import { createJobId, encodePayload, parseTags, toDisposition } from "@belay/core";
import { parseIsoInstant } from "../api/instants.js";
import { HttpError, toHttpError } from "../http/errors.js";
import type { JobCatalog } from "./catalog.js";

/** One job as the API receives it (already shape-checked by the route schema). */
export interface EnqueueInput {
  readonly id?: string | undefined;
  readonly jobName: string;
  readonly queue?: string | undefined;
  /** Any JSON value; absent means `null`. */
  readonly payload?: unknown;
  /** Strict ISO 8601 text (see `parseIsoInstant`) or epoch milliseconds. */
  readonly runAt?: string | number | undefined;
  readonly delayMs?: number | undefined;
  readonly parents?: readonly string[] | undefined;
  readonly dependencyMode?: DependencyMode | undefined;
  /** `"label"` or `"key=value"`. */
  readonly tags?: readonly string[] | undefined;
  readonly traceContext?: string | undefined;
}

/** What became of one job: `duplicate` leaves the existing job unchanged. */
export interface EnqueueReceipt {
  readonly id: string;
  readonly status: "created" | "duplicate";
  readonly state: JobState;
}

/** Store field names as the API spells them. */
function apiField(field: string): string {
  return field.replace(/^parentIds/, "parents").replace(/^dueAt$/, "runAt");
}

function dueAt(input: EnqueueInput, now: Instant): Instant {
  if (input.runAt !== undefined && input.delayMs !== undefined) {
    throw new InvalidInputError("runAt", "give either runAt or delayMs, not both");
  }
  if (input.delayMs !== undefined) {
    const at = now + input.delayMs;
    if (!Number.isSafeInteger(at) || at > MAX_INSTANT) throw new InvalidInputError("delayMs", "must not put the job past 9999-12-31T23:59:59.999Z");
    return at;
  }
  if (input.runAt === undefined) return now;
  if (typeof input.runAt === "number") return input.runAt;
  const parsed = parseIsoInstant(input.runAt);
  if (!parsed.ok) throw new InvalidInputError("runAt", parsed.problem);
  return parsed.at;
}

/**
 * Turns one API job into a store job: its definition's schema validates the payload and supplies
 * the default queue and tags when the server knows the definitions. Errors name `<prefix>field`.
 */
export async function toNewJob(input: EnqueueInput, catalog: JobCatalog, bounds: Bounds, now: Instant, prefix: string): Promise<NewJob> {
  try {
    checkJobName(input.jobName, bounds);
    const job = catalog.resolve(input.jobName);
    let payload: string;
    if (job === null) {
      payload = JSON.stringify(input.payload ?? null);
    } else {
      payload = await encodePayload(job, input.payload);
    }
    return {
      id: input.id ?? createJobId(now),
      jobName: input.jobName,
      queue: input.queue ?? job?.queue ?? "default",
      payload,
      dueAt: dueAt(input, now),
      parentIds: input.parents ?? [],
      dependencyMode: input.dependencyMode ?? "onSuccess",
      tags: [...(job?.tags ?? []), ...parseTags(input.tags ?? [], "tags")],
      traceContext: input.traceContext ?? null,
      retry: job?.retry === undefined ? null : toDisposition(job.retry),
    };
  } catch (error) {
    throw toHttpError(error, (f) => `${prefix}${apiField(f)}`);
  }
}

/** The store checks job names too; the server must first, before it looks the name up in its catalog. */
export function checkJobName(jobName: string, bounds: Bounds, field = "jobName"): void {
  if (jobName.length === 0) throw new InvalidInputError(field, "must be a non-empty string");
  if (jobName.length > bounds.jobNameLength) {
    throw new BoundExceededError("BELAY_JOB_NAME_TOO_LONG", { field, limit: bounds.jobNameLength, actual: jobName.length });
  }
}

/** The receipts of a store enqueue, or the error of its first rejected job (nothing was written then). */
export function receiptsOf(results: readonly EnqueueResult[], prefixOf: (index: number) => string): EnqueueReceipt[] {
  const rejected = results.findIndex((r) => r.status === "rejected");
  if (rejected >= 0) {
    const result = results[rejected]!;
    if (result.status === "rejected") {
      throw toHttpError(errorFromRejection(result.rejection, result.id), (f) => `${prefixOf(rejected)}${apiField(f)}`);
    }
  }
  return results.map((result) => {
    if (result.status === "created" || result.status === "duplicate") return { id: result.id, status: result.status, state: result.state };
    // notWritten without a rejected sibling would break the contract: a server-side fault.
    throw new HttpError(500, { code: "BELAY_INTERNAL", field: null, message: "the store did not write the batch" });
  });
}

/** Enqueues jobs atomically: all are written, or none and the first fault is answered. With `actor` (an operator in the dashboard), each created job is audited. */
export async function enqueueJobs(
  store: JobStore,
  catalog: JobCatalog,
  inputs: readonly EnqueueInput[],
  now: Instant,
  actor?: string,
): Promise<EnqueueReceipt[]> {
  const { enqueueBatch } = store.capabilities.bounds;
  if (inputs.length > enqueueBatch) {
    throw new HttpError(422, {
      code: "BELAY_BATCH_TOO_LARGE",
      field: "jobs",
      message: `jobs exceeds enqueueBatch: ${inputs.length} > ${enqueueBatch}`,
      bound: "enqueueBatch",
      limit: enqueueBatch,
      actual: inputs.length,
    });
  }
  const jobs: NewJob[] = [];
  for (const [i, input] of inputs.entries()) jobs.push(await toNewJob(input, catalog, store.capabilities.bounds, now, `jobs[${i}].`));
  let results: readonly EnqueueResult[];
  try {
    results = await store.enqueue(actor === undefined ? { jobs, now } : { jobs, now, actor });
  } catch (error) {
    throw toHttpError(error, (f) => `jobs.${f}`);
  }
  return receiptsOf(results, (i) => `jobs[${i}].`);
}

/** Enqueues a workflow: its members, connected by `parents`, all written or none. */
export async function enqueueWorkflow(
  store: JobStore,
  catalog: JobCatalog,
  input: { readonly id?: string | undefined; readonly name: string; readonly jobs: readonly EnqueueInput[] },
  now: Instant,
): Promise<{ readonly id: string; readonly status: "created" | "duplicate"; readonly jobs: readonly EnqueueReceipt[] }> {
  const jobs: NewJob[] = [];
  for (const [i, member] of input.jobs.entries()) jobs.push(await toNewJob(member, catalog, store.capabilities.bounds, now, `jobs[${i}].`));
  const id = input.id ?? createJobId(now);
  let result;
  try {
    result = await store.enqueueWorkflow({ workflow: { id, name: input.name, jobs }, now });
  } catch (error) {
    throw toHttpError(error, (f) => (f.startsWith("workflow.") ? f.slice("workflow.".length) : f));
  }
  if (result.status === "duplicate") return { id, status: "duplicate", jobs: [] };
  if (result.status === "rejected") {
    const index = result.jobId === null ? -1 : jobs.findIndex((j) => j.id === result.jobId);
    const prefix = index >= 0 ? `jobs[${index}].` : "";
    throw toHttpError(errorFromRejection(result.rejection, result.jobId), (f) =>
      f.startsWith("workflow.") ? f.slice("workflow.".length) : `${prefix}${apiField(f)}`,
    );
  }
  return { id, status: "created", jobs: result.jobs.map((r) => ({ id: r.id, status: "created" as const, state: r.state })) };
}
