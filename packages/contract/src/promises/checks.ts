import { InvalidInputError } from "../errors.js";
import { utf8ByteLength } from "../bounds.js";
import { MAX_DURATION_MS, MAX_INSTANT, textProblem } from "../text.js";
import { delayOf } from "./machine.js";
import { PROMISE_STATES, PROMISE_TAGS, TASK_STATES } from "./records.js";
import { PROMISE_KINDS, type PromiseRequest } from "./requests.js";

// The checks of every promise request, shared by every store: a malformed request throws
// `InvalidInputError` naming the field (the protocol's 400) before the store touches data.

/** The size limits of a promise store. Every one is enforced loudly, naming the field. */
export interface PromiseBounds {
  /** Promise, task, schedule and process ids, in UTF-8 bytes (what an index entry holds). Default 1024. */
  readonly idLength: number;
  /** Tags on one promise (or one schedule's promises). Default 64. */
  readonly tagsPerPromise: number;
  /** A tag key, in UTF-8 bytes. Default 256. */
  readonly tagKeyLength: number;
  /** A tag value, in UTF-8 bytes (the branch tag is indexed). Default 2048. */
  readonly tagValueLength: number;
  /** A param or value (data and headers), in UTF-8 bytes. Default 1 MiB. */
  readonly valueBytes: number;
  /** An address (`poll://…`, `http(s)://…`), in characters. Default 2048. */
  readonly addressLength: number;
  /** A cron expression, in characters. Default 256. */
  readonly cronLength: number;
  /** Tasks in one heartbeat. Default 10,000. */
  readonly heartbeatTasks: number;
  /** Callbacks in one suspend. Default 1,000. */
  readonly suspendActions: number;
  /** Rows one search page may return. Default 1,000 (the protocol's bound). */
  readonly searchLimit: number;
}

/** The default promise bounds. */
export const DEFAULT_PROMISE_BOUNDS: Readonly<PromiseBounds> = Object.freeze({
  idLength: 1_024,
  tagsPerPromise: 64,
  tagKeyLength: 256,
  tagValueLength: 2_048,
  valueBytes: 1_048_576,
  addressLength: 2_048,
  cronLength: 256,
  heartbeatTasks: 10_000,
  suspendActions: 1_000,
  searchLimit: 1_000,
});

/** The defaults overridden by `overrides`, each a positive safe integer (else `InvalidInputError` naming it). */
export function resolvePromiseBounds(overrides: Partial<PromiseBounds> = {}): Readonly<PromiseBounds> {
  const bounds = { ...DEFAULT_PROMISE_BOUNDS, ...overrides };
  for (const [name, value] of Object.entries(bounds)) {
    if (!Number.isSafeInteger(value) || value < 1) throw new InvalidInputError(`promiseBounds.${name}`, `must be a positive integer, got ${String(value)}`);
  }
  return Object.freeze(bounds);
}

const invalid = (field: string, reason: string): never => {
  throw new InvalidInputError(field, reason);
};

function object(value: unknown, field: string): Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) invalid(field, "must be an object");
  return value as Record<string, unknown>;
}

/** A non-empty, storable string of at most `limit` UTF-8 bytes. */
function text(value: unknown, field: string, limit: number): string {
  if (typeof value !== "string" || value.length === 0) invalid(field, "must be a non-empty string");
  const s = value as string;
  const bytes = s.length > limit / 3 ? utf8ByteLength(s) : s.length;
  if (bytes > limit) invalid(field, `must be at most ${limit} bytes (UTF-8), got ${bytes}`);
  const problem = textProblem(s);
  if (problem !== null) invalid(field, problem);
  return s;
}

function integer(value: unknown, field: string, min: number, max: number): number {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < min || value > max) invalid(field, `must be an integer from ${min} to ${max}`);
  return value as number;
}

/** A promise deadline: any safe integer ≥ 0 (clients send "never" as a very large one). */
const deadline = (value: unknown, field: string) => integer(value, field, 0, Number.MAX_SAFE_INTEGER);

const ADDRESS = /^[a-z][a-z0-9+.-]*:\/\/\S+$/;

function address(value: unknown, field: string, bounds: PromiseBounds): string {
  const s = text(value, field, bounds.addressLength);
  if (!ADDRESS.test(s)) invalid(field, "must be an address such as poll://any@group or https://host/path");
  return s;
}

function tags(value: unknown, field: string, bounds: PromiseBounds): Record<string, string> {
  if (value === undefined) return {};
  const map = object(value, field);
  const entries = Object.entries(map);
  if (entries.length > bounds.tagsPerPromise) invalid(field, `must hold at most ${bounds.tagsPerPromise} tags, got ${entries.length}`);
  for (const [key, tag] of entries) {
    text(key, `${field}.${key.slice(0, 64)}`, bounds.tagKeyLength);
    if (typeof tag !== "string") invalid(`${field}.${key}`, "must be a string");
    if (utf8ByteLength(tag as string) > bounds.tagValueLength) invalid(`${field}.${key}`, `must be at most ${bounds.tagValueLength} bytes (UTF-8)`);
    const problem = textProblem(tag as string);
    if (problem !== null) invalid(`${field}.${key}`, problem);
  }
  const target = map[PROMISE_TAGS.target];
  if (target !== undefined) address(target, `${field}.${PROMISE_TAGS.target}`, bounds);
  return map as Record<string, string>;
}

function value(input: unknown, field: string, bounds: PromiseBounds): void {
  if (input === undefined) return;
  const v = object(input, field);
  for (const key of Object.keys(v)) if (key !== "headers" && key !== "data") invalid(`${field}.${key}`, "is not a field of a value (headers, data)");
  let bytes = 0;
  if (v["data"] !== undefined && v["data"] !== null) {
    if (typeof v["data"] !== "string") invalid(`${field}.data`, "must be a string");
    const problem = textProblem(v["data"] as string);
    if (problem !== null) invalid(`${field}.data`, problem);
    bytes += utf8ByteLength(v["data"] as string);
  }
  if (v["headers"] !== undefined && v["headers"] !== null) {
    for (const [key, header] of Object.entries(object(v["headers"], `${field}.headers`))) {
      if (typeof header !== "string") invalid(`${field}.headers.${key}`, "must be a string");
      for (const part of [key, header as string]) {
        const problem = textProblem(part);
        if (problem !== null) invalid(`${field}.headers.${key}`, problem);
        bytes += utf8ByteLength(part);
      }
    }
  }
  if (bytes > bounds.valueBytes) invalid(field, `must be at most ${bounds.valueBytes} bytes (valueBytes), got ${bytes}`);
}

function page(request: Record<string, unknown>, bounds: PromiseBounds): void {
  if (request["limit"] !== undefined) integer(request["limit"], "limit", 1, bounds.searchLimit);
  if (request["cursor"] !== undefined) text(request["cursor"], "cursor", bounds.idLength * 2);
}

function createChecks(action: Record<string, unknown>, at: string, bounds: PromiseBounds): void {
  text(action["id"], `${at}id`, bounds.idLength);
  deadline(action["timeoutAt"], `${at}timeoutAt`);
  value(action["param"], `${at}param`, bounds);
  const t = tags(action["tags"], `${at}tags`, bounds);
  if (t[PROMISE_TAGS.delay] !== undefined) {
    const delay = delayOf(t);
    if (delay === null) invalid(`${at}tags.${PROMISE_TAGS.delay}`, "must be an instant (epoch milliseconds)");
    if (t[PROMISE_TAGS.target] === undefined) invalid(`${at}tags.${PROMISE_TAGS.delay}`, "needs a resonate:target (only a task can be delayed)");
    if (delay! >= (action["timeoutAt"] as number)) invalid(`${at}tags.${PROMISE_TAGS.delay}`, "must be before timeoutAt");
  }
}

function settleChecks(action: Record<string, unknown>, at: string, bounds: PromiseBounds): void {
  text(action["id"], `${at}id`, bounds.idLength);
  if (action["state"] !== "resolved" && action["state"] !== "rejected" && action["state"] !== "rejected_canceled") {
    invalid(`${at}state`, "must be resolved, rejected or rejected_canceled");
  }
  value(action["value"], `${at}value`, bounds);
}

function nested(input: unknown, field: string, kinds: readonly ("promise.create" | "promise.settle")[]): Record<string, unknown> {
  const action = object(input, field);
  if (!kinds.includes(action["kind"] as "promise.create")) invalid(`${field}.kind`, `must be ${kinds.join(" or ")}`);
  return action;
}

/**
 * Checks a promise request against `bounds`: throws `InvalidInputError` naming the first field at
 * fault; returns normally for a well-formed request.
 */
export function assertPromiseRequest(request: PromiseRequest, bounds: PromiseBounds): void {
  const r = object(request, "request");
  if (!PROMISE_KINDS.includes(r["kind"] as PromiseRequest["kind"])) invalid("kind", `unknown kind ${String(r["kind"]).slice(0, 64)}`);
  const id = (field = "id") => text(r[field], field, bounds.idLength);
  const version = (field = "version") => integer(r[field], field, 0, Number.MAX_SAFE_INTEGER);
  const ttl = (field = "ttl") => integer(r[field], field, 1, MAX_DURATION_MS);
  switch (request.kind) {
    case "promise.get":
    case "task.get":
    case "task.halt":
    case "task.continue":
    case "schedule.get":
    case "schedule.delete":
      id();
      return;
    case "promise.create":
      createChecks(r, "", bounds);
      return;
    case "promise.settle":
      settleChecks(r, "", bounds);
      return;
    case "promise.register_callback":
      id("awaited");
      id("awaiter");
      if (r["awaited"] === r["awaiter"]) invalid("awaiter", "must differ from awaited");
      return;
    case "promise.register_listener":
      id("awaited");
      address(r["address"], "address", bounds);
      return;
    case "promise.search":
      if (r["state"] !== undefined && !PROMISE_STATES.includes(r["state"] as "pending")) invalid("state", `must be one of ${PROMISE_STATES.join(", ")}`);
      if (r["prefix"] !== undefined) text(r["prefix"], "prefix", bounds.idLength);
      tags(r["tags"], "tags", bounds);
      page(r, bounds);
      return;
    case "task.create": {
      id("pid");
      ttl();
      const action = nested(r["action"], "action", ["promise.create"]);
      createChecks(action, "action.", bounds);
      const t = action["tags"] as Record<string, string> | undefined;
      if (t?.[PROMISE_TAGS.target] === undefined) invalid(`action.tags.${PROMISE_TAGS.target}`, "is required: a task needs a target");
      if (t?.[PROMISE_TAGS.delay] !== undefined) invalid(`action.tags.${PROMISE_TAGS.delay}`, "a task created acquired cannot be delayed");
      return;
    }
    case "task.acquire":
      id();
      version();
      id("pid");
      ttl();
      return;
    case "task.release":
      id();
      version();
      return;
    case "task.fulfill": {
      id();
      version();
      const action = nested(r["action"], "action", ["promise.settle"]);
      settleChecks(action, "action.", bounds);
      if (action["id"] !== r["id"]) invalid("action.id", "must be the task's own id");
      return;
    }
    case "task.suspend": {
      id();
      version();
      const actions = r["actions"];
      if (!Array.isArray(actions) || actions.length === 0) invalid("actions", "must hold at least one callback");
      if ((actions as unknown[]).length > bounds.suspendActions) invalid("actions", `must hold at most ${bounds.suspendActions} callbacks`);
      for (const [i, raw] of (actions as unknown[]).entries()) {
        const action = object(raw, `actions[${i}]`);
        if (action["kind"] !== "promise.register_callback") invalid(`actions[${i}].kind`, "must be promise.register_callback");
        text(action["awaited"], `actions[${i}].awaited`, bounds.idLength);
        if (action["awaiter"] !== r["id"]) invalid(`actions[${i}].awaiter`, "must be the suspending task");
        if (action["awaited"] === r["id"]) invalid(`actions[${i}].awaited`, "a task cannot await its own promise");
      }
      return;
    }
    case "task.fence": {
      id();
      version();
      const action = nested(r["action"], "action", ["promise.create", "promise.settle"]);
      if (action["kind"] === "promise.create") createChecks(action, "action.", bounds);
      else settleChecks(action, "action.", bounds);
      if (action["id"] === r["id"]) invalid("action.id", "must be another promise than the task's (fulfil the task's own with task.fulfill)");
      return;
    }
    case "task.heartbeat": {
      id("pid");
      const tasks = r["tasks"];
      if (!Array.isArray(tasks)) invalid("tasks", "must be an array");
      if ((tasks as unknown[]).length > bounds.heartbeatTasks) invalid("tasks", `must hold at most ${bounds.heartbeatTasks} tasks`);
      for (const [i, raw] of (tasks as unknown[]).entries()) {
        const task = object(raw, `tasks[${i}]`);
        text(task["id"], `tasks[${i}].id`, bounds.idLength);
        integer(task["version"], `tasks[${i}].version`, 0, Number.MAX_SAFE_INTEGER);
      }
      return;
    }
    case "task.search":
      if (r["state"] !== undefined && !TASK_STATES.includes(r["state"] as "pending")) invalid("state", `must be one of ${TASK_STATES.join(", ")}`);
      page(r, bounds);
      return;
    case "schedule.create": {
      id();
      text(r["cron"], "cron", bounds.cronLength);
      text(r["promiseId"], "promiseId", bounds.idLength);
      // Bounded so every firing's deadline (occurrence + timeout) stays a safe integer.
      integer(r["promiseTimeout"], "promiseTimeout", 0, MAX_INSTANT);
      value(r["promiseParam"], "promiseParam", bounds);
      const t = tags(r["promiseTags"], "promiseTags", bounds);
      if (t[PROMISE_TAGS.target] === undefined) invalid(`promiseTags.${PROMISE_TAGS.target}`, "is required: every promise a schedule creates needs a target");
      integer(r["nextRunAt"], "nextRunAt", 0, MAX_INSTANT);
      return;
    }
    case "schedule.search":
      tags(r["tags"], "tags", bounds);
      page(r, bounds);
      return;
  }
}
