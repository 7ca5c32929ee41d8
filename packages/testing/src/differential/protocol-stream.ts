import { type Instant, SeededRandom } from "@belay/contract";
import type { ProtocolAnswer, WireRequest } from "./protocol-system.js";

// A seeded random stream of protocol requests for differential tests: every kind the SDK sends
// and the rest of the protocol, with time moving between steps and timer scans mixed in. Ids
// come from small pools, so collisions, repeats and races of state happen often; they and the
// tags are shaped as the SDK shapes them (`root`, `root:1`, `root:1.2`; origin, branch, parent,
// scope, target, timer).

/** One step of a stream: a request at `now`, or a timer scan at `now`. */
export type StreamStep =
  | { readonly type: "request"; readonly now: Instant; readonly request: WireRequest }
  | { readonly type: "tick"; readonly now: Instant };

/** Options of a {@link ProtocolStream}. */
export interface ProtocolStreamOptions {
  readonly seed: number;
  /** The first instant. Default 2026-01-01T00:00:00Z. */
  readonly start?: Instant;
}

/**
 * The promise ids of one generation `g` of a stream (SDK-shaped: an origin, then `:` and
 * `.`-joined segments). A stream moves to a new generation now and then, since promises are
 * write-once and a pool of settled ones would only answer repeats.
 */
export function streamPromiseIds(g: number): readonly string[] {
  return [`root${g}`, `root${g}:1`, `root${g}:2`, `root${g}:1.1`, `root${g}:1.2`, `root${g}:2.1`, `job${g}`, `job${g}:1`, `job${g}:1.1`];
}
/** The schedule ids a stream draws from (a `{{.id}}` template makes promises `s1`, `s2`, `s3`: also in the promise pool). */
export const STREAM_SCHEDULE_IDS: readonly string[] = Object.freeze(["s1", "s2", "s3"]);
/** How often a stream moves to a new generation of ids: once in this many steps, on average. */
const GENERATION_STEPS = 150;
/** How far time moves before a step ([min, max] ms) and how often: mostly a little, now and then a lot. */
const TIME_STEPS: readonly (readonly [readonly [number, number], number])[] = [
  [[0, 0], 30],
  [[1, 200], 45],
  [[200, 3_000], 18],
  [[3_000, 40_000], 5],
  [[60_000, 400_000], 0.5],
];
/** Each step's kind and its weight ("tick" is a timer scan on both sides). */
const KINDS: readonly (readonly [string, number])[] = [
  ["tick", 9],
  ["promise.get", 6],
  ["promise.create", 10],
  ["promise.settle", 5],
  ["promise.register_callback", 5],
  ["promise.register_listener", 5],
  ["promise.search", 1],
  ["task.get", 4],
  ["task.create", 7],
  ["task.acquire", 10],
  ["task.release", 4],
  ["task.fulfill", 6],
  ["task.suspend", 7],
  ["task.fence", 9],
  ["task.heartbeat", 4],
  ["task.halt", 2],
  ["task.continue", 2],
  ["task.search", 1],
  ["schedule.get", 2],
  ["schedule.create", 2],
  ["schedule.delete", 2],
  ["schedule.search", 1],
];
const PIDS = ["w1", "w2"];
const LISTENER_ADDRESSES = PIDS.map((pid) => `poll://uni@g/${pid}`);
/** Crons and their weights: mostly minutes (each firing costs both sides a cron parse), one with seconds. */
const CRONS: readonly (readonly [string, number])[] = [
  ["*/5 * * * *", 3],
  ["0 * * * *", 3],
  ["* * * * *", 1],
  ["*/30 * * * * *", 1],
];
const TTLS = [2_000, 30_000, 60_000];
const DATA = ["eA==", "eQ==", "ImhpIg==", "e30="];
const NEVER = Number.MAX_SAFE_INTEGER;

type Role = "root" | "rpc" | "run" | "sleep" | "latent" | "bare" | "delayed";

/** `root:1.2` → `root:1`, `root:1` → `root`, `root` → null. */
export function parentOf(id: string): string | null {
  const colon = id.indexOf(":");
  if (colon < 0) return null;
  const segments = id.slice(colon + 1).split(".");
  return segments.length === 1 ? id.slice(0, colon) : `${id.slice(0, colon)}:${segments.slice(0, -1).join(".")}`;
}

/** The text before the first `:`. */
export function originOf(id: string): string {
  const colon = id.indexOf(":");
  return colon < 0 ? id : id.slice(0, colon);
}

/**
 * A seeded stream of protocol steps. `observe` feeds it the answers of the system under test, so
 * it can send the versions a holder would (fencing tokens it learnt from acquires), mixed with
 * stale and future ones. The same seed and the same answers give the same stream.
 *
 * @example
 * ```ts
 * const stream = new ProtocolStream({ seed: 7 });
 * for (let i = 0; i < 1000; i++) {
 *   const step = stream.next();
 *   if (step.type === "request") stream.observe(step, await system.send(step.request, step.now));
 *   else await system.tick(step.now);
 * }
 * ```
 */
export class ProtocolStream {
  readonly #rng: SeededRandom;
  #now: Instant;
  /** What the answers told of each task lately: its state and version (the holder's fence). */
  readonly #tasks = new Map<string, { state: string; version: number }>();
  /** Promises the answers showed pending lately. */
  readonly #pending = new Set<string>();
  #generation = 0;
  #current: readonly string[] = streamPromiseIds(0);
  #previous: readonly string[] = [];

  constructor(options: ProtocolStreamOptions) {
    this.#rng = new SeededRandom(options.seed);
    this.#now = options.start ?? Date.UTC(2026, 0, 1);
  }

  /** The instant of the last step. */
  get now(): Instant {
    return this.#now;
  }

  next(): StreamStep {
    const r = this.#rng;
    const [min, max] = r.weighted(TIME_STEPS);
    this.#now += r.int(min, max);
    const now = this.#now;
    if (r.chance(1 / GENERATION_STEPS)) this.#nextGeneration();
    const kind = r.weighted(KINDS);
    if (kind === "tick") return { type: "tick", now };
    return { type: "request", now, request: this.#request(kind, now) };
  }

  /**
   * Learns from an answer of the system under test: the tasks' states and versions (as a worker
   * learns its fence from an acquire) and which promises are pending, so that later requests
   * often name a task in the state they need — and sometimes one that is not.
   */
  observe(step: StreamStep, answer: ProtocolAnswer): void {
    if (step.type !== "request") return;
    const { kind, data: request } = step.request;
    if (answer.status === 404 || answer.status === 409) {
      // The task is not where the answers last showed it: forget its state, keep its version.
      const known = kind.startsWith("task.") ? this.#tasks.get(String(request["id"])) : undefined;
      if (known !== undefined) known.state = "unknown";
      return;
    }
    if (answer.status !== 200 && answer.status !== 300) return;
    const data = (answer.data ?? {}) as { task?: { id: string; state: string; version: number }; promise?: { id: string; state: string; tags?: Record<string, string> }; preload?: { id: string; state: string }[]; action?: { data?: { promise?: { id: string; state: string } } } };
    const seen = (record: { id: string; state: string } | undefined) => {
      if (record === undefined) return;
      if (record.state === "pending") this.#pending.add(record.id);
      else {
        this.#pending.delete(record.id);
        const task = this.#tasks.get(record.id);
        if (task !== undefined) task.state = "fulfilled";
      }
    };
    seen(data.promise);
    seen(data.action?.data?.promise);
    for (const record of data.preload ?? []) seen(record);
    if (data.task !== undefined) this.#tasks.set(data.task.id, { state: data.task.state, version: data.task.version });
    const id = String(request["id"]);
    const known = this.#tasks.get(id);
    switch (kind) {
      case "promise.create":
        if (data.promise?.state === "pending" && data.promise.tags?.["resonate:target"] !== undefined && !this.#tasks.has(data.promise.id)) this.#tasks.set(data.promise.id, { state: "pending", version: 0 });
        break;
      case "task.release":
      case "task.continue":
        if (known !== undefined) known.state = "pending";
        break;
      case "task.suspend":
        if (known !== undefined && answer.status === 200) known.state = "suspended";
        break;
      case "task.halt":
        if (known !== undefined) known.state = "halted";
        break;
      case "task.fulfill":
        if (known !== undefined) known.state = "fulfilled";
        this.#pending.delete(id);
        break;
    }
  }

  #nextGeneration(): void {
    this.#generation++;
    this.#previous = this.#current;
    this.#current = streamPromiseIds(this.#generation);
    const live = new Set([...this.#previous, ...this.#current, ...STREAM_SCHEDULE_IDS]);
    for (const id of this.#tasks.keys()) if (!live.has(id)) this.#tasks.delete(id);
    for (const id of this.#pending) if (!live.has(id)) this.#pending.delete(id);
  }

  /** Every id a request may name now. */
  #pool(): string[] {
    return [...this.#current, ...this.#previous, ...STREAM_SCHEDULE_IDS];
  }

  // ---- requests ----------------------------------------------------------------------------

  #request(kind: string, now: Instant): WireRequest {
    const r = this.#rng;
    switch (kind) {
      case "promise.get":
      case "task.get":
      case "task.halt":
      case "task.continue":
        return { kind, data: { id: this.#promiseId() } };
      case "promise.create":
        return { kind, data: this.#create(this.#promiseId(), r.pick<Role>(["root", "rpc", "rpc", "run", "run", "sleep", "latent", "bare", "delayed"]), now) };
      case "promise.settle":
        return { kind, data: this.#settle(this.#promiseId()) };
      case "promise.register_callback": {
        const awaiter = this.#taskId(["suspended", "acquired", "pending"]);
        // Rarely the same id on both sides: refused (400) everywhere.
        const awaited = r.chance(0.02) ? awaiter : this.#awaited(awaiter);
        return { kind, data: { awaited, awaiter } };
      }
      case "promise.register_listener":
        return { kind, data: { awaited: this.#promiseId(), address: r.pick(LISTENER_ADDRESSES) } };
      case "promise.search":
        return {
          kind,
          data: {
            ...(r.chance(0.5) ? { state: r.pick(["pending", "resolved", "rejected", "rejected_canceled", "rejected_timedout"]) } : {}),
            ...(r.chance(0.3) ? { tags: { "resonate:origin": originOf(this.#rng.pick(this.#current)) } } : {}),
            limit: r.pick([1, 5, 100]),
          },
        };
      case "task.create": {
        const pid = r.pick(PIDS);
        const id = r.chance(0.5) ? r.pick(this.#current.filter((c) => !c.includes(":"))) : this.#promiseId();
        const action = this.#create(id, "root", now, pid);
        // Rarely without a target: refused (400) everywhere.
        if (r.chance(0.02)) delete (action["tags"] as Record<string, string>)["resonate:target"];
        return { kind, data: { pid, ttl: r.pick(TTLS), action: { kind: "promise.create", data: action } } };
      }
      case "task.acquire": {
        const id = this.#taskId(["pending"]);
        return { kind, data: { id, version: this.#version(id), pid: r.pick(PIDS), ttl: r.pick(TTLS) } };
      }
      case "task.release": {
        const id = this.#taskId(["acquired"]);
        return { kind, data: { id, version: this.#version(id) } };
      }
      case "task.fulfill": {
        const id = this.#taskId(["acquired"]);
        // Rarely another promise than the task's own: refused (400) everywhere.
        const settled = r.chance(0.02) ? this.#otherThan(id) : id;
        return { kind, data: { id, version: this.#version(id), action: { kind: "promise.settle", data: this.#settle(settled) } } };
      }
      case "task.suspend": {
        const id = this.#taskId(["acquired"]);
        const awaited = [...new Set(Array.from({ length: r.int(1, 3) }, () => this.#awaited(id)))];
        const actions = awaited.map((a) => ({ kind: "promise.register_callback", data: { awaited: a, awaiter: id } }));
        // Rarely malformed (no callbacks, its own promise, another awaiter): refused (400) everywhere.
        const malformed = r.weighted<string>([["none", 94], ["empty", 2], ["self", 2], ["awaiter", 2]]);
        if (malformed === "empty") actions.length = 0;
        if (malformed === "self") actions.push({ kind: "promise.register_callback", data: { awaited: id, awaiter: id } });
        if (malformed === "awaiter") actions.push({ kind: "promise.register_callback", data: { awaited: this.#otherThan(id), awaiter: this.#otherThan(id) } });
        return { kind, data: { id, version: this.#version(id), actions } };
      }
      case "task.fence": {
        const id = this.#taskId(["acquired"]);
        const children = this.#pool().filter((other) => other !== id && other.startsWith(`${id}${id.includes(":") ? "." : ":"}`));
        const target = children.length > 0 && r.chance(0.7) ? r.pick(children) : this.#otherThan(id);
        const action = r.chance(0.6)
          ? { kind: "promise.create", data: this.#create(target, r.pick<Role>(["rpc", "rpc", "run", "run", "sleep", "latent"]), now) }
          : { kind: "promise.settle", data: this.#settle(target) };
        return { kind, data: { id, version: this.#version(id), action } };
      }
      case "task.heartbeat": {
        const held = [...this.#tasks].filter(([, t]) => t.state === "acquired").map(([id]) => id);
        const ids = r.some(held.length > 0 && r.chance(0.8) ? [...held, ...r.some(this.#pool(), 0, 2)] : this.#pool(), 0, 4);
        return { kind, data: { pid: r.pick(PIDS), tasks: ids.map((id) => ({ id, version: this.#version(id) })) } };
      }
      case "task.search":
        return { kind, data: { ...(r.chance(0.5) ? { state: r.pick(["pending", "acquired", "suspended", "halted", "fulfilled"]) } : {}), limit: r.pick([1, 5, 100]) } };
      case "schedule.get":
      case "schedule.delete":
        return { kind, data: { id: r.pick(STREAM_SCHEDULE_IDS) } };
      case "schedule.create": {
        const promiseTags: Record<string, string> = { "resonate:target": "poll://any@default" };
        if (r.chance(0.2)) promiseTags["resonate:timer"] = "true";
        // Rarely without a target: refused (400) everywhere.
        if (r.chance(0.05)) delete promiseTags["resonate:target"];
        return {
          kind,
          data: {
            id: r.pick(STREAM_SCHEDULE_IDS),
            cron: r.weighted(CRONS),
            promiseId: r.pick(["{{.id}}-{{.timestamp}}", "{{.id}}-{{.timestamp}}", "{{.id}}"]),
            promiseTimeout: r.pick([0, 5_000, 60_000, 3_600_000]),
            promiseParam: this.#value(),
            promiseTags,
          },
        };
      }
      case "schedule.search":
        return { kind, data: { limit: r.pick([1, 10]) } };
      default:
        throw new RangeError(`no generator for ${kind}`);
    }
  }

  #promiseId(): string {
    const r = this.#rng;
    return r.weighted<() => string>([
      [() => r.pick(this.#current), 70],
      [() => r.pick(this.#previous.length > 0 ? this.#previous : this.#current), 25],
      [() => r.pick(STREAM_SCHEDULE_IDS), 5],
    ])();
  }

  /** An id for a task request: mostly one whose task the answers showed in one of `states` lately. */
  #taskId(states: readonly string[]): string {
    const r = this.#rng;
    const fitting = [...this.#tasks].filter(([, t]) => states.includes(t.state)).map(([id]) => id);
    if (fitting.length > 0 && r.chance(0.8)) return r.pick(fitting);
    const known = [...this.#tasks.keys()];
    return known.length > 0 && r.chance(0.3) ? r.pick(known) : this.#promiseId();
  }

  /** A promise for `awaiter` to wait on: mostly one the answers showed pending lately. */
  #awaited(awaiter: string): string {
    const pending = [...this.#pending].filter((id) => id !== awaiter);
    return pending.length > 0 && this.#rng.chance(0.6) ? this.#rng.pick(pending) : this.#otherThan(awaiter);
  }

  #otherThan(id: string): string {
    return this.#rng.pick(this.#pool().filter((other) => other !== id));
  }

  /** Mostly the version the answers last showed for `id` (the holder's fence), sometimes stale or ahead. */
  #version(id: string): number {
    const v = this.#tasks.get(id)?.version ?? 0;
    return this.#rng.weighted([
      [v, 70],
      [Math.max(0, v - 1), 12],
      [v + 1, 10],
      [0, 5],
      [v + 2, 3],
    ]);
  }

  #value(): { headers?: Record<string, string>; data: string } {
    const r = this.#rng;
    const data = r.pick(DATA);
    return r.chance(0.3) ? { headers: r.chance(0.5) ? {} : { "content-type": "application/json" }, data } : { data };
  }

  #settle(id: string): Record<string, unknown> {
    const r = this.#rng;
    return { id, state: r.weighted([["resolved", 5], ["rejected", 3], ["rejected_canceled", 2]]), value: this.#value() };
  }

  #timeoutAt(now: Instant): Instant {
    const r = this.#rng;
    return r.weighted<() => number>([
      [() => now - r.int(0, 5_000), 5],
      [() => now + r.int(1, 3_000), 15],
      [() => now + r.int(3_000, 90_000), 30],
      [() => now + r.int(600_000, 3_600_000), 30],
      [() => NEVER, 20],
    ])();
  }

  /** A `promise.create`'s data with the tags the SDK gives a promise of `role`. */
  #create(id: string, role: Role, now: Instant, pid: string = this.#rng.pick(PIDS)): Record<string, unknown> {
    const r = this.#rng;
    const timeoutAt = this.#timeoutAt(now);
    const parent = parentOf(id) ?? id;
    const lineage = { "resonate:origin": originOf(id), "resonate:parent": parent };
    let tags: Record<string, string>;
    switch (role) {
      case "root":
        tags = { ...lineage, "resonate:branch": id, "resonate:parent": id, "resonate:scope": "global", "resonate:target": `poll://any@g/${pid}` };
        break;
      case "rpc":
        tags = { ...lineage, "resonate:branch": id, "resonate:scope": "global", "resonate:target": "poll://any@default" };
        break;
      case "run":
        tags = { ...lineage, "resonate:branch": parent, "resonate:scope": "local" };
        break;
      case "sleep":
        tags = { ...lineage, "resonate:branch": id, "resonate:scope": "global", "resonate:timer": "true", "resonate:target": "poll://any@default" };
        break;
      case "latent":
        tags = { ...lineage, "resonate:branch": id, "resonate:scope": "global" };
        break;
      case "bare":
        tags = r.pick([{}, { "resonate:timer": "true" }, { "resonate:branch": parent }]);
        break;
      case "delayed":
        tags = { ...lineage, "resonate:branch": id, "resonate:scope": "global", "resonate:target": "poll://any@default" };
        // Only a live promise can be delayed (the delay must come before the deadline).
        if (timeoutAt > now + 1) tags["resonate:delay"] = String(now + r.int(1, Math.min(timeoutAt - now - 1, 60_000)));
        break;
    }
    return { id, timeoutAt, param: this.#value(), tags };
  }
}
