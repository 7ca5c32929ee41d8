import type { Instant } from "@belay/contract";
import { type ProtocolAnswer, type ProtocolSnapshot, type ProtocolSystem, type WireRequest, byKey } from "./protocol-system.js";

// The in-memory server of @resonatehq/sdk (0.11.5: `new LocalNetwork().server`) as a differential
// oracle. Typed structurally, by the parts used here: this package never imports the SDK, the
// test passes the server in.

/** A promise as the SDK server keeps it. */
export interface SdkPromiseRow {
  readonly id: string;
  readonly state: string;
  tags: Readonly<Record<string, string>>;
  readonly timeoutAt: number;
  readonly callbacks: Set<string>;
  readonly listeners: Set<string>;
}

/** A task as the SDK server keeps it: `resumes` is the set of promises that settled meanwhile. */
export interface SdkTaskRow {
  readonly id: string;
  readonly state: string;
  readonly version: number;
  readonly resumes: Set<string>;
  readonly pid?: string;
  readonly ttl?: number;
}

/** One change the SDK server reports from an `apply` (only promise writes are read here). */
export interface SdkChange {
  readonly kind: string;
  readonly promise?: { readonly id: string; readonly state: string; readonly timeoutAt: number; readonly settledAt?: number };
}

/** The SDK server's request envelope. */
export interface SdkRequest {
  readonly kind: string;
  readonly head: Readonly<Record<string, unknown>>;
  readonly data: unknown;
}

/** The parts of the SDK's in-memory `Server` the oracle uses. */
export interface SdkServer {
  apply(now: number, request: SdkRequest): { readonly response: { readonly kind: string; readonly head: { readonly status: number }; readonly data: unknown }; readonly changes: readonly SdkChange[] };
  readonly promises: Map<string, SdkPromiseRow>;
  readonly tasks: Map<string, SdkTaskRow>;
  readonly schedules: Map<string, unknown>;
  /** Task timers: type 0 retry (pending), 1 lease (acquired). */
  readonly tTimeouts: readonly { readonly id: string; readonly type: number; readonly timeout: number }[];
  /** The eager-mode touch: a pending promise past its deadline is settled by it, with its chain. */
  tryEagerTimeout(now: number, id: string): SdkChange[];
  /** The settlement chain's wake of the promise's awaiters. */
  triggerCallbacks(promiseId: string, now: number): SdkChange[];
  setTask(task: SdkTaskRow): unknown;
  setTTimeout(timeout: { readonly id: string; readonly type: 0 | 1; readonly timeout: number }): unknown;
  sendMessage(address: string, message: { readonly kind: "execute"; readonly head: Record<string, never>; readonly data: { readonly task: { readonly id: string; readonly version: number } } }): unknown;
}

/** The SDK server as a {@link ProtocolSystem}, with its rows in reach of the difference rules. */
export interface SdkServerSystem extends ProtocolSystem {
  readonly server: SdkServer;
  /** The changes the last request (`send`) made, as the server reported them. */
  readonly lastChanges: readonly SdkChange[];
  /** `promise.get`: in the server's eager mode it makes a passed deadline permanent, with its chain. */
  touch(id: string, now: Instant): void;
}

/** Options of {@link sdkServerSystem}. */
export interface SdkServerSystemOptions {
  readonly name?: string;
  /** The head's version. Default "2026-04-01". */
  readonly version?: string;
}

interface SdkSnap {
  readonly promises: readonly Record<string, unknown>[];
  readonly promiseTimeouts: readonly { readonly id: string; readonly timeout: number }[];
  readonly callbacks: readonly { readonly awaiter: string; readonly awaited: string }[];
  readonly listeners: readonly { readonly id: string; readonly address: string }[];
  readonly tasks: readonly { readonly id: string; readonly state: string; readonly version: number; readonly resumes: unknown; readonly pid?: string; readonly ttl?: number }[];
  readonly taskTimeouts: readonly { readonly id: string; readonly timeout: number }[];
  readonly messages: readonly { readonly address: string; readonly message: { readonly kind: "execute" | "unblock"; readonly data: { readonly task?: { readonly id: string; readonly version: number }; readonly promise?: { readonly id: string } } } }[];
}

/**
 * The SDK's in-memory server (`new LocalNetwork().server`, created with `timeoutMode: "eager"`)
 * as the oracle of a differential run: wire requests get a head, ticks are `debug.tick`,
 * snapshots are `debug.snap` plus `schedule.get` of every schedule (the snap has none).
 */
export function sdkServerSystem(server: SdkServer, options: SdkServerSystemOptions = {}): SdkServerSystem {
  const version = options.version ?? "2026-04-01";
  let corr = 0;
  const envelope = (request: WireRequest): SdkRequest => {
    const head = { corrId: `c${++corr}`, version };
    const data: Record<string, unknown> = { ...request.data };
    if (data["action"] !== undefined) data["action"] = envelope(data["action"] as WireRequest);
    if (Array.isArray(data["actions"])) data["actions"] = (data["actions"] as WireRequest[]).map(envelope);
    return { kind: request.kind, head, data };
  };
  let lastChanges: readonly SdkChange[] = [];
  const apply = (request: SdkRequest, now: Instant) => server.apply(now, request).response;
  const answer = (response: { head: { status: number }; data: unknown }): ProtocolAnswer => {
    const data = response.data as { action?: { kind: string; head: { status: number }; data: unknown } } | null;
    if (response.head.status === 200 && data !== null && typeof data === "object" && data.action?.head !== undefined) {
      const { kind, head, data: inner } = data.action;
      return { status: 200, data: { ...data, action: { kind, status: head.status, data: inner } } };
    }
    return { status: response.head.status, data: response.data };
  };
  return {
    name: options.name ?? "sdk",
    server,
    get lastChanges() {
      return lastChanges;
    },
    async send(request, now) {
      const result = server.apply(now, envelope(request));
      lastChanges = result.changes;
      return answer(result.response);
    },
    touch(id, now) {
      apply(envelope({ kind: "promise.get", data: { id } }), now);
    },
    async tick(now) {
      apply(envelope({ kind: "debug.tick", data: { time: now } }), now);
    },
    async snapshot(now) {
      const snap = apply(envelope({ kind: "debug.snap", data: {} }), now).data as SdkSnap;
      const schedules = [...server.schedules.keys()].map((id) => (apply(envelope({ kind: "schedule.get", data: { id } }), now).data as { schedule: Record<string, unknown> }).schedule);
      const pair = (a: string, b: string) => `${a}\u0000${b}`;
      return ({
        promises: [...snap.promises].sort(byKey((p) => String(p["id"]))),
        tasks: snap.tasks
          .map(({ id, state, version: v, resumes, pid, ttl }) => ({ id, state, version: v, resumes, ...(pid === undefined ? {} : { pid }), ...(ttl === undefined ? {} : { ttl }) }))
          .sort(byKey((t) => t.id)),
        callbacks: snap.callbacks.map(({ awaited, awaiter }) => ({ awaited, awaiter })).sort(byKey((c) => pair(c.awaited, c.awaiter))),
        listeners: snap.listeners.map(({ id, address }) => ({ promise: id, address })).sort(byKey((l) => pair(l.promise, l.address))),
        schedules: schedules.sort(byKey((s) => String(s["id"]))),
        messages: snap.messages
          .map(({ address, message }) =>
            message.kind === "execute"
              ? { kind: "execute" as const, id: message.data.task!.id, address, version: message.data.task!.version }
              : { kind: "unblock" as const, id: message.data.promise!.id, address },
          )
          .sort(byKey((m) => `${m.kind}\u0000${m.id}\u0000${m.address}`)),
        promiseTimers: snap.promiseTimeouts.map(({ id, timeout }) => ({ id, at: timeout })).sort(byKey((t) => t.id)),
        taskTimers: snap.taskTimeouts.map(({ id, timeout }) => ({ id, at: timeout })).sort(byKey((t) => t.id)),
      });
    },
  };
}
