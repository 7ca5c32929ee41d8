import type { JobStore } from "@belay/contract";
import type { PumpHealth, Worker, WorkerEvent } from "@belay/core";
import { Counter, Gauge, Registry } from "prom-client";

/**
 * Prometheus metrics of one worker host: jobs started, succeeded, failed and dead-lettered, queue
 * depth per (queue, state), slots in use per group, store faults, halted pumps.
 */
export class HostMetrics {
  readonly registry = new Registry();
  readonly #started: Counter<"queue" | "job_name">;
  readonly #finished: Counter<"queue" | "job_name" | "result">;
  readonly #applied: Counter<"state">;
  readonly #faults: Counter<"operation" | "transient">;

  constructor(store: JobStore, worker: () => Worker | null) {
    const registers = [this.registry];
    this.#started = new Counter({ name: "belay_jobs_started_total", help: "Handler executions started", labelNames: ["queue", "job_name"], registers });
    this.#finished = new Counter({
      name: "belay_jobs_finished_total",
      help: "Handler executions finished, by result (succeeded, failed, cancelled, unroutable)",
      labelNames: ["queue", "job_name", "result"],
      registers,
    });
    this.#applied = new Counter({
      name: "belay_outcomes_applied_total",
      help: "Outcomes the store applied, by the state the job entered (succeeded, scheduled = retry, deadLettered, …)",
      labelNames: ["state"],
      registers,
    });
    this.#faults = new Counter({ name: "belay_store_faults_total", help: "Store faults", labelNames: ["operation", "transient"], registers });
    let depthCache: { at: number; rows: readonly { queue: string; state: string; count: number }[] } | null = null;
    new Gauge({
      name: "belay_queue_depth",
      help: "Jobs per queue and state (read from the store at most every 5 s)",
      labelNames: ["queue", "state"],
      registers,
      async collect() {
        if (depthCache === null || Date.now() - depthCache.at > 5_000) {
          try {
            depthCache = { at: Date.now(), rows: await store.countJobs() };
          } catch {
            return; // a store fault is counted by the worker; the gauge keeps its last value
          }
        }
        this.reset();
        for (const row of depthCache.rows) this.set({ queue: row.queue, state: row.state }, row.count);
      },
    });
    // One number per worker group, read from its pumps' health when scraped.
    const groupGauges: readonly [name: string, help: string, of: (pumps: readonly PumpHealth[]) => number][] = [
      ["belay_slots_in_use", "Handlers running per worker group", (pumps) => pumps.reduce((n, p) => n + p.executing, 0)],
      ["belay_slots_capacity", "Handler slots per worker group", (pumps) => pumps.reduce((n, p) => n + p.poolSize, 0)],
      ["belay_pumps_halted", "Pumps stopped by a non-transient store fault, per group", (pumps) => pumps.filter((p) => p.halted !== null).length],
    ];
    for (const [name, help, of] of groupGauges) {
      new Gauge({
        name,
        help,
        labelNames: ["group"],
        registers,
        collect() {
          this.reset();
          for (const group of worker()?.health().groups ?? []) this.set({ group: group.name }, of(group.pumps));
        },
      });
    }
  }

  /** Feed worker events here (`onEvent`). */
  record(event: WorkerEvent): void {
    switch (event.type) {
      case "jobStarted":
        this.#started.inc({ queue: event.job.queue, job_name: event.job.jobName });
        break;
      case "jobFinished":
        this.#finished.inc({ queue: event.job.queue, job_name: event.job.jobName, result: event.result });
        break;
      case "outcomesReported":
        for (const result of event.results) if (result.status === "applied") this.#applied.inc({ state: result.state });
        break;
      case "storeFault":
        this.#faults.inc({ operation: event.operation, transient: String(event.transient) });
        break;
      case "halted":
        break;
    }
  }
}
