import { type Server, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { WorkerHealth } from "@belay/core";
import type { Registry } from "prom-client";

/** Where a {@link startHealthServer} listens and what it reports. */
export interface HealthServerOptions {
  /** Listen address, e.g. `127.0.0.1` or `::`. */
  readonly host: string;
  /** 0 = any free port (read the chosen one from `url`). */
  readonly port: number;
  /** The worker's health, or `null` while there is no worker yet. */
  readonly health: () => WorkerHealth | null;
  /** Served as `/metrics` (e.g. `HostMetrics.registry`). */
  readonly registry: Registry;
}

/** A listening health server. */
export interface HealthServer {
  /** `http://host:port`, with the port actually bound. */
  readonly url: string;
  /** Stops listening; resolves once open connections are done. */
  close(): Promise<void>;
}

/**
 * `/healthz` (200 while the process serves; 503 once every group has halted), `/readyz` (200 while
 * the worker accepts work; 503 while starting, stopping, or with a group wholly halted), and
 * `/metrics` (Prometheus text). Both health routes answer the per-pump health as JSON.
 */
export async function startHealthServer(options: HealthServerOptions): Promise<HealthServer> {
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0];
    const send = (status: number, body: string, type = "application/json") => {
      res.writeHead(status, { "content-type": type, "cache-control": "no-store" });
      res.end(body);
    };
    const health = options.health();
    if (path === "/healthz") {
      const alive = health !== null && health.groups.some((g) => g.status !== "halted");
      send(alive ? 200 : 503, JSON.stringify(health));
    } else if (path === "/readyz") {
      send(health?.ready ? 200 : 503, JSON.stringify(health));
    } else if (path === "/metrics") {
      options.registry.metrics().then(
        (text) => send(200, text, options.registry.contentType),
        (error: unknown) => send(500, String(error), "text/plain"),
      );
    } else send(404, JSON.stringify({ error: "not found" }));
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const host = options.host.includes(":") ? `[${options.host}]` : options.host;
  return {
    url: `http://${host}:${port}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
