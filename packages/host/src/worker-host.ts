import type { JobStore } from "@belay/contract";
import { type BelayTelemetry, type Logger, Worker, type WorkerGroupOptions, type WorkerOptions, consoleLogger, Client } from "@belay/core";
import type { HostConfig } from "./host-config.js";
import { type JobsModule, loadJobsModule } from "./jobs-module.js";
import { HostMetrics } from "./host-metrics.js";
import { loadTelemetry } from "./opentelemetry.js";

/** `value` without its `undefined` fields (for options typed with exact optional properties). */
function compact<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}

/** Options of a {@link WorkerHost} beyond the parsed config. */
export interface WorkerHostOptions {
  readonly store: JobStore;
  /** The loaded jobs module (default: load `config.jobs`). */
  readonly jobs?: JobsModule;
  readonly logger?: Logger;
  /** OpenTelemetry to use (default: loaded from `@opentelemetry/api` when `config.opentelemetry` is on). */
  readonly telemetry?: BelayTelemetry;
}

/**
 * A worker with everything a host process adds: job definitions from a module, schedules upserted
 * at start, Prometheus metrics and health. Shared by `belay-worker` and the server's
 * `--with-worker` mode.
 */
export class WorkerHost {
  readonly store: JobStore;
  readonly worker: Worker;
  readonly metrics: HostMetrics;
  readonly jobs: JobsModule;
  /** The worker's OpenTelemetry (`null` while switched off); a server can hand it to its client. */
  readonly telemetry: BelayTelemetry | null;
  readonly #config: HostConfig;
  readonly #logger: Logger;

  private constructor(config: HostConfig, store: JobStore, jobs: JobsModule, logger: Logger, telemetry: BelayTelemetry | null) {
    this.#config = config;
    this.telemetry = telemetry;
    this.store = store;
    this.jobs = jobs;
    this.#logger = logger;
    let worker: Worker | null = null;
    this.metrics = new HostMetrics(store, () => worker);
    const queues = [...new Set(jobs.jobs.map((j) => j.queue))];
    const groups = config.groups?.map((g) =>
      compact({ ...g, queues: g.queues.flatMap((q) => (q === "*" ? queues : [q])) }),
    ) as WorkerGroupOptions[] | undefined;
    const options = compact({
      store,
      jobs: jobs.jobs,
      observers: jobs.observers,
      logger,
      onEvent: (event: Parameters<HostMetrics["record"]>[0]) => this.metrics.record(event),
      groups,
      leaseMs: config.leaseMs,
      pollIntervalMs: config.pollIntervalMs,
      maxPollIntervalMs: config.maxPollIntervalMs,
      maintenanceIntervalMs: config.maintenanceIntervalMs,
      retention: config.retention === undefined ? undefined : compact(config.retention),
      telemetry: telemetry ?? undefined,
    }) as WorkerOptions;
    worker = new Worker(options);
    this.worker = worker;
  }

  /** Loads the jobs module, migrates if asked, and builds the worker (not started). */
  static async create(config: HostConfig, options: WorkerHostOptions): Promise<WorkerHost> {
    const logger = options.logger ?? consoleLogger({ component: "belay-worker" }, "info");
    const jobs = options.jobs ?? (await loadJobsModule(config.jobs));
    if (config.migrate) {
      const { fromVersion, toVersion } = await options.store.migrate();
      if (fromVersion !== toVersion) logger.info("schema migrated", { fromVersion, toVersion });
    }
    const telemetry = options.telemetry ?? (config.opentelemetry ? await loadTelemetry() : null);
    return new WorkerHost(config, options.store, jobs, logger, telemetry);
  }

  /** Upserts the module's schedules, then starts the worker. */
  async start(): Promise<void> {
    const client = new Client({ store: this.store, actor: "belay-worker", ...(this.telemetry === null ? {} : { telemetry: this.telemetry }) });
    for (const schedule of this.jobs.schedules) await client.upsertSchedule(schedule);
    await this.worker.start();
    this.#logger.info("worker started", { jobs: this.jobs.jobs.map((j) => j.name) });
  }

  /** Graceful stop within the configured deadline. */
  async stop(): Promise<void> {
    await this.worker.stop({ timeoutMs: this.#config.stopTimeoutMs });
    this.#logger.info("worker stopped");
  }
}
