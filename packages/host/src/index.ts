/** The worker host's building blocks, shared with `apps/server`. */
export { openStore, redactStoreUrl } from "./store-url.js";
export type { OpenStoreOptions } from "./store-url.js";
export { loadJobsModule, jobsFromModule } from "./jobs-module.js";
export type { JobsModule } from "./jobs-module.js";
export { parseHostConfig, hostConfigSchema, HelpRequested } from "./config.js";
export type { HostConfig } from "./config.js";
export { WorkerHost } from "./worker-host.js";
export type { WorkerHostOptions } from "./worker-host.js";
export { HostMetrics } from "./metrics.js";
export { startHealthServer } from "./health-server.js";
