import { randomBytes } from "node:crypto";
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { isBelayError } from "@belay/contract";
import { consoleLogger } from "@belay/core";
import { type RunningServer, startServer } from "../start-server.js";
import { jobs, observers, schedules } from "./jobs.js";
import { seed, startTrickle } from "./trickle.js";

// `pnpm start`: the server (job API, dashboard and durable-promise listener), an embedded worker
// and a trickle of demo jobs on ./belay.db.

async function main(): Promise<void> {
  const { values } = parseArgs({
    args: process.argv.slice(2).filter((a) => a !== "--"),
    options: { port: { type: "string" }, "promises-port": { type: "string" }, host: { type: "string" }, store: { type: "string" } },
  });
  // pnpm runs scripts in the package folder; INIT_CWD is where `pnpm start` was typed (the repo root).
  const root = process.env["INIT_CWD"] ?? process.cwd();
  const store = values.store ?? `sqlite:${resolve(root, "belay.db")}`;
  const requested = Number(values.port ?? process.env["PORT"] ?? 8080);
  const requestedPromises = Number(values["promises-port"] ?? process.env["BELAY_PROMISES_PORT"] ?? 8001);
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
    promises: { host: values.host ?? "127.0.0.1", port: requestedPromises },
    debug: false,
  };
  const worker = { pollIntervalMs: 250, maintenanceIntervalMs: 1_000, leaseMs: 30_000, stopTimeoutMs: 5_000 };
  const module = { jobs, observers, schedules };
  const logger = consoleLogger({ component: "belay-demo" }, "warn");
  let running: RunningServer | null = null;
  let attempt = args;
  // A port that is taken is replaced by a free one (the API's, the promise listener's, or both).
  for (let tries = 0; running === null; tries++) {
    try {
      running = await startServer(attempt, { jobsModule: module, worker, logger });
    } catch (error) {
      const taken = (error as NodeJS.ErrnoException & { port?: number })?.code === "EADDRINUSE" ? (error as { port?: number }).port : undefined;
      if (taken === undefined || tries >= 2) throw error;
      if (taken === attempt.port && attempt.port !== 0) {
        console.log(`demo: port ${taken} is taken; using a free one for the dashboard and API`);
        attempt = { ...attempt, port: 0 };
      } else if (taken === attempt.promises.port && attempt.promises.port !== 0) {
        console.log(`demo: port ${taken} is taken; using a free one for durable promises`);
        attempt = { ...attempt, promises: { ...attempt.promises, port: 0 } };
      } else throw error;
    }
  }
  await seed(running.store);
  const stopTrickle = startTrickle(running.store, (error) => {
    if (!isBelayError(error, "BELAY_TRANSIENT_STORE") && !isBelayError(error, "BELAY_STORE_CLOSED")) console.error("demo: enqueue failed:", error);
  });

  console.log(`
  Belay demo: server + embedded worker + a trickle of jobs on ${store}

  Dashboard: ${running.url}/?token=${secret}
  API:       ${running.url}/api/v1   (OpenAPI: ${running.url}/api/v1/openapi.json)
  Promises:  ${running.promises?.url ?? "(off)"}   (Resonate SDK: new Resonate({ url: "${running.promises?.url ?? ""}", token }))
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
