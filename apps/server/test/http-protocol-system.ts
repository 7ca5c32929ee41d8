import type { Instant } from "@belay/contract";
import type { ProtocolAnswer, ProtocolSnapshot, ProtocolSystem, WireRequest } from "@belay/testing";

// A running belay-server's promise listener as a differential run's system under test: every
// request an envelope through `POST /`, its `now` the head's `resonate:debug_time` (so the server
// must run with --debug, its loops held by `debug.start`), a tick `debug.tick`, a snapshot
// `debug.snap` in the comparison's normal form.

/** Options of {@link httpPromiseSystem}. */
export interface HttpPromiseSystemOptions {
  /** A short name for messages. Default "http". */
  readonly name?: string;
  /** Extra request headers (a bearer token). */
  readonly headers?: Readonly<Record<string, string>>;
}

/** The HTTP system, with the debug kinds a run needs around it. */
export interface HttpPromiseSystem extends ProtocolSystem {
  /** `debug.start`: the server's loops hold, so time moves only by the requests' instants. */
  start(): Promise<void>;
  /** `debug.reset`: everything the store holds goes. */
  reset(): Promise<void>;
  /** HTTP requests sent so far. */
  readonly requests: number;
}

interface Envelope {
  readonly kind: string;
  readonly head: { readonly corrId: string; readonly status: number; readonly version: string };
  readonly data: unknown;
}

interface Snap {
  readonly promises: readonly Record<string, unknown>[];
  readonly promiseTimeouts: readonly { readonly id: string; readonly timeout: number }[];
  readonly callbacks: readonly { readonly awaiter: string; readonly awaited: string }[];
  readonly listeners: readonly { readonly id: string; readonly address: string }[];
  readonly tasks: readonly ProtocolSnapshot["tasks"][number][];
  readonly taskTimeouts: readonly { readonly id: string; readonly timeout: number }[];
  readonly messages: readonly { readonly address: string; readonly message: { readonly kind: "execute" | "unblock"; readonly data: { readonly task?: { readonly id: string; readonly version: number }; readonly promise?: { readonly id: string } } } }[];
  readonly schedules: readonly Record<string, unknown>[];
}

const VERSION = "2026-04-01";
const byKey =
  <T>(key: (item: T) => string) =>
  (a: T, b: T) => {
    const [ka, kb] = [key(a), key(b)];
    return ka < kb ? -1 : ka > kb ? 1 : 0;
  };

/**
 * The promise listener at `url` (a server in debug mode) as a {@link ProtocolSystem}.
 *
 * @example
 * ```ts
 * const system = httpPromiseSystem(listener.url);
 * await system.start();
 * const { status, data } = await system.send({ kind: "promise.get", data: { id: "root" } }, now);
 * ```
 */
export function httpPromiseSystem(url: string, options: HttpPromiseSystemOptions = {}): HttpPromiseSystem {
  let corr = 0;
  let requests = 0;
  const head = (now: Instant) => ({ corrId: `h${++corr}`, version: VERSION, "resonate:debug_time": now });
  const envelope = (request: WireRequest, now: Instant): Record<string, unknown> => {
    const data: Record<string, unknown> = { ...request.data };
    // Nested actions are envelopes of their own (their heads carry no time: the outer one's counts).
    const inner = (action: WireRequest) => ({ kind: action.kind, head: { corrId: `h${++corr}`, version: VERSION }, data: action.data });
    if (data["action"] !== undefined) data["action"] = inner(data["action"] as WireRequest);
    if (Array.isArray(data["actions"])) data["actions"] = (data["actions"] as WireRequest[]).map(inner);
    return { kind: request.kind, head: head(now), data };
  };
  const post = async (body: Record<string, unknown>): Promise<Envelope> => {
    requests++;
    const response = await fetch(url, { method: "POST", headers: { "content-type": "application/json", ...options.headers }, body: JSON.stringify(body) });
    const text = await response.text();
    let answer: Envelope;
    try {
      answer = JSON.parse(text) as Envelope;
    } catch {
      throw new Error(`${body["kind"]}: HTTP ${response.status}, not an envelope: ${text.slice(0, 300)}`);
    }
    if (answer.head?.status !== response.status) throw new Error(`${body["kind"]}: HTTP ${response.status} but head.status ${answer.head?.status}`);
    if (answer.kind !== body["kind"] || answer.head.corrId !== (body["head"] as { corrId: string }).corrId) throw new Error(`${body["kind"]}: kind or corrId not echoed: ${text.slice(0, 300)}`);
    if (response.status >= 500) throw new Error(`${body["kind"]}: ${response.status} ${text.slice(0, 300)}`);
    return answer;
  };
  const debug = async (kind: string, data: Record<string, unknown>, now: Instant): Promise<unknown> => {
    const answer = await post({ kind, head: head(now), data });
    if (answer.head.status !== 200) throw new Error(`${kind}: ${answer.head.status} ${JSON.stringify(answer.data)} (is the server in debug mode?)`);
    return answer.data;
  };
  return {
    name: options.name ?? "http",
    get requests() {
      return requests;
    },
    async start() {
      await debug("debug.start", {}, Date.now());
    },
    async reset() {
      await debug("debug.reset", {}, Date.now());
    },
    async send(request, now): Promise<ProtocolAnswer> {
      const answer = await post(envelope(request, now));
      const data = answer.data as { action?: Envelope } | null;
      // A fence's inner answer is an envelope; the normal form nests it as { kind, status, data }.
      if (answer.head.status === 200 && data !== null && typeof data === "object" && data.action?.head !== undefined) {
        const { kind, head: inner, data: innerData } = data.action;
        return { status: 200, data: { ...data, action: { kind, status: inner.status, data: innerData } } };
      }
      return { status: answer.head.status, data: answer.data };
    },
    async tick(now) {
      await debug("debug.tick", { time: now }, now);
    },
    async snapshot(now) {
      const snap = (await debug("debug.snap", {}, now)) as Snap;
      const pair = (a: string, b: string) => `${a}\u0000${b}`;
      return {
        promises: [...snap.promises].sort(byKey((p) => String(p["id"]))),
        tasks: [...snap.tasks].sort(byKey((t) => t.id)),
        callbacks: snap.callbacks.map(({ awaited, awaiter }) => ({ awaited, awaiter })).sort(byKey((c) => pair(c.awaited, c.awaiter))),
        listeners: snap.listeners.map(({ id, address }) => ({ promise: id, address })).sort(byKey((l) => pair(l.promise, l.address))),
        schedules: [...snap.schedules].sort(byKey((s) => String(s["id"]))),
        messages: snap.messages
          .map(({ address, message }) =>
            message.kind === "execute"
              ? { kind: "execute" as const, id: message.data.task!.id, address, version: message.data.task!.version }
              : { kind: "unblock" as const, id: message.data.promise!.id, address },
          )
          .sort(byKey((m) => `${m.kind}\u0000${m.id}\u0000${m.address}`)),
        promiseTimers: snap.promiseTimeouts.map(({ id, timeout }) => ({ id, at: timeout })).sort(byKey((t) => t.id)),
        taskTimers: snap.taskTimeouts.map(({ id, timeout }) => ({ id, at: timeout })).sort(byKey((t) => t.id)),
      };
    },
  };
}
