import type { Instant } from "../job.js";
import type { PromiseRecord, PromiseScheduleRecord, PromiseState, PromiseValue, SettleState, TaskRecord, TaskState } from "./records.js";

// The requests of the durable-promise protocol as a promise store takes them: the envelope's
// `data` with its `kind` (no head: auth, correlation and version are the server's). Each answers
// with a status of the protocol's table — 200 done (repeats included), 300 (suspend: an awaited
// promise already settled), 400 malformed, 404 not found, 409 wrong state or version, 422 a
// referenced promise is missing or has no task — and the data of that status.

export interface PromiseGetRequest {
  readonly kind: "promise.get";
  readonly id: string;
}

export interface PromiseCreateRequest {
  readonly kind: "promise.create";
  readonly id: string;
  readonly timeoutAt: Instant;
  readonly param?: PromiseValue;
  readonly tags?: Readonly<Record<string, string>>;
}

export interface PromiseSettleRequest {
  readonly kind: "promise.settle";
  readonly id: string;
  readonly state: SettleState;
  readonly value?: PromiseValue;
}

export interface PromiseRegisterCallbackRequest {
  readonly kind: "promise.register_callback";
  /** The promise waited for. */
  readonly awaited: string;
  /** The promise whose task waits (it must have a task). */
  readonly awaiter: string;
}

export interface PromiseRegisterListenerRequest {
  readonly kind: "promise.register_listener";
  readonly awaited: string;
  /** Where the `unblock` message goes, e.g. `poll://uni@group/pid`. */
  readonly address: string;
}

export interface PromiseSearchRequest {
  readonly kind: "promise.search";
  /** Belay's extension: only ids starting with this text. */
  readonly prefix?: string;
  readonly state?: PromiseState;
  /** Every tag given must match. */
  readonly tags?: Readonly<Record<string, string>>;
  /** 1..1000, default 100. */
  readonly limit?: number;
  readonly cursor?: string;
}

export interface TaskGetRequest {
  readonly kind: "task.get";
  readonly id: string;
}

export interface TaskCreateRequest {
  readonly kind: "task.create";
  readonly pid: string;
  readonly ttl: number;
  /** A `promise.create` whose tags name a `resonate:target`. */
  readonly action: PromiseCreateRequest;
}

export interface TaskAcquireRequest {
  readonly kind: "task.acquire";
  readonly id: string;
  readonly version: number;
  readonly pid: string;
  readonly ttl: number;
}

export interface TaskReleaseRequest {
  readonly kind: "task.release";
  readonly id: string;
  readonly version: number;
}

export interface TaskFulfillRequest {
  readonly kind: "task.fulfill";
  readonly id: string;
  readonly version: number;
  /** Settles the task's own promise (same id). */
  readonly action: PromiseSettleRequest;
}

export interface TaskSuspendRequest {
  readonly kind: "task.suspend";
  readonly id: string;
  readonly version: number;
  /** At least one; each with `awaiter` = the task and `awaited` another promise. */
  readonly actions: readonly PromiseRegisterCallbackRequest[];
}

export interface TaskFenceRequest {
  readonly kind: "task.fence";
  readonly id: string;
  readonly version: number;
  /** Runs only while the task is acquired at `version`; on another promise than the task's. */
  readonly action: PromiseCreateRequest | PromiseSettleRequest;
}

export interface TaskHeartbeatRequest {
  readonly kind: "task.heartbeat";
  readonly pid: string;
  readonly tasks: readonly { readonly id: string; readonly version: number }[];
}

export interface TaskHaltRequest {
  readonly kind: "task.halt";
  readonly id: string;
}

export interface TaskContinueRequest {
  readonly kind: "task.continue";
  readonly id: string;
}

export interface TaskSearchRequest {
  readonly kind: "task.search";
  readonly state?: TaskState;
  readonly limit?: number;
  readonly cursor?: string;
}

export interface ScheduleGetRequest {
  readonly kind: "schedule.get";
  readonly id: string;
}

export interface ScheduleCreateRequest {
  readonly kind: "schedule.create";
  readonly id: string;
  readonly cron: string;
  readonly promiseId: string;
  readonly promiseTimeout: number;
  readonly promiseParam?: PromiseValue;
  readonly promiseTags?: Readonly<Record<string, string>>;
  /**
   * The first firing: the cron's next occurrence after `now`, computed by the caller (the store
   * parses no cron — like `now`, calendar maths comes from above the contract).
   */
  readonly nextRunAt: Instant;
}

export interface ScheduleDeleteRequest {
  readonly kind: "schedule.delete";
  readonly id: string;
}

export interface ScheduleSearchRequest {
  readonly kind: "schedule.search";
  readonly tags?: Readonly<Record<string, string>>;
  /** 1..1000, default 10. */
  readonly limit?: number;
  readonly cursor?: string;
}

/** Every request a promise store takes, by its protocol kind. */
export type PromiseRequest =
  | PromiseGetRequest
  | PromiseCreateRequest
  | PromiseSettleRequest
  | PromiseRegisterCallbackRequest
  | PromiseRegisterListenerRequest
  | PromiseSearchRequest
  | TaskGetRequest
  | TaskCreateRequest
  | TaskAcquireRequest
  | TaskReleaseRequest
  | TaskFulfillRequest
  | TaskSuspendRequest
  | TaskFenceRequest
  | TaskHeartbeatRequest
  | TaskHaltRequest
  | TaskContinueRequest
  | TaskSearchRequest
  | ScheduleGetRequest
  | ScheduleCreateRequest
  | ScheduleDeleteRequest
  | ScheduleSearchRequest;

/** The protocol kinds a promise store takes. */
export type PromiseKind = PromiseRequest["kind"];

/** Every kind, in the protocol's order. */
export const PROMISE_KINDS: readonly PromiseKind[] = Object.freeze([
  "promise.get",
  "promise.create",
  "promise.settle",
  "promise.register_callback",
  "promise.register_listener",
  "promise.search",
  "task.get",
  "task.create",
  "task.acquire",
  "task.release",
  "task.fulfill",
  "task.suspend",
  "task.fence",
  "task.heartbeat",
  "task.halt",
  "task.continue",
  "task.search",
  "schedule.get",
  "schedule.create",
  "schedule.delete",
  "schedule.search",
]);

// ---- responses -----------------------------------------------------------------------------

/** An answer other than success: the status and a message (the protocol's error `data` is a string). */
export interface PromiseFailure {
  readonly status: 400 | 404 | 409 | 422;
  readonly error: string;
}

/** A success: the status and its data. */
export interface PromiseSuccess<D, S extends 200 | 300 = 200> {
  readonly status: S;
  readonly data: D;
}

type Answer<D> = PromiseSuccess<D> | PromiseFailure;

/** The inner answer of a fenced action, as the protocol nests it. */
export type FencedAnswer = { readonly kind: "promise.create" | "promise.settle" } & (PromiseSuccess<{ readonly promise: PromiseRecord }> | PromiseFailure);

/** What each kind answers. */
export interface PromiseResponses {
  readonly "promise.get": Answer<{ readonly promise: PromiseRecord }>;
  readonly "promise.create": Answer<{ readonly promise: PromiseRecord }>;
  readonly "promise.settle": Answer<{ readonly promise: PromiseRecord }>;
  readonly "promise.register_callback": Answer<{ readonly promise: PromiseRecord }>;
  readonly "promise.register_listener": Answer<{ readonly promise: PromiseRecord }>;
  readonly "promise.search": Answer<{ readonly promises: readonly PromiseRecord[]; readonly cursor?: string }>;
  readonly "task.get": Answer<{ readonly task: TaskRecord }>;
  readonly "task.create": Answer<{ readonly task: TaskRecord; readonly promise: PromiseRecord; readonly preload: readonly PromiseRecord[] }>;
  readonly "task.acquire": Answer<{ readonly task: TaskRecord; readonly promise: PromiseRecord; readonly preload: readonly PromiseRecord[] }>;
  readonly "task.release": Answer<Record<string, never>>;
  readonly "task.fulfill": Answer<{ readonly promise: PromiseRecord }>;
  readonly "task.suspend": PromiseSuccess<Record<string, never>> | PromiseSuccess<{ readonly preload: readonly PromiseRecord[] }, 300> | PromiseFailure;
  readonly "task.fence": Answer<{ readonly action: FencedAnswer; readonly preload: readonly PromiseRecord[] }>;
  readonly "task.heartbeat": Answer<Record<string, never>>;
  readonly "task.halt": Answer<Record<string, never>>;
  readonly "task.continue": Answer<Record<string, never>>;
  readonly "task.search": Answer<{ readonly tasks: readonly TaskRecord[]; readonly cursor?: string }>;
  readonly "schedule.get": Answer<{ readonly schedule: PromiseScheduleRecord }>;
  readonly "schedule.create": Answer<{ readonly schedule: PromiseScheduleRecord }>;
  readonly "schedule.delete": Answer<Record<string, never>>;
  readonly "schedule.search": Answer<{ readonly schedules: readonly PromiseScheduleRecord[]; readonly cursor?: string }>;
}

/** The answer to `request`. */
export type PromiseResponse<R extends PromiseRequest = PromiseRequest> = PromiseResponses[R["kind"]];
