import { textProblem } from "@belay/contract";
import type { Context } from "hono";
import { Hono } from "hono";
import { streamSSE } from "hono/streaming";
import { type EnvelopeContext, handleEnvelope } from "./handle-envelope.js";
import type { PollHub } from "./poll-hub.js";
import { refusalMessage } from "./promise-access.js";
import { SsePoller } from "./sse-poller.js";

// The routes of the durable-promise listener:
//
// - `POST /` — the envelope (handle-envelope.ts).
// - `GET /poll/:group/:id` — Server-Sent Events: the messages for this poller.
// - `GET /health` — 200 while the process serves; `GET /ready` — 200 while the store answers, else 503.
// - The pre-2026 REST paths (`/promises…`, `/tasks…`, `/schedules…`) — 410: this server speaks
//   only the envelope.

/** What the routes work with, beyond the envelope handler's context. */
export interface PromiseAppContext extends EnvelopeContext {
  readonly hub: PollHub;
  /** A poller's write that takes longer ends its connection. */
  readonly pollWriteTimeoutMs: number;
  /** Whether the store answers (for `/ready`). */
  readonly ready: () => Promise<{ readonly ok: true } | { readonly ok: false; readonly error: string }>;
}

/** Longest group or id of a poller, in characters. */
const MAX_POLL_NAME = 1_024;

/** The socket peer of a request served by `@hono/node-server`, or `null`. */
export function peerAddressOf(c: Context): string | null {
  const address = (c.env as { incoming?: { socket?: { remoteAddress?: unknown } } } | undefined)?.incoming?.socket?.remoteAddress;
  return typeof address === "string" ? address : null;
}

const noStore = { "cache-control": "no-store" };

function json(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json", ...noStore, ...headers } });
}

function pollNameProblem(name: string): string | null {
  if (name.length === 0) return "must not be empty";
  if (name.length > MAX_POLL_NAME) return `must be at most ${MAX_POLL_NAME} characters`;
  return textProblem(name);
}

/** The listener's Hono app. */
export function createPromiseApp(ctx: PromiseAppContext): Hono {
  const app = new Hono();

  app.post("/", async (c) => {
    const outcome = await handleEnvelope(ctx, c.req.raw, peerAddressOf(c));
    return json(outcome.status, outcome.body, { ...outcome.headers, ...(outcome.close ? { connection: "close" } : {}) });
  });
  app.all("/", (c) => json(405, { error: `${c.req.method} is not allowed on / (allowed: POST)` }, { allow: "POST" }));

  app.get("/poll/:group/:id", async (c) => {
    const decision = await ctx.access.check(c.req.raw, peerAddressOf(c), null);
    if (!decision.allowed) {
      return json(decision.status, { error: refusalMessage(decision) }, decision.status === 401 ? { "www-authenticate": 'Bearer realm="belay"' } : {});
    }
    const group = c.req.param("group");
    const id = c.req.param("id");
    for (const [field, value] of [["group", group], ["id", id]] as const) {
      const problem = pollNameProblem(value);
      if (problem !== null) return json(400, { error: `invalid ${field}: ${problem}` });
    }
    const poller = new SsePoller(group, id, { writeTimeoutMs: ctx.pollWriteTimeoutMs, onClose: (p) => ctx.hub.remove(p) });
    if (!ctx.hub.add(poller)) {
      return json(503, { error: `too many pollers (${ctx.hub.capacity}); retry shortly` }, { "retry-after": "5" });
    }
    return streamSSE(c, async (stream) => {
      await poller.attach(stream);
      await poller.ended;
    });
  });

  app.get("/health", () => json(200, { status: "ok" }));
  app.get("/ready", async () => {
    const ready = await ctx.ready();
    return ready.ok ? json(200, { status: "ready" }) : json(503, { status: "unavailable", error: ready.error }, { "retry-after": "5" });
  });

  for (const legacy of ["/promises", "/tasks", "/schedules"]) {
    app.all(legacy, () => json(410, { error: "this server speaks the 2026-04-01 envelope only: POST / {kind, head, data}" }));
    app.all(`${legacy}/*`, () => json(410, { error: "this server speaks the 2026-04-01 envelope only: POST / {kind, head, data}" }));
  }
  app.notFound((c) => json(404, { error: `no route ${c.req.method} ${c.req.path}` }));
  app.onError((error, c) => {
    ctx.logger.error("promises: unexpected error", { path: c.req.path, error: error instanceof Error ? (error.stack ?? error.message) : String(error) });
    return json(500, { error: "internal server error" });
  });
  return app;
}
