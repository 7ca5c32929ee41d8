import {
  type EnqueuePlan,
  type EnqueueResult,
  type Instant,
  type NewJob,
  boundRejection,
  jobStateFromCode,
  refusedEnqueue,
  unknownParentRejection,
  validateNewJob,
} from "@belay/contract";
import type { Io } from "../io.js";
import type { IoContext } from "../transaction.js";
import { findJob, initialStateOf, insertJob } from "./jobs.js";

/**
 * Checks a whole enqueue call before anything is written: each job's own fields, then whether its
 * id exists (a duplicate), then whether its parents exist (in the store, or earlier in the call).
 */
function* plan(ctx: IoContext, jobs: readonly NewJob[]): Io<EnqueuePlan[]> {
  if (jobs.length > ctx.bounds.enqueueBatch) {
    const rejection = boundRejection("BELAY_BATCH_TOO_LARGE", "jobs", ctx.bounds.enqueueBatch, jobs.length);
    return jobs.map((job) => ({ kind: "rejected", id: String(job?.id), rejection }));
  }
  const earlier = new Set<string>();
  const planned: EnqueuePlan[] = [];
  for (const raw of jobs) planned.push(yield* planOne(ctx, raw, earlier));
  return planned;
}

function* planOne(ctx: IoContext, raw: NewJob, earlier: Set<string>): Io<EnqueuePlan> {
  const checked = validateNewJob(raw, ctx.bounds);
  if (!checked.ok) return { kind: "rejected", id: typeof raw?.id === "string" ? raw.id : "", rejection: checked.rejection };
  const { job } = checked;
  if (earlier.has(job.id) || (yield* findJob(job.id)) !== undefined) return { kind: "duplicate", id: job.id };
  for (const parentId of job.parentIds) {
    if (!earlier.has(parentId) && (yield* findJob(parentId)) === undefined) {
      return { kind: "rejected", id: job.id, rejection: unknownParentRejection(parentId) };
    }
  }
  earlier.add(job.id);
  return { kind: "create", job };
}

/**
 * See `JobStore.enqueue`. Per job, in input order: created, duplicate (the existing job's state),
 * or — when any job is rejected — nothing written at all.
 */
export function* enqueue(ctx: IoContext, jobs: readonly NewJob[], now: Instant): Io<EnqueueResult[]> {
  const planned = yield* plan(ctx, jobs);
  if (planned.some((p) => p.kind === "rejected")) return refusedEnqueue(planned);
  const results: EnqueueResult[] = [];
  for (const [i, p] of planned.entries()) {
    if (p.kind === "rejected") throw new Error("unreachable: a rejected plan is never written");
    if (p.kind === "duplicate") {
      results.push({ id: p.id, status: "duplicate", state: jobStateFromCode((yield* findJob(p.id))!.state) });
      continue;
    }
    const initial = yield* initialStateOf(p.job);
    const seq = yield* insertJob(ctx, p.job, initial, now, { scheduleId: null, workflowId: null });
    results.push({ id: p.job.id, status: "created", state: initial.state, seq });
    yield `job ${i} inserted`;
  }
  return results;
}
