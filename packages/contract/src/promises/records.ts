import type { Instant } from "../job.js";

// The records of the durable-promise protocol (version "2026-04-01"), as a promise store keeps
// and answers them. Optional fields are omitted, never `null`, as the protocol's clients expect.

/** The protocol version these records and requests follow. */
export const PROMISE_PROTOCOL_VERSION = "2026-04-01";

/**
 * A promise's state. `pending` until settled, once: by a client (`resolved`, `rejected`,
 * `rejected_canceled`) or by its deadline (`rejected_timedout`, or `resolved` for a timer).
 */
export type PromiseState = "pending" | "resolved" | "rejected" | "rejected_canceled" | "rejected_timedout";

/** Every promise state. */
export const PROMISE_STATES: readonly PromiseState[] = Object.freeze(["pending", "resolved", "rejected", "rejected_canceled", "rejected_timedout"]);

/** The states a client may settle a promise to. */
export type SettleState = "resolved" | "rejected" | "rejected_canceled";

/** A promise's parameter or value: opaque data (the SDK sends base64 text) and headers. */
export interface PromiseValue {
  readonly headers?: Readonly<Record<string, string>>;
  readonly data?: string;
}

/** A promise as the protocol shows it. */
export interface PromiseRecord {
  readonly id: string;
  readonly state: PromiseState;
  readonly param: PromiseValue;
  readonly value: PromiseValue;
  readonly tags: Readonly<Record<string, string>>;
  readonly timeoutAt: Instant;
  readonly createdAt: Instant;
  /** Present once settled. */
  readonly settledAt?: Instant;
}

/**
 * A task's state: `pending` (waiting to be acquired), `acquired` (a worker holds its lease),
 * `suspended` (parked until an awaited promise settles), `halted` (stopped by an operator),
 * `fulfilled` (its promise settled).
 */
export type TaskState = "pending" | "acquired" | "suspended" | "halted" | "fulfilled";

/** Every task state. */
export const TASK_STATES: readonly TaskState[] = Object.freeze(["pending", "acquired", "suspended", "halted", "fulfilled"]);

/** A task as the protocol shows it. The version is its fencing token: it rises only on acquire. */
export interface TaskRecord {
  readonly id: string;
  readonly state: TaskState;
  readonly version: number;
  /** How many awaited promises settled while the task was not suspended (a resume mark). */
  readonly resumes: number;
  /** Present while acquired: the lease duration the holder asked for, in milliseconds. */
  readonly ttl?: number;
  /** Present while acquired: the process holding the lease. */
  readonly pid?: string;
}

/** A schedule of promises: each firing creates a promise from the templates. */
export interface PromiseScheduleRecord {
  readonly id: string;
  readonly cron: string;
  /** The id template: `{{.id}}` is the schedule id, `{{.timestamp}}` the firing's instant. */
  readonly promiseId: string;
  /** Each created promise's deadline, in milliseconds after its firing. */
  readonly promiseTimeout: number;
  readonly promiseParam: PromiseValue;
  readonly promiseTags: Readonly<Record<string, string>>;
  readonly createdAt: Instant;
  readonly nextRunAt: Instant;
  /** Present once it has fired. */
  readonly lastRunAt?: Instant;
}

/** An `execute` message: a task to acquire, for the worker group at its promise's target. */
export interface ExecuteMessage {
  readonly kind: "execute";
  readonly data: { readonly task: { readonly id: string; readonly version: number } };
}

/** An `unblock` message: a promise a listener waits for has settled. */
export interface UnblockMessage {
  readonly kind: "unblock";
  readonly data: { readonly promise: PromiseRecord };
}

/** A message of the outbox. */
export type PromiseMessage = ExecuteMessage | UnblockMessage;

// ---- tags with a meaning --------------------------------------------------------------------

/** The tags the protocol gives a meaning to. */
export const PROMISE_TAGS = Object.freeze({
  /** The address of the worker group that executes the promise: makes a task. */
  target: "resonate:target",
  /** `"true"`: a timer — the deadline resolves the promise instead of timing it out. */
  timer: "resonate:timer",
  /** Not before: the task is not dispatched before this instant (epoch ms). */
  delay: "resonate:delay",
  /** Promises sharing a branch are preloaded together. */
  branch: "resonate:branch",
  /** The schedule that created the promise. */
  schedule: "resonate:schedule",
  /** Lineage: the root of the call graph, the branch and the parent a promise belongs to. */
  origin: "resonate:origin",
  parent: "resonate:parent",
});

/** A value with its absent fields omitted (a `null` header map or data reads as absent). */
export function normalizeValue(value: PromiseValue | null | undefined): PromiseValue {
  if (value == null) return {};
  const out: { headers?: Readonly<Record<string, string>>; data?: string } = {};
  if (value.headers != null) out.headers = value.headers;
  if (value.data != null) out.data = value.data;
  return out;
}

/** The state a promise's deadline settles it to: `resolved` for a timer, else `rejected_timedout`. */
export function timeoutState(tags: Readonly<Record<string, string>>): "resolved" | "rejected_timedout" {
  return tags[PROMISE_TAGS.timer] === "true" ? "resolved" : "rejected_timedout";
}
