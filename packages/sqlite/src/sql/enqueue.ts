import {
  type EnqueuePlan, type EnqueueResult, type EnqueueThroughRequest, type Instant, type JobState, type NewJob,
  type NormalizedNewJob, type TransitionCause, DEPENDENCY_MODE_CODES, JOB_STATE_CODES, TRANSITION_CAUSE_CODES, boundRejection,
  enqueueAuditRecords, jobStateFromCode, refusedEnqueue, unknownParentRejection, validateNewJob,
} from "@belay/contract";
import { type Io, exec, row } from "../io.js";
import { S, type Tables } from "../tables.js";
import { type IoContext, noteDue } from "../transaction.js";
import { initialStateOf } from "./children.js";
import { INSERT_TRANSITION, findJob, recorded, retryJson } from "./jobs.js";
import { auditIo } from "./audit.js";
import { insertTags } from "./tags.js";

// Written as `Io`, so the same statements run on the store's own connection and inside a
// caller's transaction (`caller-transaction.ts`).

const INSERT_JOB = (t: Tables) => `INSERT INTO ${t.jobs} (id, job_name, queue, state, due_at, enqueued_at,
  terminal_at, terminal_cause, dependency_mode, parents_remaining, transition_count, trace_context, schedule_id, workflow_id)
  VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING seq`;

/** What a job is given at enqueue and never changes: its payload and its own retry policy. */
const INSERT_PAYLOAD = (t: Tables) => `INSERT INTO ${t.payloads} (job_seq, payload, retry) VALUES (?, ?, ?)`;

const INSERT_EDGE = (t: Tables) => `INSERT INTO ${t.edges} (child_seq, ordinal, parent_id, parent_seq) VALUES (?, ?, ?, ?)`;

const MARK_PARENT = (t: Tables) => `UPDATE ${t.jobs} SET has_children = 1 WHERE seq = ? AND has_children = 0`;

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
export function* enqueue(ctx: IoContext, request: EnqueueThroughRequest): Io<EnqueueResult[]> {
  const planned = yield* plan(ctx, request.jobs);
  if (planned.some((p) => p.kind === "rejected")) return refusedEnqueue(planned);
  const results: EnqueueResult[] = [];
  for (const [i, p] of planned.entries()) {
    if (p.kind === "rejected") throw new Error("unreachable: a rejected plan is never written");
    if (p.kind === "duplicate") {
      results.push({ id: p.id, status: "duplicate", state: jobStateFromCode((yield* findJob(p.id))!.state) });
      continue;
    }
    const initial = yield* initialStateOf(p.job);
    const seq = yield* insertJob(ctx, p.job, initial, request.now, { cause: "enqueued", scheduleId: null, workflowId: null });
    results.push({ id: p.job.id, status: "created", state: initial.state, seq });
    yield `job ${i} inserted`;
  }
  for (const record of enqueueAuditRecords(request, results)) yield* auditIo(record);
  return results;
}

/** Where a new job comes from: the cause of its first transition, its schedule and workflow. */
export interface JobOrigin {
  readonly cause: Extract<TransitionCause, "enqueued" | "minted" | "triggered">;
  readonly scheduleId: string | null;
  readonly workflowId: string | null;
}

/**
 * Inserts a new job in its initial state with its payload, retry policy, tags, edges and first
 * transition (`origin.cause`, or `parentFailed` for a job born cancelled), and notes a hint when
 * it is due now. Returns its seq.
 */
export function* insertJob(
  ctx: IoContext,
  job: NormalizedNewJob,
  initial: { state: JobState; parentsRemaining: number; terminalCause: string | null; parentSeqs: readonly number[] },
  now: Instant,
  origin: JobOrigin,
): Io<number> {
  const state = JOB_STATE_CODES[initial.state];
  const terminal = state >= S.succeeded;
  const inserted = yield* row<{ seq: number | bigint }>(
    INSERT_JOB,
    job.id,
    job.jobName,
    job.queue,
    state,
    job.dueAt,
    now,
    terminal ? now : null,
    terminal ? initial.terminalCause : null,
    DEPENDENCY_MODE_CODES[job.dependencyMode],
    initial.parentsRemaining,
    recorded(ctx),
    job.traceContext,
    origin.scheduleId,
    origin.workflowId,
  );
  const seq = Number(inserted!.seq);
  yield* exec(INSERT_PAYLOAD, seq, job.payload, retryJson(job.retry));
  yield* insertTags(seq, 0, job.tags);
  for (const [i, parentId] of job.parentIds.entries()) {
    const parentSeq = initial.parentSeqs[i]!;
    yield* exec(INSERT_EDGE, seq, i, parentId, parentSeq);
    yield* exec(MARK_PARENT, parentSeq);
  }
  if (ctx.history !== "off") {
    const cause = initial.state === "cancelled" ? "parentFailed" : origin.cause;
    yield* exec(INSERT_TRANSITION, seq, 1, now, state, 0, null, TRANSITION_CAUSE_CODES[cause], null);
  }
  if (state === S.scheduled) noteDue(ctx, job.queue, job.dueAt, now);
  return seq;
}
