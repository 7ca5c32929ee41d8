import type { JobStore, PromiseStore } from "@belay/contract";
import { type AnyJobDefinition, type Clock, type Logger, type WorkerEvent, type WorkerHealth, consoleLogger, systemClock } from "@belay/core";
import type { WorkerHost } from "@belay/host";
import { Hono } from "hono";
import { createApiApp, renderApiError } from "./api/api-app.js";
import { Access, type Authorize } from "./auth/access.js";
import { SessionCookies } from "./auth/sessions.js";
import type { ServerToken } from "./auth/tokens.js";
import type { ServerContext } from "./context.js";
import { createDashboardApp, type LiveStreams, notFoundPage } from "./dashboard/dashboard-app.js";
import { allowedMethods, drainUnreadBody, methodNotAllowed, refuseDotSegments } from "./http/hygiene.js";
import { sampleHostMetrics } from "./monitor/host-metrics-sampler.js";
import { LiveFeed } from "./monitor/live-feed.js";
import { ThroughputRing } from "./monitor/throughput.js";
import { JobCatalog } from "./operations/catalog.js";

/** Options of {@link createServer}. */
export interface ServerOptions {
  readonly store: JobStore;
  /**
   * Job definitions the server knows: enqueue validates payloads against their schemas and takes
   * default queues from them. Default: those of `workerHost`, else none (raw enqueue).
   */
  readonly jobs?: readonly AnyJobDefinition[];
  /** An embedded worker host: its health and execution counts show on the overview. */
  readonly workerHost?: WorkerHost;
  /** Or any worker's health (when embedding a `Worker` directly; feed its events to `recordWorkerEvent`). */
  readonly workerHealth?: () => WorkerHealth | null;
  /** Bearer tokens; each token's name is the actor audited for its actions. */
  readonly tokens?: readonly ServerToken[];
  /** The host's permission callback; when given it decides every permission (tokens are not consulted). */
  readonly authorize?: Authorize;
  /**
   * A promise store (the durable-promise listener's): the dashboard then shows its promises and
   * promise schedules (read only). The server does not close it.
   */
  readonly promises?: PromiseStore;
  /** Dashboard title. Default `Belay`. */
  readonly title?: string;
  /** Largest request body the API reads. Default 32 MiB. */
  readonly bodyLimitBytes?: number;
  /** How often the live feed reads counts. Default 2 s. */
  readonly livePollMs?: number;
  /**
   * The secret (at least 32 characters) that seals the dashboard's session cookies. Give the
   * same one to every instance and across restarts to keep browsers signed in; changing it signs
   * everybody out. Default: a random secret per process (a restart signs everybody out).
   */
  readonly sessionSecret?: string;
  /** Mark cookies `Secure` (serve over HTTPS). Default false. */
  readonly secureCookies?: boolean;
  readonly clock?: Clock;
  readonly logger?: Logger;
}

/** A built server: the Hono app plus the helpers a host or a test needs. */
export interface BelayServer {
  /** The whole app: the dashboard at `/`, the API at `/api/v1`. */
  readonly app: Hono;
  /**
   * `app.fetch`, for `serve()` or in-process requests. `env` is what an adapter hands over
   * (`@hono/node-server`: `{ incoming, outgoing }`, whose raw request target the server checks).
   */
  readonly fetch: (request: Request, env?: unknown) => Response | Promise<Response>;
  /** The overview's per-second throughput counts (this process's view). */
  readonly throughput: ThroughputRing;
  /** Counts a worker event toward the overview's throughput (for a `Worker` embedded by hand). */
  recordWorkerEvent(event: WorkerEvent): void;
  /** Stops the live feed, the samplers and every open live stream. Does not close the store. */
  close(): Promise<void>;
}

/**
 * Builds the Belay server over a store: the HTTP/JSON API (`/api/v1`, OpenAPI document at
 * `/api/v1/openapi.json`) and the dashboard (`/`). Run it with `serve()` from this package or
 * mount `app` in a Hono application of your own.
 *
 * @example
 * ```ts
 * const server = createServer({
 *   store,
 *   authorize: (request, permission) => ({ allowed: permission === "view" || isAdmin(request), actor: userOf(request) }),
 * });
 * const listener = await serve(server, { port: 8080 });
 * ```
 */
export function createServer(options: ServerOptions): BelayServer {
  const { store, workerHost } = options;
  const clock = options.clock ?? systemClock;
  const logger = options.logger ?? consoleLogger({ component: "belay-server" });
  const throughput = new ThroughputRing(300);
  const live = new LiveFeed({ store, clock, logger, intervalMs: options.livePollMs ?? 2_000, throughput });
  const workerHealth = options.workerHealth ?? (workerHost ? () => workerHost.worker.health() : () => null);
  const ctx: ServerContext = {
    store,
    catalog: new JobCatalog(options.jobs ?? workerHost?.jobs.jobs ?? []),
    access: new Access({ ...(options.tokens === undefined ? {} : { tokens: options.tokens }), authorize: options.authorize }),
    sessions: new SessionCookies(options.sessionSecret ?? null, () => clock.now()),
    clock,
    logger,
    throughput,
    live,
    workerHealth,
    title: options.title ?? "Belay",
    secureCookies: options.secureCookies ?? false,
  };
  const stopSampler = workerHost === undefined ? null : sampleHostMetrics(workerHost.metrics, throughput, clock);
  if (stopSampler !== null) live.countDeltas = false;
  live.start();

  const streams: LiveStreams = new Set();
  const bodyLimitBytes = options.bodyLimitBytes ?? 32 * 1024 * 1024;
  const api = createApiApp(ctx, { bodyLimitBytes });
  const dashboard = createDashboardApp(ctx, streams, options.promises ?? null);
  const app = new Hono();
  app.use("*", refuseDotSegments());
  app.use("*", drainUnreadBody(bodyLimitBytes));
  app.route("/api/v1", api);
  app.all("/api/*", (c) => {
    const allow = allowedMethods(app, c.req.path);
    if (allow.length > 0) return renderApiError(methodNotAllowed(c.req.method, c.req.path, allow), c, ctx);
    return c.json({ error: { code: "BELAY_NOT_FOUND", field: null, message: `no route ${c.req.method} ${c.req.path}` } }, 404);
  });
  app.route("/", dashboard);
  app.notFound((c) => {
    const allow = allowedMethods(app, c.req.path);
    if (allow.length > 0) return c.text(`${c.req.method} is not allowed here (allowed: ${allow.join(", ")})`, 405, { allow: allow.join(", ") });
    return c.html(notFoundPage(), 404);
  });
  app.onError((error, c) => {
    if (c.req.path.startsWith("/api/")) return renderApiError(error, c, ctx);
    logger.error("dashboard: unexpected error", { path: c.req.path, error: error instanceof Error ? (error.stack ?? error.message) : String(error) });
    const transient = (error as { code?: string })?.code === "BELAY_TRANSIENT_STORE";
    return c.html(
      `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${transient ? "Busy" : "Error"}</title></head><body><h1>${
        transient ? "The store is busy" : "Something went wrong"
      }</h1><p>${transient ? "Reload in a moment." : "The error is in the server's log."}</p></body></html>`,
      transient ? 503 : 500,
      transient ? { "retry-after": "1" } : {},
    );
  });

  return {
    app,
    fetch: (request, env) => app.fetch(request, env),
    throughput,
    recordWorkerEvent(event) {
      live.countDeltas = false;
      throughput.recordWorkerEvent(event, clock.now());
    },
    async close() {
      stopSampler?.();
      for (const end of [...streams]) end();
      await live.stop();
    },
  };
}
