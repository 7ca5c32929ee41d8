#!/usr/bin/env node
// belay-worker: the command line on @belay/host. Flags and signals live here; everything a
// host does (store URL, jobs module, groups, metrics, health, graceful stop) lives there.
import { WorkerHost, openStore, parseHostConfig, redactStoreUrl, runCommandLine, startHealthServer, stopOnSignals } from "@belay/host";

runCommandLine("belay-worker", parseHostConfig, async (config) => {
  const store = await openStore(config.store);
  const host = await WorkerHost.create(config, { store });
  const health = await startHealthServer({
    host: config.health.host,
    port: config.health.port,
    health: () => host.worker.health(),
    registry: host.metrics.registry,
  });
  await host.start();
  // readyz turns unready at once (the worker leaves "running"); liveness stays up until the end.
  stopOnSignals(
    "belay-worker",
    () => host.stop().then(() => health.close()).then(() => store.close()),
    ` (deadline ${config.stopTimeoutMs} ms)`,
  );
  // Said only once the signals are handled: whoever waits for this line may stop the worker at once.
  console.log(`belay-worker: serving ${redactStoreUrl(config.store)}; health and metrics at ${health.url}`);
});
