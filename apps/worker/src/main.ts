#!/usr/bin/env node
// belay-worker: the command line on @belay/host. Flags and signals live here; everything a
// host does (store URL, jobs module, groups, metrics, health, graceful stop) lives there.
import { isBelayError } from "@belay/contract";
import { HelpRequested, WorkerHost, openStore, parseHostConfig, redactStoreUrl, startHealthServer } from "@belay/host";

async function main(): Promise<number> {
  let config;
  try {
    config = parseHostConfig(process.argv.slice(2));
  } catch (error) {
    if (error instanceof HelpRequested) {
      console.log(error.message);
      return 0;
    }
    console.error(`belay-worker: ${(error as Error).message}\nrun belay-worker --help for the options`);
    return 2;
  }
  const store = await openStore(config.store);
  const host = await WorkerHost.create(config, { store });
  const health = await startHealthServer({
    host: config.health.host,
    port: config.health.port,
    health: () => host.worker.health(),
    registry: host.metrics.registry,
  });
  await host.start();

  let stopping: Promise<void> | null = null;
  const stop = (signal: string) => {
    if (stopping) return;
    console.log(`belay-worker: ${signal}: stopping (deadline ${config.stopTimeoutMs} ms)`);
    // readyz turns unready at once (the worker leaves "running"); liveness stays up until the end.
    stopping = host
      .stop()
      .then(() => health.close())
      .then(() => store.close())
      .then(() => {
        console.log("belay-worker: stopped");
        process.exit(0);
      });
  };
  process.on("SIGTERM", () => stop("SIGTERM"));
  process.on("SIGINT", () => stop("SIGINT"));
  // Said only once the signals are handled: whoever waits for this line may stop the worker at once.
  console.log(`belay-worker: serving ${redactStoreUrl(config.store)}; health and metrics at ${health.url}`);
  return -1; // keep running
}

main().then(
  (code) => {
    if (code >= 0) process.exit(code);
  },
  (error: unknown) => {
    console.error(`belay-worker: ${isBelayError(error) ? `${error.code}: ` : ""}${(error as Error)?.stack ?? String(error)}`);
    process.exit(1);
  },
);
