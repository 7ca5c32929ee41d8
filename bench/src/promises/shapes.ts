// The request shapes the promise benchmark drives, written once over a minimal target (a Belay
// `PromiseStore`, or the SDK's in-memory server through `sdk-server.ts`), so every system gets the
// same requests in the same order. Each step checks its answer: a shape that silently failed (a
// 409 instead of an acquire) would measure nothing.
import type { PromiseRequest } from "@belay/contract";

/** An answer as the benchmark reads it: the protocol status, and data or an error. */
export interface Answer {
  readonly status: number;
  readonly data?: unknown;
  readonly error?: unknown;
}

/** What the benchmark drives: one protocol request at `now`. */
export interface PromiseTarget {
  readonly name: string;
  handle(request: PromiseRequest, now: number): Promise<Answer>;
  close(): Promise<void>;
}

/** Per-kind operation latencies of one measured window, ms. */
export type OpTimes = Map<string, number[]>;

/** One timed call: its latency goes into `times` under its kind (when given). */
async function step(target: PromiseTarget, request: PromiseRequest, expect: number, times: OpTimes | null): Promise<Answer> {
  const t0 = performance.now();
  const answer = await target.handle(request, Date.now());
  const ms = performance.now() - t0;
  if (times !== null) {
    const list = times.get(request.kind);
    if (list === undefined) times.set(request.kind, [ms]);
    else list.push(ms);
  }
  if (answer.status !== expect) {
    throw new Error(`${target.name}: ${request.kind} ${JSON.stringify(request).slice(0, 200)} answered ${answer.status}, expected ${expect}: ${JSON.stringify(answer.error ?? answer.data).slice(0, 300)}`);
  }
  return answer;
}

const HOUR = 3_600_000;
const TARGET = "poll://any@bench";
const VALUE = { headers: {}, data: "eyJvayI6dHJ1ZX0=" };

/** The shapes: what one lifecycle is, how many operations (each its own transaction and commit) it makes. */
export const SHAPES = {
  lifecycle: {
    label: "lifecycle (create → acquire → fulfill)",
    ops: 3,
    commits: 3,
  },
  fanout: {
    label: "fan-out (root + 10 children)",
    // task.create, 10 fences, suspend, 10 × (acquire + fulfill), acquire, fulfill
    ops: 34,
    commits: 34,
  },
} as const;

export type ShapeName = keyof typeof SHAPES;
export const SHAPE_NAMES = Object.keys(SHAPES) as ShapeName[];

/**
 * A full lifecycle of one targeted promise: `promise.create` (a pending task at version 0 and an
 * `execute` queued), `task.acquire` at version 0, `task.fulfill` at version 1.
 */
export async function lifecycle(target: PromiseTarget, id: string, times: OpTimes | null): Promise<void> {
  await step(target, { kind: "promise.create", id, timeoutAt: Date.now() + HOUR, param: VALUE, tags: { "resonate:target": TARGET } }, 200, times);
  await step(target, { kind: "task.acquire", id, version: 0, pid: "bench-worker", ttl: 60_000 }, 200, times);
  await step(target, { kind: "task.fulfill", id, version: 1, action: { kind: "promise.settle", id, state: "resolved", value: VALUE } }, 200, times);
}

/**
 * A fan-out, shaped as the SDK 0.11.5 sends it: a root started with `task.create` (acquired at
 * version 1, branch = its id) fences the creates of 10 `rpc` children (targeted, each its own
 * branch), suspends on all of them, each child is acquired and fulfilled (the first settlement
 * dispatches the root again, the others mark it), then the root is acquired again (version 2)
 * and fulfilled. 34 operations, one after another.
 */
export async function fanOut(target: PromiseTarget, root: string, times: OpTimes | null, children = 10): Promise<void> {
  const lineage = (id: string) => ({ "resonate:origin": root, "resonate:branch": id, "resonate:parent": root, "resonate:scope": "global" });
  await step(
    target,
    {
      kind: "task.create",
      pid: "bench-root",
      ttl: 60_000,
      action: { kind: "promise.create", id: root, timeoutAt: Date.now() + HOUR, param: VALUE, tags: { ...lineage(root), "resonate:target": `${TARGET}/bench-root` } },
    },
    200,
    times,
  );
  const ids = Array.from({ length: children }, (_, i) => `${root}:${i + 1}`);
  for (const id of ids) {
    const fenced = await step(
      target,
      { kind: "task.fence", id: root, version: 1, action: { kind: "promise.create", id, timeoutAt: Date.now() + HOUR, param: VALUE, tags: { ...lineage(id), "resonate:target": TARGET } } },
      200,
      times,
    );
    const inner = (fenced.data as { action?: { status?: number } } | undefined)?.action?.status;
    if (inner !== 200) throw new Error(`${target.name}: fenced create of ${id} answered ${inner}`);
  }
  await step(target, { kind: "task.suspend", id: root, version: 1, actions: ids.map((awaited) => ({ kind: "promise.register_callback", awaited, awaiter: root })) }, 200, times);
  for (const id of ids) {
    await step(target, { kind: "task.acquire", id, version: 0, pid: "bench-worker", ttl: 60_000 }, 200, times);
    await step(target, { kind: "task.fulfill", id, version: 1, action: { kind: "promise.settle", id, state: "resolved", value: VALUE } }, 200, times);
  }
  await step(target, { kind: "task.acquire", id: root, version: 1, pid: "bench-root", ttl: 60_000 }, 200, times);
  await step(target, { kind: "task.fulfill", id: root, version: 2, action: { kind: "promise.settle", id: root, state: "resolved", value: VALUE } }, 200, times);
}

/** Runs one lifecycle of `shape` under `id`. */
export function runShape(shape: ShapeName, target: PromiseTarget, id: string, times: OpTimes | null): Promise<void> {
  return shape === "lifecycle" ? lifecycle(target, id, times) : fanOut(target, id, times);
}

/**
 * `count` live roots: pending targeted promises (each a pending task with its retry timer and an
 * `execute` queued), created before the measurement and left pending throughout.
 */
export async function createLiveRoots(target: PromiseTarget, count: number): Promise<void> {
  const timeoutAt = Date.now() + 24 * HOUR;
  for (let i = 0; i < count; i++) {
    await step(target, { kind: "promise.create", id: `live-${i}`, timeoutAt, param: VALUE, tags: { "resonate:target": TARGET } }, 200, null);
  }
}
