import type { Instant, PromiseStore } from "@belay/contract";
import { type Clock, silentLogger } from "@belay/core";
import { MemoryPromiseStore } from "@belay/memory";
import { afterEach } from "vitest";
import { type PromiseServer, type PromiseServerOptions, createPromiseServer } from "../src/index.js";

// Drives a durable-promise listener in process: envelopes through `fetch`, with the socket peer
// the Node adapter would hand over (loopback unless told otherwise), on a clock the test moves.

export const VERSION = "2026-04-01";

/** A clock the test sets. */
export class ManualClock implements Clock {
  time: Instant;
  constructor(time: Instant) {
    this.time = time;
  }
  now(): Instant {
    return this.time;
  }
  setTimer(): { cancel(): void } {
    return { cancel() {} };
  }
}

export interface SendOptions {
  readonly token?: string;
  readonly headers?: Record<string, string>;
  /** The socket peer; default 127.0.0.1; `null`: none known. */
  readonly peer?: string | null;
  /** The request URL's host; default 127.0.0.1:8001. */
  readonly host?: string;
  readonly rawBody?: string | Uint8Array;
}

export interface Answer {
  readonly status: number;
  readonly headers: Headers;
  readonly body: any;
}

export interface PromiseHarness {
  readonly store: PromiseStore;
  readonly server: PromiseServer;
  readonly clock: ManualClock;
  /** POSTs an envelope `{kind, head: {corrId, version, ...head}, data}`. */
  send(kind: string, data: unknown, options?: SendOptions & { readonly head?: Record<string, unknown>; readonly corrId?: string }): Promise<Answer>;
  /** POSTs a raw body (or any JSON value) to `/`. */
  post(body: unknown, options?: SendOptions): Promise<Answer>;
  /** A request to any path. */
  request(method: string, path: string, options?: SendOptions): Promise<Response>;
  close(): Promise<void>;
}

let corr = 0;

/** A listener over a fresh memory promise store (background loops off: the test runs the passes). */
export async function promiseHarness(options: Partial<PromiseServerOptions> = {}): Promise<PromiseHarness> {
  const store = options.store ?? new MemoryPromiseStore();
  await store.migrate();
  const clock = new ManualClock(1_000_000);
  const server = createPromiseServer({ logger: silentLogger, backgroundLoops: false, clock, ...options, store });
  const request = async (method: string, path: string, o: SendOptions = {}) => {
    const headers: Record<string, string> = { ...o.headers };
    if (o.token !== undefined) headers["authorization"] = `Bearer ${o.token}`;
    if (o.rawBody !== undefined && headers["content-type"] === undefined) headers["content-type"] = "application/json";
    const peer = o.peer === undefined ? "127.0.0.1" : o.peer;
    const env = peer === null ? undefined : { incoming: { socket: { remoteAddress: peer } } };
    const init: RequestInit = { method, headers, ...(o.rawBody === undefined ? {} : { body: o.rawBody as BodyInit }) };
    return server.fetch(new Request(`http://${o.host ?? "127.0.0.1:8001"}${path}`, init), env);
  };
  const post = async (body: unknown, o: SendOptions = {}) => {
    const response = await request("POST", "/", { ...o, rawBody: o.rawBody ?? (typeof body === "string" ? body : JSON.stringify(body)) });
    const text = await response.text();
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      // not JSON: the test looks at the text
    }
    return { status: response.status, headers: response.headers, body: parsed };
  };
  return {
    store,
    server,
    clock,
    post,
    request,
    send: (kind, data, o = {}) => post({ kind, head: { corrId: o.corrId ?? `c${++corr}`, version: VERSION, ...o.head }, data }, o),
    close: () => server.close(),
  };
}

/**
 * A `promiseHarness` opener for a test file: every harness it opens is closed after its test.
 * Call at the top level of the file.
 */
export function promiseHarnesses(): (options?: Partial<PromiseServerOptions>) => Promise<PromiseHarness> {
  const open: PromiseHarness[] = [];
  afterEach(async () => {
    for (const h of open.splice(0)) await h.close();
  });
  return async (options = {}) => {
    const h = await promiseHarness(options);
    open.push(h);
    return h;
  };
}

/** A nested envelope (task.create/fulfill/fence `action`, task.suspend `actions`). */
export function nested(kind: string, data: unknown, corrId = `n${++corr}`): unknown {
  return { kind, head: { corrId, version: VERSION }, data };
}

/** Every path in `value` holding `null` (the protocol omits optional fields instead). */
export function nullPaths(value: unknown, at = "$"): string[] {
  if (value === null) return [at];
  if (Array.isArray(value)) return value.flatMap((v, i) => nullPaths(v, `${at}[${i}]`));
  if (typeof value === "object") return Object.entries(value as Record<string, unknown>).flatMap(([k, v]) => nullPaths(v, `${at}.${k}`));
  return [];
}
