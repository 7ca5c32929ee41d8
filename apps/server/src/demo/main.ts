import { randomBytes } from "node:crypto";
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { isBelayError } from "@belay/contract";
import { consoleLogger } from "@belay/core";
import { type RunningServer, startServer } from "../start-server.js";
import { jobs, observers, schedules } from "./jobs.js";
import { seed, startTrickle } from "./trickle.js";

// `pnpm start`: the server, an embedded worker and a trickle of demo jobs on ./belay.db.

async function main(): Promise<void> {
  const { values } = parseArgs({
    args: process.argv.slice(2).filter((a) => a !== "--"),
    options: { port: { type: "string" }, host: { type: "string" }, store: { type: "string" } },
  });
  // pnpm runs scripts in the package folder; INIT_CWD is where `pnpm start` was typed (the repo root).
  const root = process.env["INIT_CWD"] ?? process.cwd();
  const store = values.store ?? `sqlite:${resolve(root, "belay.db")}`;
  const requested = Number(values.port ?? process.env["PORT"] ?? 8080);
  const secret = randomBytes(18).toString("base64url");
  const args = {
    store,
    host: values.host ?? "127.0.0.1",
    port: requested,
    migrate: true,
    withWorker: true,
    jobs: null,
    tokens: [{ name: "admin", secret }],
    title: null,
  };
  const worker = { pollIntervalMs: 250, maintenanceIntervalMs: 1_000, leaseMs: 30_000, stopTimeoutMs: 5_000 };
  const module = { jobs, observers, schedules };
  const logger = consoleLogger({ component: "belay-demo" }, "warn");
  let running: RunningServer;
  try {
    running = await startServer(args, { jobsModule: module, worker, logger });
  } catch (error) {
    if ((error as NodeJS.ErrnoException)?.code !== "EADDRINUSE") throw error;
    console.log(`demo: port ${requested} is taken; using a free one`);
    running = await startServer({ ...args, port: 0 }, { jobsModule: module, worker, logger });
  }
  await seed(running.store);
  const stopTrickle = startTrickle(running.store, (error) => {
    if (!isBelayError(error, "BELAY_TRANSIENT_STORE") && !isBelayError(error, "BELAY_STORE_CLOSED")) console.error("demo: enqueue failed:", error);
  });

  console.log(`
  Belay demo: server + embedded worker + a trickle of jobs on ${store}

  Dashboard: ${running.url}/?token=${secret}
  API:       ${running.url}/api/v1   (OpenAPI: ${running.url}/api/v1/openapi.json)
  Token:     admin (all permissions)  Authorization: Bearer ${secret}

  Ctrl-C stops.
`);

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    console.log(`demo: ${signal}: stopping`);
    stopTrickle();
    running.stop().then(
      () => process.exit(0),
      (error: unknown) => {
        console.error("demo: stop failed:", error);
        process.exit(1);
      },
    );
  };
  process.on("SIGTERM", () => stop("SIGTERM"));
  process.on("SIGINT", () => stop("SIGINT"));
}

main().catch((error: unknown) => {
  console.error(`demo: ${isBelayError(error) ? `${error.code}: ` : ""}${(error as Error)?.stack ?? String(error)}`);
  process.exit(1);
});
