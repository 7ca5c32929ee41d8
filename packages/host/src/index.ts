/**
 * Running Belay workers as a host process: open a store from its URL, load a jobs module, parse
 * the host's settings, run the worker groups with metrics, serve health, stop gracefully. Shared
 * by `belay-worker` and `belay-server --with-worker`.
 */
export { openStore, openPromiseStore, redactStoreUrl } from "./store-url.js";
export type { OpenStoreOptions, OpenPromiseStoreOptions } from "./store-url.js";
export { loadJobsModule, jobsFromModule } from "./jobs-module.js";
export type { JobsModule } from "./jobs-module.js";
export { parseHostConfig, hostConfigSchema, HelpRequested } from "./host-config.js";
export { runCommandLine, stopOnSignals } from "./command-line.js";
export type { HostConfig } from "./host-config.js";
export { WorkerHost } from "./worker-host.js";
export type { WorkerHostOptions } from "./worker-host.js";
export { HostMetrics } from "./host-metrics.js";
export { loadTelemetry } from "./opentelemetry.js";
export { startHealthServer } from "./health-server.js";
export type { HealthServer, HealthServerOptions } from "./health-server.js";
