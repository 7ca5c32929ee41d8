import type { PromiseStore } from "@belay/contract";
import { type Clock, type Logger, consoleLogger, systemClock } from "@belay/core";
import type { Hono } from "hono";
import { Access, type Authorize } from "../auth/access.js";
import type { ServerToken } from "../auth/tokens.js";
import { BackgroundLoop } from "./background-loop.js";
import { createPromiseApp } from "./promise-app.js";
import { type AnonymousPromiseAccess, PromiseAccess } from "./promise-access.js";
import { OutboxDrain } from "./outbox-drain.js";
import { PollHub } from "./poll-hub.js";
import { TimerScan } from "./timer-scan.js";

/** Options of {@link createPromiseServer}. */
export interface PromiseServerOptions {
  /** The promise store (`openPromiseStore(url)` of `@belay/host`), migrated. */
  readonly store: PromiseStore;
  /** Bearer tokens, as for the job API; the `promises` permission uses this listener. */
  readonly tokens?: readonly ServerToken[];
  /** The host's permission callback; when given it decides (tokens are not consulted). */
  readonly authorize?: Authorize;
  /**
   * What a caller without credentials may do: `"none"`, or `"local"` (everything, from a program
   * on this machine: loopback peer, loopback host name, no `Origin`). Default: `"none"` when
   * tokens or `authorize` are given, else `"local"`.
   */
  readonly anonymous?: AnonymousPromiseAccess;
  /** Answer the debug kinds and `resonate:debug_time` (for trace checkers). Default false: 403. */
  readonly debug?: boolean;
  /** Run the timeout scan and the outbox drain in this process. Default true. */
  readonly backgroundLoops?: boolean;
  /** Largest envelope read, in bytes. Default 16 MiB. */
  readonly bodyLimitBytes?: number;
  /** Pollers connected at once at most (503 beyond). Default 1,000. */
  readonly maxPollers?: number;
  /** How often the timeout scan runs. Default 1 s. */
  readonly timerIntervalMs?: number;
  /**
   * How often the outbox drain looks for messages without being told of them. It is woken at once
   * by every commit that writes messages (`subscribeOutbox`: this process's, and on PostgreSQL
   * every process's) and by every poller that connects; the interval covers lost hints, lapsed
   * takes and stores whose hints reach no other process (SQLite). Default 250 ms.
   */
  readonly outboxIntervalMs?: number;
  /** How long a taken message stays invisible to other takers (the retry cadence of an undelivered one). Default 5 s. */
  readonly outboxLeaseMs?: number;
  /** How long after it was written an `unblock` nobody takes is given up. Default 10 min. */
  readonly unblockGiveUpMs?: number;
  /** `head.serverUrl` of `execute` messages. Default: the listener's URL once `serve()` binds it. */
  readonly serverUrl?: string;
  readonly clock?: Clock;
  readonly logger?: Logger;
}

/** The durable-promise listener: the Resonate envelope over a promise store, with its background loops. */
export interface PromiseServer {
  readonly app: Hono;
  /** `app.fetch`; `env` is what the adapter hands over (`@hono/node-server`: `{ incoming, outgoing }`, whose socket gives the peer address). */
  readonly fetch: (request: Request, env?: unknown) => Response | Promise<Response>;
  /** The pollers connected now. */
  readonly pollers: PollHub;
  /** What a caller without credentials may do (see `PromiseServerOptions.anonymous`). */
  readonly anonymous: AnonymousPromiseAccess;
  /** The outbox drain (one pass: `drain.drainOnce()`; one sweep of every message: `drain.sweep()`). */
  readonly drain: OutboxDrain;
  /** The timeout scan (one pass: `scan.scan(now)`). */
  readonly scan: TimerScan;
  /** Sets the URL `execute` messages name (`serve()` does, with the bound port). */
  setServerUrl(url: string): void;
  /** Stops the loops and ends every poller's connection. Does not close the store. */
  close(): Promise<void>;
}

/**
 * Builds the durable-promise listener over a promise store: `POST /` speaks the Resonate
 * envelope (protocol "2026-04-01"), `GET /poll/:group/:id` streams messages to workers, and two
 * background loops — the timeout scan and the outbox drain — keep time and deliver. Serve it with
 * `serve()` of this package (it listens on its own port, default 8001, beside the job API).
 *
 * @example
 * ```ts
 * const promises = await openPromiseStore("sqlite:./belay.db");
 * await promises.migrate();
 * const listener = await serve(createPromiseServer({ store: promises }), { port: 8001 });
 * // new Resonate({ url: listener.url }) from @resonatehq/sdk runs its durable functions here.
 * ```
 */
export function createPromiseServer(options: PromiseServerOptions): PromiseServer {
  const { store } = options;
  const clock = options.clock ?? systemClock;
  const logger = options.logger ?? consoleLogger({ component: "belay-promises" });
  let serverUrl: string | null = options.serverUrl ?? null;
  const access = new PromiseAccess(new Access({ ...(options.tokens === undefined ? {} : { tokens: options.tokens }), authorize: options.authorize }), options.anonymous);

  let drainLoop: BackgroundLoop | null = null;
  const hub = new PollHub(options.maxPollers ?? 1_000, () => drainLoop?.wake());
  const drain = new OutboxDrain({
    store,
    hub,
    clock,
    logger,
    serverUrl: () => serverUrl,
    ...(options.outboxLeaseMs === undefined ? {} : { leaseMs: options.outboxLeaseMs }),
    ...(options.unblockGiveUpMs === undefined ? {} : { unblockGiveUpMs: options.unblockGiveUpMs }),
  });
  const scan = new TimerScan({ store, logger });
  drainLoop = new BackgroundLoop("outbox drain", { intervalMs: options.outboxIntervalMs ?? 250, logger, pass: () => drain.pass() });
  const scanLoop = new BackgroundLoop("timeout scan", {
    intervalMs: options.timerIntervalMs ?? 1_000,
    logger,
    pass: async () => {
      const result = await scan.scan(clock.now());
      // A task dispatched again by its retry timer is a message nobody acknowledged in time.
      if (result.tasksRetried + result.leasesExpired > 0) {
        logger.info("timeout scan: tasks dispatched again", { tasksRetried: result.tasksRetried, leasesExpired: result.leasesExpired });
      }
      return result.more;
    },
  });
  const loops = [scanLoop, drainLoop];
  let unsubscribe: (() => void) | null = null;

  const app = createPromiseApp({
    store,
    access,
    clock,
    logger,
    debug: options.debug ?? false,
    debugTargets: { store, loops, scan },
    bodyLimitBytes: options.bodyLimitBytes ?? 16 * 1024 * 1024,
    hub,
    pollWriteTimeoutMs: 2_000,
    ready: async () => {
      try {
        await withTimeout(store.ping(), 2_000);
        return { ok: true };
      } catch (error) {
        return { ok: false, error: error instanceof Error ? error.message : String(error) };
      }
    },
  });
  if (options.backgroundLoops ?? true) {
    // Every commit that writes messages wakes the drain: here, and on PostgreSQL in every process.
    unsubscribe = store.subscribeOutbox(() => drainLoop?.wake());
    for (const loop of loops) loop.start();
  }

  return {
    app,
    fetch: (request, env) => app.fetch(request, env),
    pollers: hub,
    anonymous: access.anonymous,
    drain,
    scan,
    setServerUrl(url) {
      serverUrl = options.serverUrl ?? url;
    },
    async close() {
      unsubscribe?.();
      unsubscribe = null;
      await Promise.all(loops.map((loop) => loop.stop()));
      hub.closeAll();
    },
  };
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}
