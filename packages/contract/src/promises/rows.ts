import type { Instant } from "../job.js";
import type { PromiseRecord, PromiseScheduleRecord, TaskState } from "./records.js";

// What a promise store keeps: plain rows, no rules. The rules live in the machine
// (`machine.ts`), which reads rows a store loaded inside its transaction and answers with the
// rows to write (`PromiseEffects`); the store writes them in the same transaction.

/**
 * A stored promise: its record, with `settledAt` `null` until settled. While `pending`, `timeoutAt`
 * is its deadline timer (an index on it is the timeout scan).
 */
export interface PromiseRow extends Omit<PromiseRecord, "settledAt"> {
  readonly settledAt: Instant | null;
}

/** A stored task (same id as its promise). `timerAt` is its one timer: pending → retry dispatch, acquired → lease expiry, else `null`. */
export interface TaskRow {
  readonly id: string;
  readonly state: TaskState;
  readonly version: number;
  readonly resumes: number;
  readonly pid: string | null;
  readonly ttl: number | null;
  readonly timerAt: Instant | null;
}

/** A suspended (or running) task waiting on a promise: `awaiter`'s task resumes when `awaited` settles. */
export interface CallbackRow {
  readonly awaited: string;
  readonly awaiter: string;
}

/** A client waiting on a promise at `address`: it gets an `unblock` message when the promise settles. */
export interface ListenerRow {
  readonly promiseId: string;
  readonly address: string;
}

/** A stored schedule of promises: its record, with `lastRunAt` `null` until it fires. `nextRunAt` is its timer. */
export interface PromiseScheduleRow extends Omit<PromiseScheduleRecord, "lastRunAt"> {
  readonly lastRunAt: Instant | null;
}

/**
 * One message waiting in the outbox. Keyed: one `execute` per task — the key is the task id alone
 * (a newer version replaces it; its address is the task's target, fixed) — and one `unblock` per
 * (promise, address). Messages due at the same instant are taken in no particular order. `availableAt` is when it may be taken (again);
 * `revision` rises on every write and take, so an acknowledgement of an older take never
 * deletes a newer message.
 */
export type OutboxRow = OutboxEntry<"execute", number> | OutboxEntry<"unblock", 0>;

/** One kind of {@link OutboxRow}: an `unblock` has no version (0). */
interface OutboxEntry<Kind extends "execute" | "unblock", Version extends number> {
  readonly kind: Kind;
  readonly id: string;
  readonly address: string;
  readonly version: Version;
  readonly availableAt: Instant;
  readonly revision: number;
  /** When this message was written (an `execute` replaced by a newer version is a new message). */
  readonly createdAt: Instant;
  /** How many times it has been taken. */
  readonly takes: number;
}

/**
 * Which messages a taker can deliver: an address listed in `addresses`, or one starting with a
 * prefix of `prefixes` (e.g. `poll://any@group/`, `https://`). `null`: every message.
 */
export interface OutboxFilter {
  readonly addresses: readonly string[];
  readonly prefixes: readonly string[];
}

/** Whether `address` passes `filter`. */
export function outboxAccepts(filter: OutboxFilter | null, address: string): boolean {
  return filter === null || filter.addresses.includes(address) || filter.prefixes.some((prefix) => address.startsWith(prefix));
}

/** An outbox entry to write: an `execute` upserts its task's entry, an `unblock` is inserted once. */
export type OutboxWrite =
  | { readonly kind: "execute"; readonly id: string; readonly address: string; readonly version: number; readonly availableAt: Instant }
  | { readonly kind: "unblock"; readonly id: string; readonly address: string; readonly availableAt: Instant };

// ---- what the machine asks a store to load --------------------------------------------------

/**
 * A set of rows the machine needs, loaded inside the operation's transaction. A SQL store locks
 * what it loads for update (except `branch`, which only feeds preloads), so nothing it decides on
 * can change before it commits.
 */
export type RowKey =
  | { readonly kind: "promise"; readonly id: string }
  | { readonly kind: "awaiters"; readonly promiseId: string }
  | { readonly kind: "listeners"; readonly promiseId: string }
  | { readonly kind: "branch"; readonly branch: string }
  /**
   * The branch of promise `id` (its `resonate:branch` tag), in the same load as the promise: the
   * store answers it as a `branches` entry named by that tag (none when the promise has no
   * branch). Lets a preload ride the first load instead of a second one.
   */
  | { readonly kind: "branchOf"; readonly id: string }
  | { readonly kind: "schedule"; readonly id: string };

/** Rows a store loaded for a set of keys. */
export interface LoadedRows {
  /** For each `promise` key: the promise (or `null`) and its task (or `null`). */
  readonly promises: readonly { readonly id: string; readonly promise: PromiseRow | null; readonly task: TaskRow | null }[];
  /**
   * For each `awaiters` key: the awaiter ids of the callbacks on the promise, and for each awaiter
   * its promise and task (also loaded as if by a `promise` key).
   */
  readonly awaiters: readonly { readonly promiseId: string; readonly awaiters: readonly string[] }[];
  readonly listeners: readonly { readonly promiseId: string; readonly addresses: readonly string[] }[];
  /** For each `branch` key: every promise with that `resonate:branch` tag. */
  readonly branches: readonly { readonly branch: string; readonly promises: readonly PromiseRow[] }[];
  readonly schedules: readonly { readonly id: string; readonly schedule: PromiseScheduleRow | null }[];
}

// ---- what the machine asks a store to write -------------------------------------------------

/**
 * The writes of one operation, applied by the store in the same transaction, in this order:
 * deletions, then rows. A row in `promises`/`tasks`/`schedules` is written whole: inserted when
 * `insert` (a unique violation means a concurrent creator won: rerun the operation), else updated.
 */
export interface PromiseEffects {
  readonly promises: readonly { readonly row: PromiseRow; readonly insert: boolean }[];
  readonly tasks: readonly { readonly row: TaskRow; readonly insert: boolean }[];
  /** Every callback on these promises (awaited) goes. */
  readonly callbacksOnDeleted: readonly string[];
  /** Every callback of these awaiters goes. */
  readonly callbacksOfDeleted: readonly string[];
  /** Inserted unless present. */
  readonly callbacksAdded: readonly CallbackRow[];
  /** Every listener on these promises goes. */
  readonly listenersDeleted: readonly string[];
  /** Inserted unless present. */
  readonly listenersAdded: readonly ListenerRow[];
  /** The `execute` entries of these tasks go. */
  readonly executesDeleted: readonly string[];
  readonly outbox: readonly OutboxWrite[];
  readonly schedules: readonly { readonly row: PromiseScheduleRow; readonly insert: boolean }[];
  readonly schedulesDeleted: readonly string[];
}

/** Effects that write nothing: a base for effects built by hand (tests, tools) with `{ ...NO_EFFECTS, promises: [...] }`. */
export const NO_EFFECTS: PromiseEffects = Object.freeze({
  promises: [],
  tasks: [],
  callbacksOnDeleted: [],
  callbacksOfDeleted: [],
  callbacksAdded: [],
  listenersDeleted: [],
  listenersAdded: [],
  executesDeleted: [],
  outbox: [],
  schedules: [],
  schedulesDeleted: [],
});

/** Whether `effects` writes nothing. */
export function noEffects(effects: PromiseEffects): boolean {
  return (
    effects.promises.length === 0 &&
    effects.tasks.length === 0 &&
    effects.callbacksOnDeleted.length === 0 &&
    effects.callbacksOfDeleted.length === 0 &&
    effects.callbacksAdded.length === 0 &&
    effects.listenersDeleted.length === 0 &&
    effects.listenersAdded.length === 0 &&
    effects.executesDeleted.length === 0 &&
    effects.outbox.length === 0 &&
    effects.schedules.length === 0 &&
    effects.schedulesDeleted.length === 0
  );
}
