import {
  type Instant, type PromiseCreateRequest, type PromiseRecord, type PromiseRequest, type PromiseResponse, type PromiseSnapshot,
  type PromiseStore, type PromiseValue, type SettleState, type TaskRecord, isBelayError,
} from "@belay/contract";
import { expect } from "vitest";

// Small, explicit building blocks for the promise clauses: fixed instants, one default target,
// one default worker. Every helper asserts the status it expects, so a clause reads as its story.

/** The suite's epoch: 2026-01-01T00:00:00Z. Every clause runs on explicit instants from here. */
export const T0: Instant = Date.UTC(2026, 0, 1);
export const SECOND = 1_000;
export const MINUTE = 60_000;
export const HOUR = 60 * MINUTE;
/** The deadline of the suite's promises unless a clause says otherwise. */
export const DEADLINE = T0 + HOUR;
/** The lease the suite's workers ask for. */
export const TTL = MINUTE;
/** The worker group the suite's tasks are sent to. */
export const TARGET = "poll://any@workers";
/** A client waiting at its own address (as the SDK registers listeners). */
export const LISTENER = "poll://uni@clients/c1";
export const TARGET_TAGS: Readonly<Record<string, string>> = Object.freeze({ "resonate:target": TARGET });

/** The data of a 200 answer to `R`. */
export type Data<R extends PromiseRequest> = Extract<PromiseResponse<R>, { readonly status: 200 }>["data"];

/** Runs `request` at `now` and asserts 200; returns its data. */
export async function ok<R extends PromiseRequest>(store: PromiseStore, request: R, now: Instant = T0): Promise<Data<R>> {
  const response = await store.handle(request, now);
  expect(response, `${request.kind} at ${now - T0} ms`).toMatchObject({ status: 200 });
  return (response as { data: Data<R> }).data;
}

/** Runs `request` at `now` and asserts it failed with `status` and a message (the protocol's error data is a string). */
export async function refused<R extends PromiseRequest>(store: PromiseStore, request: R, status: 404 | 409 | 422, now: Instant = T0): Promise<void> {
  const response = await store.handle(request, now);
  expect(response, `${request.kind} at ${now - T0} ms`).toMatchObject({ status });
  expect(typeof (response as { error?: unknown }).error).toBe("string");
  expect("data" in response, "a failure carries no data").toBe(false);
}

/** A `promise.create` with the suite's deadline. */
export function createRequest(
  id: string,
  fields: { readonly timeoutAt?: Instant; readonly tags?: Readonly<Record<string, string>>; readonly param?: PromiseValue } = {},
): PromiseCreateRequest {
  return { kind: "promise.create", id, timeoutAt: fields.timeoutAt ?? DEADLINE, ...(fields.tags ? { tags: fields.tags } : {}), ...(fields.param ? { param: fields.param } : {}) };
}

/** Creates a promise (no target: no task) and returns its record. */
export async function createPromise(
  store: PromiseStore,
  id: string,
  fields: Parameters<typeof createRequest>[1] = {},
  now: Instant = T0,
): Promise<PromiseRecord> {
  return (await ok(store, createRequest(id, fields), now)).promise;
}

/** Creates a promise with the suite's target (so with a pending task at version 0). */
export const createTargeted: typeof createPromise = (store, id, fields = {}, now = T0) =>
  createPromise(store, id, { ...fields, tags: { ...TARGET_TAGS, ...fields.tags } }, now);

/** Acquires a task at `version` (default 0) for `pid` (default `w1`) and returns the answer. */
export async function acquire(
  store: PromiseStore,
  id: string,
  options: { readonly version?: number; readonly pid?: string; readonly ttl?: number; readonly now?: Instant } = {},
): Promise<Data<{ kind: "task.acquire"; id: string; version: number; pid: string; ttl: number }>> {
  return ok(store, { kind: "task.acquire", id, version: options.version ?? 0, pid: options.pid ?? "w1", ttl: options.ttl ?? TTL }, options.now ?? T0);
}

/** Creates a targeted promise and acquires its task for `w1`: the task is then acquired at version 1. */
export async function holdTask(store: PromiseStore, id: string, fields: Parameters<typeof createRequest>[1] = {}, now: Instant = T0): Promise<TaskRecord> {
  await createTargeted(store, id, fields, now);
  const { task } = await acquire(store, id, { now });
  expect(task).toMatchObject({ id, state: "acquired", version: 1 });
  return task;
}

/** Creates `child` through a fenced write of the task `parent` (held at `version`). */
export async function fencedCreate(
  store: PromiseStore,
  parent: string,
  version: number,
  child: PromiseCreateRequest,
  now: Instant = T0,
): Promise<PromiseRecord> {
  const { action } = await ok(store, { kind: "task.fence", id: parent, version, action: child }, now);
  expect(action).toMatchObject({ kind: "promise.create", status: 200 });
  return (action as { data: { promise: PromiseRecord } }).data.promise;
}

/** Suspends the task `id` (held at `version`) on `awaited`; returns the whole answer (200 or 300). */
export function suspend(store: PromiseStore, id: string, version: number, awaited: readonly string[], now: Instant = T0) {
  return store.handle({ kind: "task.suspend", id, version, actions: awaited.map((a) => ({ kind: "promise.register_callback" as const, awaited: a, awaiter: id })) }, now);
}

/** Settles a promise as a client and returns the answered record. */
export async function settle(store: PromiseStore, id: string, state: SettleState = "resolved", value?: PromiseValue, now: Instant = T0): Promise<PromiseRecord> {
  return (await ok(store, { kind: "promise.settle", id, state, ...(value ? { value } : {}) }, now)).promise;
}

/** The promise `id` as `promise.get` answers it at `now`. */
export async function getPromise(store: PromiseStore, id: string, now: Instant = T0): Promise<PromiseRecord> {
  return (await ok(store, { kind: "promise.get", id }, now)).promise;
}

/** The task `id` as `task.get` answers it at `now`. */
export async function getTask(store: PromiseStore, id: string, now: Instant = T0): Promise<TaskRecord> {
  return (await ok(store, { kind: "task.get", id }, now)).task;
}

/** The stored promise `id` from a snapshot (no timed-out view, no touch). */
export async function storedPromise(store: PromiseStore, id: string, now: Instant = T0): Promise<PromiseRecord | undefined> {
  return (await store.snapshot(now)).promises.find((p) => p.id === id);
}

/** The stored task `id` from a snapshot. */
export async function storedTask(store: PromiseStore, id: string, now: Instant = T0): Promise<TaskRecord | undefined> {
  return (await store.snapshot(now)).tasks.find((t) => t.id === id);
}

/** The task timer of `id` in a snapshot, or `undefined`. */
export async function taskTimer(store: PromiseStore, id: string, now: Instant = T0): Promise<Instant | undefined> {
  return (await store.snapshot(now)).timers.tasks.find((t) => t.id === id)?.at;
}

/** The outbox as `kind:id@address#version`, sorted: what is queued, by content. */
export async function queued(store: PromiseStore, now: Instant = T0): Promise<string[]> {
  return (await store.snapshot(now)).outbox.map((m) => `${m.kind}:${m.id}@${m.address}#${m.version}`).sort();
}

/** `execute` of task `id` at `version` to the suite's target, as `queued` writes it. */
export const execute = (id: string, version: number, address = TARGET) => `execute:${id}@${address}#${version}`;
/** `unblock` of promise `id` for `address`, as `queued` writes it. */
export const unblock = (id: string, address = LISTENER) => `unblock:${id}@${address}#0`;

/** Runs `action` and asserts the store's snapshot at `now` is the same before and after it. */
export async function expectUnchanged(store: PromiseStore, action: () => Promise<unknown>, now: Instant = T0, what = "the request"): Promise<void> {
  const before: PromiseSnapshot = await store.snapshot(now);
  await action();
  expect(await store.snapshot(now), `${what} writes nothing`).toEqual(before);
}

/** Asserts `action` throws `InvalidInputError` (BELAY_INVALID_INPUT) naming `field` (a string, or a pattern for fields that embed a key). */
export async function expectInvalid(action: () => Promise<unknown>, field: string | RegExp, what = ""): Promise<void> {
  let caught: unknown;
  try {
    await action();
  } catch (error) {
    caught = error;
  }
  const label = `expected InvalidInputError naming ${String(field)}${what ? ` (${what})` : ""}`;
  expect(caught, label).toBeDefined();
  expect(isBelayError(caught), `${label}, got ${String(caught)}`).toBe(true);
  expect((caught as { code: string }).code, label).toBe("BELAY_INVALID_INPUT");
  const named = (caught as { field: string }).field;
  if (typeof field === "string") expect(named, label).toBe(field);
  else expect(named, label).toMatch(field);
}

/** Asserts `action` throws a Belay error with `code`. */
export async function expectCode(action: () => Promise<unknown>, code: string): Promise<void> {
  let caught: unknown;
  try {
    await action();
  } catch (error) {
    caught = error;
  }
  expect(isBelayError(caught), `expected ${code}, got ${String(caught)}`).toBe(true);
  expect((caught as { code: string }).code).toBe(code);
}

/** Ids of a list of records, in the order given. */
export const ids = (records: readonly { readonly id: string }[]): string[] => records.map((r) => r.id);
