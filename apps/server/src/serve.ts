import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { serve as serveNode } from "@hono/node-server";

/** What `serve()` serves: a `BelayServer`, a `PromiseServer`, or anything with the same `fetch` and `close`. */
export interface Servable {
  readonly fetch: (request: Request, env?: unknown) => Response | Promise<Response>;
  close(): Promise<void>;
  /** Told the URL it is served at, once bound. */
  setServerUrl?(url: string): void;
}

/** A listening server. */
export interface Listener {
  /** `http://host:port`, with the port actually bound (useful with port 0). */
  readonly url: string;
  readonly port: number;
  /** Stops accepting connections, ends live streams and open connections, and stops the server's timers. */
  close(): Promise<void>;
}

/** Serves a `BelayServer` (or a `PromiseServer`) on Node's HTTP server. */
export async function serve(server: Servable, options: { readonly host?: string; readonly port?: number } = {}): Promise<Listener> {
  const host = options.host ?? "127.0.0.1";
  const http = await new Promise<Server>((resolve, reject) => {
    const s = serveNode({ fetch: server.fetch, hostname: host, port: options.port ?? 8080 }, () => resolve(s as Server)) as Server;
    s.once("error", reject);
  });
  const { port } = http.address() as AddressInfo;
  const shown = host.includes(":") ? `[${host}]` : host === "0.0.0.0" ? "127.0.0.1" : host;
  const url = `http://${shown}:${port}`;
  server.setServerUrl?.(url);
  return {
    url,
    port,
    async close() {
      await server.close();
      await new Promise<void>((resolve) => {
        http.close(() => resolve());
        http.closeIdleConnections();
        // Live streams stay open by design; they are ended above, anything left is cut here.
        setTimeout(() => http.closeAllConnections(), 1_000).unref();
      });
    },
  };
}
