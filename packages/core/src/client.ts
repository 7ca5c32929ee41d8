import {
  type Actor, type CancelResult, type DependencyMode, type EnqueueResult, type Instant, type JobState, type JobStore,
  type NewJob, type QueueActionResult, type RemoveScheduleResult, type RequeueResult, type TriggerScheduleResult,
  type UpsertScheduleResult, BelayError, InvalidInputError, errorFromRejection,
} from "@belay/contract";
import type { StandardSchemaV1 } from "@standard-schema/spec";
import { type Clock, systemClock } from "./clock.js";
import { parseCron } from "./cron-planner.js";
import type { AnyJobDefinition, PayloadOf } from "./define-job.js";
import { createJobId } from "./ids.js";
import { toDisposition } from "./retry.js";
import { type TagInput, parseTags } from "./tags.js";
import type { BelayTelemetry } from "./telemetry.js";

/** Options of one enqueue. */
export interface EnqueueOptions {
  /** Caller-chosen id: the idempotency key. A repeat returns the existing job (`duplicate`). */
  readonly id?: string;
  /** Run after this many milliseconds. */
  readonly delayMs?: number;
  /** Run at this time (a `Date` or epoch milliseconds). */
  readonly runAt?: Date | Instant;
  /** Override the job type's default queue. */
  readonly queue?: string;
  /** Jobs that must end first: ids, receipts or requests. */
  readonly parents?: readonly (string | { readonly id: string })[];
  /** Default `onSuccess`. */
  readonly dependencyMode?: DependencyMode;
  readonly tags?: readonly TagInput[];
  readonly traceContext?: string;
}

/** A job ready to enqueue, made by {@link request}; it has its id already, so others can name it as a parent. */
export interface JobRequest<TInput = unknown> {
  readonly id: string;
  readonly job: AnyJobDefinition;
  readonly payload: TInput;
  readonly options: EnqueueOptions;
}

/** What an enqueue did. */
export interface EnqueueReceipt {
  readonly id: string;
  /** `duplicate`: a job with this id already existed and was left unchanged. */
  readonly status: "created" | "duplicate";
  readonly state: JobState;
}

/** Options of an enqueue call that may run inside the caller's transaction. */
export interface TransactionOptions {
  /** The caller's open transaction, in the form the store documents. */
  readonly tx?: unknown;
}

/** Who performs an operator action, for the audit log. */
export interface ActorOptions {
  readonly actor?: Actor;
}

/** A recurring schedule, typed by its job. */
export interface ScheduleOptions<TJob extends AnyJobDefinition> {
  readonly id: string;
  /** 5 fields, or 6 with seconds first. */
  readonly cron: string;
  /** IANA time zone; default UTC. */
  readonly timeZone?: string;
  readonly job: TJob;
  readonly payload: PayloadOf<TJob>;
  readonly queue?: string;
  readonly tags?: readonly TagInput[];
  /** Missed ticks after downtime: `skip` (default) or `coalesce` (one make-up run). */
  readonly catchUp?: "skip" | "coalesce";
  /** Skip a tick while an earlier instance is still live. Default false. */
  readonly noOverlap?: boolean;
}

/** The codes of the errors `@belay/core` throws itself (besides the contract's). */
export type CoreErrorCode = "BELAY_PAYLOAD_INVALID";

/** Thrown when a payload fails its job type's schema at enqueue. */
export class PayloadInvalidError extends BelayError {
  readonly jobName: string;
  readonly issues: readonly StandardSchemaV1.Issue[];

  constructor(jobName: string, issues: readonly StandardSchemaV1.Issue[]) {
    const first = issues[0];
    const path = first?.path?.map((p) => (typeof p === "object" ? String(p.key) : String(p))).join(".");
    super("BELAY_PAYLOAD_INVALID" satisfies CoreErrorCode, `invalid payload for ${jobName}${path ? ` at ${path}` : ""}: ${first?.message ?? "rejected"}`);
    this.jobName = jobName;
    this.issues = issues;
  }
}

/** Pairs a job type with a payload and options, assigning the job its id now. */
export function request<TJob extends AnyJobDefinition>(
  job: TJob,
  payload: PayloadOf<TJob>,
  options: EnqueueOptions = {},
): JobRequest<PayloadOf<TJob>> {
  return { id: options.id ?? createJobId(), job, payload, options };
}

/** Validates `payload` against the job's schema (if any) and serialises it. */
export async function encodePayload(job: AnyJobDefinition, payload: unknown): Promise<string> {
  if (job.schema !== undefined) {
    const result = await job.schema["~standard"].validate(payload);
    if (result.issues !== undefined) throw new PayloadInvalidError(job.name, result.issues);
  }
  let text: string | undefined;
  try {
    text = JSON.stringify(payload);
  } catch (error) {
    throw new InvalidInputError("payload", `must be JSON-serialisable: ${(error as Error).message}`);
  }
  return text ?? "null";
}

/**
 * What applications call: enqueue typed jobs (one, many, a workflow; optionally inside their own
 * transaction), manage schedules and perform operator actions.
 *
 * @example
 * ```ts
 * const client = new Client({ store });
 * const receipt = await client.enqueue(sendWelcome, { userId: "u1" }, { delayMs: 60_000 });
 * ```
 */
export class Client {
  readonly store: JobStore;
  readonly #clock: Clock;
  readonly #actor: Actor;
  readonly #telemetry: BelayTelemetry | undefined;

  constructor(options: {
    readonly store: JobStore;
    readonly clock?: Clock;
    readonly actor?: Actor;
    /** OpenTelemetry spans and metrics (see `belayTelemetry`); off when omitted. */
    readonly telemetry?: BelayTelemetry;
  }) {
    this.store = options.store;
    this.#clock = options.clock ?? systemClock;
    this.#actor = options.actor ?? "system";
    this.#telemetry = options.telemetry;
  }

  /** Enqueues one job. Throws on a bad payload or a bound violation; nothing is written then. */
  async enqueue<TJob extends AnyJobDefinition>(
    job: TJob,
    payload: PayloadOf<TJob>,
    options: EnqueueOptions & TransactionOptions = {},
  ): Promise<EnqueueReceipt> {
    const [receipt] = await this.enqueueMany([request(job, payload, options)], options);
    return receipt!;
  }

  /** Enqueues several jobs atomically (all or nothing). Requests may name each other as parents. */
  async enqueueMany(requests: readonly JobRequest<any>[], options: TransactionOptions = {}): Promise<EnqueueReceipt[]> {
    const now = this.#clock.now();
    let jobs = await Promise.all(requests.map((r) => this.#toNewJob(r, now)));
    const send = this.#telemetry?.startSend(jobs, this.store.capabilities.bounds.traceContextLength);
    if (send !== undefined) jobs = send.jobs;
    let results: readonly EnqueueResult[];
    try {
      results = await this.store.enqueue({ jobs, now, ...(options.tx === undefined ? {} : { tx: options.tx }) });
    } catch (error) {
      send?.end({ error });
      throw error;
    }
    send?.end({ statuses: results.map((r) => r.status) });
    return results.map((result, i) => toReceipt(result, jobs[i]!.id, results));
  }

  /**
   * Enqueues a workflow: named, atomic, every parent a member. Its status is derived from its
   * members (`store.getWorkflow(id)`).
   */
  async enqueueWorkflow(
    workflow: { readonly id?: string; readonly name: string; readonly jobs: readonly JobRequest<any>[] },
    options: TransactionOptions = {},
  ): Promise<{ readonly id: string; readonly status: "created" | "duplicate"; readonly jobs: readonly EnqueueReceipt[] }> {
    const now = this.#clock.now();
    const id = workflow.id ?? createJobId(now);
    let jobs = await Promise.all(workflow.jobs.map((r) => this.#toNewJob(r, now)));
    const send = this.#telemetry?.startSend(jobs, this.store.capabilities.bounds.traceContextLength);
    if (send !== undefined) jobs = send.jobs;
    let result: Awaited<ReturnType<JobStore["enqueueWorkflow"]>>;
    try {
      result = await this.store.enqueueWorkflow({
        workflow: { id, name: workflow.name, jobs },
        now,
        ...(options.tx === undefined ? {} : { tx: options.tx }),
      });
    } catch (error) {
      send?.end({ error });
      throw error;
    }
    send?.end({ statuses: jobs.map(() => (result.status === "created" ? "created" : result.status === "duplicate" ? "duplicate" : "notWritten")) });
    if (result.status === "rejected") throw errorFromRejection(result.rejection, result.jobId);
    if (result.status === "duplicate") return { id, status: "duplicate", jobs: [] };
    return { id, status: "created", jobs: result.jobs.map((r) => ({ id: r.id, status: "created", state: r.state })) };
  }

  /** Creates or redefines a schedule (its cursor is kept on redefinition). Validates the cron first. */
  async upsertSchedule<TJob extends AnyJobDefinition>(schedule: ScheduleOptions<TJob>): Promise<UpsertScheduleResult> {
    const timeZone = schedule.timeZone ?? "UTC";
    parseCron(schedule.cron, timeZone);
    return this.store.upsertSchedule({
      schedule: {
        id: schedule.id,
        cron: schedule.cron,
        timeZone,
        jobName: schedule.job.name,
        queue: schedule.queue ?? schedule.job.queue,
        payload: await encodePayload(schedule.job, schedule.payload),
        tags: [...schedule.job.tags, ...parseTags(schedule.tags ?? [], "tags")],
        catchUp: schedule.catchUp ?? "skip",
        noOverlap: schedule.noOverlap ?? false,
        retry: schedule.job.retry === undefined ? null : toDisposition(schedule.job.retry),
      },
      now: this.#clock.now(),
    });
  }

  removeSchedule(scheduleId: string): Promise<RemoveScheduleResult> {
    return this.store.removeSchedule({ scheduleId });
  }

  /** Runs one extra instance of a schedule now, leaving its cursor alone. */
  triggerSchedule(scheduleId: string, options: ActorOptions = {}): Promise<TriggerScheduleResult> {
    const now = this.#clock.now();
    return this.store.triggerSchedule({ scheduleId, jobId: createJobId(now), actor: options.actor ?? this.#actor, now });
  }

  /** Cancels a pending job now, or asks a running one to stop (cooperatively). */
  cancel(jobId: string, options: ActorOptions = {}): Promise<CancelResult> {
    return this.store.cancelJob({ jobId, actor: options.actor ?? this.#actor, now: this.#clock.now() });
  }

  /** Schedules a dead-lettered or quarantined job again, attempts reset. */
  requeue(jobId: string, options: ActorOptions = {}): Promise<RequeueResult> {
    return this.store.requeueJob({ jobId, actor: options.actor ?? this.#actor, now: this.#clock.now() });
  }

  pauseQueue(queue: string, options: ActorOptions = {}): Promise<QueueActionResult> {
    return this.store.pauseQueue({ queue, actor: options.actor ?? this.#actor, now: this.#clock.now() });
  }

  resumeQueue(queue: string, options: ActorOptions = {}): Promise<QueueActionResult> {
    return this.store.resumeQueue({ queue, actor: options.actor ?? this.#actor, now: this.#clock.now() });
  }

  /** Caps the jobs of `queue` leased at once across the cluster; `null` removes the cap. */
  setConcurrencyLimit(queue: string, limit: number | null, options: ActorOptions = {}): Promise<QueueActionResult> {
    return this.store.setConcurrencyLimit({ queue, limit, actor: options.actor ?? this.#actor, now: this.#clock.now() });
  }

  async #toNewJob(req: JobRequest<any>, now: Instant): Promise<NewJob> {
    const { job, options } = req;
    if (typeof job?.name !== "string") throw new InvalidInputError("job", "must be a job definition from defineJob()");
    const dueAt = dueTime(options, now);
    const parentIds = (options.parents ?? []).map((p, i) => {
      const id = typeof p === "string" ? p : p?.id;
      if (typeof id !== "string") throw new InvalidInputError(`parents[${i}]`, "must be a job id, receipt or request");
      return id;
    });
    return {
      id: req.id,
      jobName: job.name,
      queue: options.queue ?? job.queue,
      payload: await encodePayload(job, req.payload),
      dueAt,
      parentIds,
      dependencyMode: options.dependencyMode ?? "onSuccess",
      tags: [...job.tags, ...parseTags(options.tags ?? [], "tags")],
      traceContext: options.traceContext ?? null,
      // The job type's policy travels with the job, so lease expiry applies it whichever worker
      // sweeps the lease; without one, the sweeping group's default applies.
      retry: job.retry === undefined ? null : toDisposition(job.retry),
    };
  }
}

function dueTime(options: EnqueueOptions, now: Instant): Instant {
  if (options.runAt !== undefined && options.delayMs !== undefined) {
    throw new InvalidInputError("runAt", "give either runAt or delayMs, not both");
  }
  if (options.delayMs !== undefined) {
    if (!Number.isFinite(options.delayMs) || options.delayMs < 0) throw new InvalidInputError("delayMs", "must be a number ≥ 0");
    return now + Math.round(options.delayMs);
  }
  if (options.runAt !== undefined) {
    const at = options.runAt instanceof Date ? options.runAt.getTime() : options.runAt;
    if (!Number.isSafeInteger(at)) throw new InvalidInputError("runAt", "must be a valid Date or epoch milliseconds");
    return at;
  }
  return now;
}

function toReceipt(result: EnqueueResult, id: string, all: readonly EnqueueResult[]): EnqueueReceipt {
  switch (result.status) {
    case "created":
    case "duplicate":
      return { id, status: result.status, state: result.state };
    case "rejected":
      throw errorFromRejection(result.rejection, result.id);
    case "notWritten": {
      const culprit = all.find((r) => r.status === "rejected");
      if (culprit?.status === "rejected") throw errorFromRejection(culprit.rejection, culprit.id);
      throw new InvalidInputError("jobs", "the batch was not written");
    }
  }
}
