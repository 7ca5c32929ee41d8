// What main.ts and the runners share (importing child.ts would read BENCH_CONFIG).

/** application_name of the harness's own connections; excluded from the connection counts. */
export const HARNESS_APP = "belay-bench-harness";

/** Settings handed to a runner by main.ts. */
export interface ChildConfig {
  readonly system: string;
  readonly run: number;
  /** Jobs of the enqueue and processing phases. */
  readonly jobs: number;
  /** Concurrent handlers in the processing phases (e.g. [10, 50]). */
  readonly concurrency: readonly number[];
  /** Concurrency of the worker in the latency phase. */
  readonly latencyConcurrency: number;
  readonly latencyJobs: number;
  readonly latencyGapMs: number;
  readonly enqueueInFlight: number;
  readonly batch: number;
  /** Wall cap for configurations that are poll-bound by design (pg-boss defaults). */
  readonly processCapS: number;
  /** Budget of one phase; past it the phase is recorded as failed and the runner moves on. */
  readonly phaseTimeoutMs: number;
  /** Phases to run (enqueue_single, enqueue_batch, process, latency). */
  readonly phases: readonly string[];
  /** Variants to run (empty = all of the system's). */
  readonly variants: readonly string[];
  readonly pg: { readonly host: string; readonly port: number; readonly user: string };
  readonly database: string | null;
  readonly redisUrl: string;
  /** Scratch folder of this invocation (SQLite files go below it). */
  readonly scratch: string;
}

