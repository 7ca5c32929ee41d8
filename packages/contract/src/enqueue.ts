import { type Bounds, utf8ByteLength } from "./bounds.js";
import { type BoundErrorCode, boundRejection, type Rejection } from "./errors.js";
import { MAX_COUNT, MAX_DURATION_MS, MAX_INSTANT, textProblem } from "./text.js";
import type { DependencyMode, InitialJobState, Instant, JobState, RetryDisposition, Tag } from "./job.js";
import type { Actor } from "./operator.js";

/** A job to enqueue, as the store receives it: ids generated and the payload already JSON. */
export interface NewJob {
  /** Unique, 1..`bounds.idLength` characters. A repeated id is a `duplicate`, never an overwrite. */
  readonly id: string;
  readonly jobName: string;
  readonly queue: string;
  /** JSON text. The store keeps it verbatim and never parses it. */
  readonly payload: string;
  /** When the job becomes claimable. "Now" and "later" are the same thing. */
  readonly dueAt: Instant;
  /** Up to `bounds.parents` distinct job ids, existing or earlier in the same call; repeats collapse. */
  readonly parentIds?: readonly string[];
  /** Default `onSuccess`. */
  readonly dependencyMode?: DependencyMode;
  readonly tags?: readonly Tag[];
  /** W3C trace context (or any opaque text) carried to the handler verbatim. */
  readonly traceContext?: string | null;
  /**
   * The job's own retry policy (the job type's), stored with it: the attempt ceiling and delays
   * that lease expiry applies to this job whichever process sweeps it. Omitted or `null`: the
   * sweeper's default.
   */
  readonly retry?: RetryDisposition | null;
}

export interface EnqueueRequest {
  readonly jobs: readonly NewJob[];
  readonly now: Instant;
  /**
   * The caller's open transaction, in the form the adapter documents. The jobs then exist if and
   * only if that transaction commits. A store without `capabilities.transactionalEnqueue` throws
   * `TransactionNotSupportedError` rather than ignore it.
   */
  readonly tx?: unknown;
  /**
   * Who enqueues, when an operator does (the dashboard, an API call on someone's behalf): each
   * job the call creates is then audited (`enqueue`, the job's name as detail) with it, in the
   * same transaction. Omitted: not audited, as for jobs an application enqueues.
   */
  readonly actor?: Actor;
}

/**
 * The fate of one job of an enqueue call, in input order. When any job is `rejected`, nothing of
 * the call is written and every other job reads `notWritten`.
 */
export type EnqueueResult =
  | { readonly id: string; readonly status: "created"; readonly state: InitialJobState; readonly seq: number }
  | { readonly id: string; readonly status: "duplicate"; readonly state: JobState }
  | { readonly id: string; readonly status: "rejected"; readonly rejection: Rejection }
  | { readonly id: string; readonly status: "notWritten" };

/**
 * A job whose own fields passed validation, every optional field present (its default when
 * omitted), with parents de-duplicated and tags de-duplicated.
 */
export type NormalizedNewJob = Required<NewJob>;

// Shared by every job a call validates: the normalized job's empty lists, and the rejection
// builders (module functions, so that validating a job allocates none).
const NONE: readonly string[] = Object.freeze([]);
const NO_TAGS = Object.freeze({ ok: true as const, tags: Object.freeze([]) as readonly Tag[] });
const fail = (rejection: Rejection) => ({ ok: false as const, rejection });
const invalid = (field: string, message: string) => fail({ code: "BELAY_INVALID_INPUT", field, message });

/**
 * Checks one job's own fields against `bounds`, in a fixed order every store shares (shape, id,
 * job name, queue, payload size, parents, tags, trace context), and returns the first failure or
 * the normalized job. References to other jobs (parents, duplicates) are the store's to check.
 */
export function validateNewJob(
  job: NewJob,
  bounds: Bounds,
): { readonly ok: true; readonly job: NormalizedNewJob } | { readonly ok: false; readonly rejection: Rejection } {
  if (typeof job !== "object" || job === null) return invalid("job", "must be an object");
  const idProblem = checkId(job.id, "id", bounds);
  if (idProblem) return fail(idProblem);
  const nameProblem = checkJobName(job.jobName, "jobName", bounds);
  if (nameProblem) return fail(nameProblem);
  const queueProblem = checkQueueName(job.queue, "queue", bounds);
  if (queueProblem) return fail(queueProblem);
  const payloadProblem = checkPayload(job.payload, "payload", bounds);
  if (payloadProblem) return fail(payloadProblem);
  if (!isInstant(job.dueAt)) return invalid("dueAt", INSTANT_REASON);

  const mode = job.dependencyMode ?? "onSuccess";
  if (mode !== "onSuccess" && mode !== "onAnyTerminal") {
    return invalid("dependencyMode", "must be onSuccess or onAnyTerminal");
  }
  const rawParents = job.parentIds ?? NONE;
  if (!Array.isArray(rawParents)) return invalid("parentIds", "must be an array of job ids");
  const parentIds: readonly string[] = rawParents.length === 0 ? NONE : [...new Set(rawParents)];
  for (let i = 0; i < parentIds.length; i++) {
    const parentId = parentIds[i];
    const problem = checkId(parentId, `parentIds[${i}]`, bounds);
    if (problem) return fail(problem);
    if (parentId === job.id) return invalid(`parentIds[${i}]`, "a job cannot be its own parent");
  }
  if (parentIds.length > bounds.parents) {
    return fail(boundRejection("BELAY_TOO_MANY_PARENTS", "parentIds", bounds.parents, parentIds.length));
  }

  const rawTags = job.tags ?? NO_TAGS.tags;
  const tagged = Array.isArray(rawTags) && rawTags.length === 0 ? NO_TAGS : normalizeTags(rawTags, "tags", bounds);
  if (!tagged.ok) return tagged;

  const traceContext = job.traceContext ?? null;
  if (traceContext !== null) {
    if (typeof traceContext !== "string") return invalid("traceContext", "must be a string or null");
    const problem = textProblem(traceContext);
    if (problem) return invalid("traceContext", problem);
    if (traceContext.length > bounds.traceContextLength) {
      return fail(
        boundRejection(
          "BELAY_TRACE_CONTEXT_TOO_LONG",
          "traceContext",
          bounds.traceContextLength,
          traceContext.length,
        ),
      );
    }
  }
  const retry = checkRetryDisposition(job.retry ?? null, "retry");
  if (retry !== null && "code" in retry) return fail(retry);
  return {
    ok: true,
    job: {
      retry,
      id: job.id,
      jobName: job.jobName,
      queue: job.queue,
      payload: job.payload,
      dueAt: job.dueAt,
      parentIds,
      dependencyMode: mode,
      tags: tagged.tags,
      traceContext,
    },
  };
}

/**
 * Validates and de-duplicates tags (first occurrence wins, order kept). A label has key `""`;
 * a keyed tag needs a non-empty value.
 */
export function normalizeTags(
  tags: readonly Tag[],
  field: string,
  bounds: Bounds,
): { readonly ok: true; readonly tags: readonly Tag[] } | { readonly ok: false; readonly rejection: Rejection } {
  const invalid = (f: string, message: string) => ({
    ok: false as const,
    rejection: { code: "BELAY_INVALID_INPUT" as const, field: f, message },
  });
  if (!Array.isArray(tags)) return invalid(field, "must be an array of { key, value }");
  const seen = new Set<string>();
  const out: Tag[] = [];
  for (const [i, tag] of tags.entries()) {
    const at = `${field}[${i}]`;
    if (typeof tag !== "object" || tag === null) return invalid(at, "must be { key, value }");
    const { key, value } = tag;
    if (typeof key !== "string") return invalid(`${at}.key`, "must be a string");
    if (typeof value !== "string" || value.length === 0) return invalid(`${at}.value`, "must be a non-empty string");
    const keyProblem = textProblem(key);
    if (keyProblem) return invalid(`${at}.key`, keyProblem);
    const valueProblem = textProblem(value);
    if (valueProblem) return invalid(`${at}.value`, valueProblem);
    if (key.length > bounds.tagKeyLength) {
      return { ok: false, rejection: boundRejection("BELAY_TAG_KEY_TOO_LONG", `${at}.key`, bounds.tagKeyLength, key.length) };
    }
    if (value.length > bounds.tagValueLength) {
      return { ok: false, rejection: boundRejection("BELAY_TAG_TOO_LONG", `${at}.value`, bounds.tagValueLength, value.length) };
    }
    const identity = `${key}\u0000${value}`;
    if (seen.has(identity)) continue;
    seen.add(identity);
    out.push({ key, value });
  }
  if (out.length > bounds.tagsPerJob) {
    return { ok: false, rejection: boundRejection("BELAY_TOO_MANY_TAGS", field, bounds.tagsPerJob, out.length) };
  }
  return { ok: true, tags: out };
}

/** Most delays a retry policy may list. */
export const MAX_RETRY_DELAYS = 1_000;

/**
 * A retry policy checked (`maxAttempts` 1..`MAX_COUNT`, 1..`MAX_RETRY_DELAYS` delays each
 * 0..`MAX_DURATION_MS`), as a frozen copy; `null` for none; or the rejection naming the field.
 */
export function checkRetryDisposition(retry: unknown, field: string): RetryDisposition | null | Rejection {
  if (retry === null || retry === undefined) return null;
  const invalid = (f: string, message: string): Rejection => ({ code: "BELAY_INVALID_INPUT", field: f, message });
  if (typeof retry !== "object") return invalid(field, "must be { maxAttempts, delaysMs } or null");
  const { maxAttempts, delaysMs } = retry as Record<string, unknown>;
  if (typeof maxAttempts !== "number" || !Number.isSafeInteger(maxAttempts) || maxAttempts < 1 || maxAttempts > MAX_COUNT) {
    return invalid(`${field}.maxAttempts`, `must be an integer from 1 to ${MAX_COUNT}`);
  }
  if (!Array.isArray(delaysMs) || delaysMs.length === 0 || delaysMs.length > MAX_RETRY_DELAYS) {
    return invalid(`${field}.delaysMs`, `must hold 1 to ${MAX_RETRY_DELAYS} delays`);
  }
  for (const [i, delay] of delaysMs.entries()) {
    if (typeof delay !== "number" || !Number.isSafeInteger(delay) || delay < 0 || delay > MAX_DURATION_MS) {
      return invalid(`${field}.delaysMs[${i}]`, `must be an integer from 0 to ${MAX_DURATION_MS}`);
    }
  }
  return Object.freeze({ maxAttempts, delaysMs: Object.freeze([...(delaysMs as number[])]) });
}

/** A problem with a non-empty, storable name of at most `limit` characters, or `null`. */
function checkName(value: unknown, field: string, code: BoundErrorCode, limit: number): Rejection | null {
  if (typeof value !== "string" || value.length === 0) {
    return { code: "BELAY_INVALID_INPUT", field, message: "must be a non-empty string" };
  }
  if (value.length > limit) return boundRejection(code, field, limit, value.length);
  const problem = textProblem(value);
  return problem === null ? null : { code: "BELAY_INVALID_INPUT", field, message: problem };
}

/** A problem with an id (job, parent, schedule, workflow, worker, observer), or `null`. */
export function checkId(id: unknown, field: string, bounds: Bounds): Rejection | null {
  return checkName(id, field, "BELAY_ID_TOO_LONG", bounds.idLength);
}

/** A problem with a queue name, or `null`. */
export function checkQueueName(queue: unknown, field: string, bounds: Bounds): Rejection | null {
  return checkName(queue, field, "BELAY_QUEUE_NAME_TOO_LONG", bounds.queueNameLength);
}

/** A problem with a job name, or `null`. */
export function checkJobName(jobName: unknown, field: string, bounds: Bounds): Rejection | null {
  return checkName(jobName, field, "BELAY_JOB_NAME_TOO_LONG", bounds.jobNameLength);
}

/** A problem with a payload (JSON text the store keeps verbatim, within `bounds.payloadBytes`), or `null`. */
export function checkPayload(payload: unknown, field: string, bounds: Bounds): Rejection | null {
  if (typeof payload !== "string") return { code: "BELAY_INVALID_INPUT", field, message: "must be JSON text" };
  // A UTF-16 unit is at most 3 bytes of UTF-8 (a surrogate pair 4 for two): most payloads fit
  // without counting.
  if (payload.length * 3 > bounds.payloadBytes) {
    const bytes = utf8ByteLength(payload);
    if (bytes > bounds.payloadBytes) return boundRejection("BELAY_PAYLOAD_TOO_LARGE", field, bounds.payloadBytes, bytes);
  }
  const problem = textProblem(payload);
  return problem === null ? null : { code: "BELAY_INVALID_INPUT", field, message: problem };
}

const INSTANT_REASON = `must be an integer of epoch milliseconds between 0 and ${MAX_INSTANT} (9999-12-31T23:59:59.999Z)`;

/** Whether `value` is a usable instant: an integer of epoch milliseconds in [0, `MAX_INSTANT`]. */
export function isInstant(value: unknown): value is Instant {
  return typeof value === "number" && Number.isSafeInteger(value) && value >= 0 && value <= MAX_INSTANT;
}

/** Why `value` is not an instant, for messages. */
export const INSTANT_PROBLEM = INSTANT_REASON;

/** One job of an enqueue call after the checks every store shares, before anything is written. */
export type EnqueuePlan =
  | { readonly kind: "create"; readonly job: NormalizedNewJob }
  | { readonly kind: "duplicate"; readonly id: string }
  | { readonly kind: "rejected"; readonly id: string; readonly rejection: Rejection };

/** The rejection of a job naming a parent that exists neither in the store nor earlier in the call. */
export function unknownParentRejection(parentId: string): Rejection {
  return { code: "BELAY_UNKNOWN_PARENT", field: "parentIds", parentId, message: `parent ${parentId} does not exist` };
}

/**
 * Plans a whole enqueue call in the order every store shares: the batch bound, then per job its
 * own fields, whether its id exists (a duplicate: in the store, or earlier in the call), whether
 * its parents exist (in the store, or earlier in the call). `exists` answers for the store;
 * `checked` may pass the jobs' field checks when the caller has run them already.
 */
export function planEnqueue(
  jobs: readonly NewJob[],
  bounds: Bounds,
  exists: (id: string) => boolean,
  checked: readonly ReturnType<typeof validateNewJob>[] = jobs.map((job) => validateNewJob(job, bounds)),
): EnqueuePlan[] {
  if (jobs.length > bounds.enqueueBatch) {
    const rejection = boundRejection("BELAY_BATCH_TOO_LARGE", "jobs", bounds.enqueueBatch, jobs.length);
    return jobs.map((job) => ({ kind: "rejected", id: String(job?.id), rejection }));
  }
  const earlier = new Set<string>();
  return checked.map((result, i): EnqueuePlan => {
    if (!result.ok) {
      const id = jobs[i]?.id;
      return { kind: "rejected", id: typeof id === "string" ? id : "", rejection: result.rejection };
    }
    const { job } = result;
    if (earlier.has(job.id) || exists(job.id)) return { kind: "duplicate", id: job.id };
    for (const parentId of job.parentIds) {
      if (!earlier.has(parentId) && !exists(parentId)) return { kind: "rejected", id: job.id, rejection: unknownParentRejection(parentId) };
    }
    earlier.add(job.id);
    return { kind: "create", job };
  });
}

/** Results of a call with at least one rejected job: the rejections, and `notWritten` for the rest. */
export function refusedEnqueue(plans: readonly EnqueuePlan[]): EnqueueResult[] {
  return plans.map((plan) =>
    plan.kind === "rejected"
      ? { id: plan.id, status: "rejected", rejection: plan.rejection }
      : { id: plan.kind === "create" ? plan.job.id : plan.id, status: "notWritten" },
  );
}
