import type { JobStore } from "@belay/contract";
import { snapshot } from "@belay/conformance";
import { defineJob, silentLogger } from "@belay/core";
import { MemoryStore } from "@belay/memory";
import { afterAll, beforeAll, expect } from "vitest";
import { z } from "zod";
import { type BelayServer, type ServerOptions, createServer } from "../src/index.js";

/** Secrets of the test tokens. */
export const ADMIN = "admin-secret-123";
export const VIEWER = "viewer-secret-123";
export const OPERATOR = "operator-secret-1";

export const TOKENS = [
  { name: "admin", secret: ADMIN },
  { name: "viewer", secret: VIEWER, permissions: ["view", "viewSensitive"] as const },
  { name: "operator", secret: OPERATOR, permissions: ["view", "cancel", "requeue", "pauseQueue", "triggerSchedule"] as const },
];

export const welcome = defineJob({
  name: "email.welcome",
  queue: "mail",
  tags: ["email"],
  schema: z.object({ userId: z.string().min(1) }),
  handler: async () => ({ sent: true }),
});

export const resize = defineJob({
  name: "image.resize",
  queue: "media",
  schema: z.object({ width: z.number().int().positive() }),
  handler: async () => undefined,
});

export interface Harness {
  readonly store: MemoryStore;
  readonly server: BelayServer;
  request(method: string, path: string, options?: { token?: string; body?: unknown; rawBody?: string; headers?: Record<string, string> }): Promise<Response>;
  json<T = any>(method: string, path: string, options?: { token?: string; body?: unknown }): Promise<{ status: number; body: T; headers: Headers }>;
  close(): Promise<void>;
}

/** A server over a fresh memory store, driven in-process through `fetch`. */
export async function harness(options: Partial<ServerOptions> & { store?: JobStore } = {}): Promise<Harness> {
  const store = (options.store as MemoryStore | undefined) ?? new MemoryStore();
  await store.migrate();
  const server = createServer({ tokens: TOKENS, logger: silentLogger, livePollMs: 60_000, ...options, store });
  const request: Harness["request"] = (method, path, o = {}) => {
    const headers: Record<string, string> = { ...o.headers };
    if (o.token) headers["authorization"] = `Bearer ${o.token}`;
    let body: string | undefined;
    if (o.rawBody !== undefined) body = o.rawBody;
    else if (o.body !== undefined) body = JSON.stringify(o.body);
    if (body !== undefined && headers["content-type"] === undefined) headers["content-type"] = "application/json";
    return Promise.resolve(server.fetch(new Request(`http://belay.test${path}`, { method, headers, ...(body === undefined ? {} : { body }) })));
  };
  return {
    store,
    server,
    request,
    async json(method, path, o = {}) {
      const response = await request(method, path, o);
      const text = await response.text();
      return { status: response.status, body: text.length > 0 ? JSON.parse(text) : null, headers: response.headers };
    },
    close: () => server.close(),
  };
}

/**
 * A harness over `store()` for the enclosing block's tests, opened (then given to `seed`) before
 * them and closed after them; answers a getter.
 */
export function harnessFor(store: () => JobStore, seed: (h: Harness) => Promise<void> = async () => {}): () => Harness {
  let h: Harness | undefined;
  beforeAll(async () => {
    h = await harness({ store: store() });
    await seed(h);
  });
  afterAll(async () => {
    await h?.close();
  });
  return () => h!;
}

/** Everything the store shows through its reads (from the conformance suite). */
export function storeSnapshot(store: JobStore): Promise<unknown> {
  return snapshot(store);
}

/**
 * Fetches a dashboard page as an anonymous viewer and checks it stands alone: 200, a whole
 * document, its CSS inlined under the nonce, no stylesheet or script fetched, a strict CSP.
 * Answers the page's text.
 */
export async function expectStandalonePage(h: Harness, path: string): Promise<string> {
  const res = await h.request("GET", path);
  expect(res.status).toBe(200);
  const text = await res.text();
  expect(text).toMatch(/^<!doctype html>/);
  expect(text).toContain("<style nonce=");
  expect(text).not.toMatch(/<link[^>]+stylesheet|<script[^>]+src=/);
  expect(res.headers.get("content-security-policy")).toContain("default-src 'none'");
  return text;
}
