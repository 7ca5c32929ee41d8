import { InvalidInputError, type PromiseBounds, type PromiseKind, type PromiseRequest, assertPromiseRequest, isBelayError } from "@belay/contract";
import { type EnvelopeKind, isObject, readCorrId, readVersion } from "./envelope.js";

// From an envelope's `data` to the promise store's request of the same kind. Nested actions
// (task.create/fulfill/fence `action`, task.suspend `actions`) are whole envelopes
// `{kind, head, data}`; the store takes them flat (`{kind, ...data}`). Only the fields a kind
// has are carried over, so the store's own checks (`assertPromiseRequest`) see exactly what it
// will act on, and their field names are mapped back to the envelope's (`action.id` →
// `data.action.data.id`).

/** A store request read from an envelope, with the correlation ids of its nested actions. */
export interface EnvelopeRequest {
  readonly request: PromiseRequest;
  /** `head.corrId` of the nested `action` (task.create, task.fulfill, task.fence): a fence answer echoes it. */
  readonly actionCorrId?: string;
}

/** The fields of each kind's `data`, as the store takes them. */
const FIELDS: Readonly<Record<PromiseKind, readonly string[]>> = {
  "promise.get": ["id"],
  "promise.create": ["id", "timeoutAt", "param", "tags"],
  "promise.settle": ["id", "state", "value"],
  "promise.register_callback": ["awaited", "awaiter"],
  "promise.register_listener": ["awaited", "address"],
  "promise.search": ["state", "tags", "limit", "cursor"],
  "task.get": ["id"],
  "task.create": ["pid", "ttl"],
  "task.acquire": ["id", "version", "pid", "ttl"],
  "task.release": ["id", "version"],
  "task.fulfill": ["id", "version"],
  "task.suspend": ["id", "version"],
  "task.fence": ["id", "version"],
  "task.heartbeat": ["pid"],
  "task.halt": ["id"],
  "task.continue": ["id"],
  "task.search": ["state", "limit", "cursor"],
  "schedule.get": ["id"],
  "schedule.create": ["id", "cron", "promiseId", "promiseTimeout", "promiseParam", "promiseTags"],
  "schedule.delete": ["id"],
  "schedule.search": ["tags", "limit", "cursor"],
};

/** The kinds a nested action of each kind may be. */
const NESTED: Partial<Record<PromiseKind, readonly PromiseKind[]>> = {
  "task.create": ["promise.create"],
  "task.fulfill": ["promise.settle"],
  "task.fence": ["promise.create", "promise.settle"],
};

function pick(data: Record<string, unknown>, fields: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const field of fields) if (data[field] !== undefined) out[field] = data[field];
  return out;
}

/** A nested envelope, checked as a whole (kind, head, data), flattened to `{kind, ...data}`. */
function nested(value: unknown, field: string, kinds: readonly PromiseKind[]): { readonly action: Record<string, unknown>; readonly corrId: string } {
  if (!isObject(value)) throw new InvalidInputError(field, "must be an envelope {kind, head, data}");
  const kind = value["kind"];
  if (typeof kind !== "string" || !(kinds as readonly string[]).includes(kind)) throw new InvalidInputError(`${field}.kind`, `must be ${kinds.join(" or ")}`);
  const head = value["head"];
  if (!isObject(head)) throw new InvalidInputError(`${field}.head`, "must be an object {corrId, version}");
  const corrId = readCorrId(head["corrId"], `${field}.head.corrId`);
  readVersion(head["version"], `${field}.head.version`);
  const data = value["data"];
  if (!isObject(data)) throw new InvalidInputError(`${field}.data`, "must be an object");
  return { action: { kind, ...pick(data, FIELDS[kind as PromiseKind]) }, corrId };
}

/**
 * The envelope's name of a field the store named: a nested action's fields live under its
 * `data` (`action.id` → `data.action.data.id`, `actions[2].awaited` →
 * `data.actions[2].data.awaited`), every other field under the envelope's `data`.
 */
export function envelopeField(storeField: string): string {
  if (storeField === "request") return "data";
  if (storeField === "kind") return "kind";
  const action = /^(action|actions\[\d+\])(?:\.(.*))?$/s.exec(storeField);
  if (action !== null) {
    const [, at, rest] = action;
    if (rest === undefined) return `data.${at}`;
    if (rest === "kind") return `data.${at}.kind`;
    return `data.${at}.data.${rest}`;
  }
  return `data.${storeField}`;
}

/** Runs `check`, renaming the field of an `InvalidInputError` it throws from the store's name to the envelope's. */
export function withEnvelopeFields<T>(check: () => T): T {
  try {
    return check();
  } catch (error) {
    throw renameField(error);
  }
}

/** An `InvalidInputError` with its field renamed to the envelope's; any other error unchanged. */
export function renameField(error: unknown): unknown {
  if (!isBelayError(error, "BELAY_INVALID_INPUT")) return error;
  const { field, reason } = error as unknown as { field: string; reason: string };
  const renamed = new InvalidInputError(envelopeField(field), reason);
  renamed.cause = error;
  return renamed;
}

/**
 * The store request of an envelope's kind and `data`, checked as the store would check it
 * (`assertPromiseRequest` against `bounds`): throws `InvalidInputError` naming the envelope's field.
 * `extra` adds fields the server computes (`nextRunAt` of a schedule).
 */
export function toStoreRequest(kind: Exclude<EnvelopeKind, `debug.${string}`>, data: Record<string, unknown>, bounds: PromiseBounds, extra: Record<string, unknown> = {}): EnvelopeRequest {
  const request: Record<string, unknown> = { kind, ...pick(data, FIELDS[kind]), ...extra };
  let actionCorrId: string | undefined;
  const kinds = NESTED[kind];
  if (kinds !== undefined) {
    const inner = nested(data["action"], "data.action", kinds);
    request["action"] = inner.action;
    actionCorrId = inner.corrId;
  }
  if (kind === "task.suspend") {
    const actions = data["actions"];
    if (!Array.isArray(actions)) throw new InvalidInputError("data.actions", "must be an array of promise.register_callback envelopes");
    if (actions.length > bounds.suspendActions) throw new InvalidInputError("data.actions", `must hold at most ${bounds.suspendActions} callbacks`);
    request["actions"] = actions.map((action, i) => nested(action, `data.actions[${i}]`, ["promise.register_callback"]).action);
  }
  if (kind === "task.heartbeat") {
    const tasks = data["tasks"];
    request["tasks"] = Array.isArray(tasks) ? tasks.map((task: unknown) => (isObject(task) ? pick(task, ["id", "version"]) : task)) : tasks;
  }
  const checked = request as unknown as PromiseRequest;
  withEnvelopeFields(() => assertPromiseRequest(checked, bounds));
  return actionCorrId === undefined ? { request: checked } : { request: checked, actionCorrId };
}
