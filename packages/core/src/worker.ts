import { hostname } from "node:os";
import { type JobStore, InvalidInputError, type RetentionClass } from "@belay/contract";
import { type Clock, type TimerHandle, systemClock } from "./clock.js";
import type { AnyJobDefinition } from "./define-job.js";
import { type DispatchPolicy, type ServedQueue, servedQueues } from "./dispatch.js";
import type { DriverSnapshot, ExpirySweep } from "./driver-types.js";
import { createWorkerId } from "./ids.js";
import { type Logger, consoleLogger } from "./logger.js";
import { ObserverDispatcher, type ObserverOptions, type ObserversHealth } from "./observer-dispatcher.js";
import { Pump, type PumpEvent } from "./pump.js";
import { type RetryOptions, type RetryPolicy, effectiveRetryPolicy, retryPolicy, toDisposition } from "./retry.js";
import type { BelayTelemetry } from "./telemetry.js";

/** A pool of execution slots serving some queues in a dispatch order. */
export interface WorkerGroupOptions {
  readonly name: string;
  /** Queue names (or `{ name, weight }` for weighted dispatch), highest priority first. */
  readonly queues: readonly (string | ServedQueue)[];
  /** Default `strict`. */
  readonly dispatch?: DispatchPolicy;
  /** Handlers running at once, per pump. Default 20. */
  readonly poolSize?: number;
  /** Independent claim→run→report loops, each with its own worker id and pool. Default 1. */
  readonly pumps?: number;
  /** The group's retry policy (job types may override it). */
  readonly retry?: RetryOptions;
  /** Most jobs per claim (the store clamps to its bound). Default: the store's claim bound. */
  readonly claimBatch?: number;
  /**
   * Jobs a pump may hold claimed beyond `poolSize`, waiting for a free slot, so that claims
   * overlap the running handlers and grow into batches. Only short jobs are prefetched: the
   * allowance shrinks as handlers get slower (a waiting job should wait about 50 ms on
   * average), so long jobs are never hoarded while an idle peer could run them. Waiting jobs'
   * leases are heartbeated; a stop hands them back unstarted. 0 claims only for free slots.
   * Default: 4 × `poolSize`.
   */
  readonly prefetch?: number;
}

export interface WorkerOptions {
  readonly store: JobStore;
  /** Every job type this worker can run; others are quarantined when claimed. */
  readonly jobs: readonly AnyJobDefinition[];
  /** Default: one group `default`, pool 20, serving every queue the job types name. */
  readonly groups?: readonly WorkerGroupOptions[];
  /** Default 60 s. */
  readonly leaseMs?: number;
  /** Default `leaseMs / 3`. */
  readonly heartbeatIntervalMs?: number;
  /** How often an idle pump polls. Default 1 s. */
  readonly pollIntervalMs?: number;
  /** Adaptive idle backoff ceiling (doubles from `pollIntervalMs`). Default: no backoff. */
  readonly maxPollIntervalMs?: number;
  /** Lease expiry, schedule minting and retention cadence. Default 5 s. */
  readonly maintenanceIntervalMs?: number;
  /**
   * The maintainer lease: of all the workers on one store, the one holding it runs the
   * maintenance (lease-expiry sweeps for every queue, schedule minting, retention purges); the
   * others stand by, try again every `maintenanceIntervalMs`, and take over once it has lapsed —
   * within one lease of the holder's last renewal when it dies, at once when it stops gracefully
   * (it releases the lease). Must be longer than `maintenanceIntervalMs`, which is how often the
   * holder renews it. Default 3 × `maintenanceIntervalMs`.
   */
  readonly maintainerLeaseMs?: number;
  /** Keep terminal jobs this long; `null` keeps them. Defaults 24 h and 14 days. */
  readonly retention?: {
    readonly succeededOrCancelledMs?: number | null;
    readonly deadLetteredOrQuarantinedMs?: number | null;
  };
  /** Default policy of every group. */
  readonly retry?: RetryOptions;
  readonly observers?: readonly ObserverOptions[];
  /** Listen for the store's wake-up hints (when it has them). Default true. */
  readonly hints?: boolean;
  /** Prefix of worker ids. Default `<hostname>/<pid>`. */
  readonly name?: string;
  readonly clock?: Clock;
  readonly logger?: Logger;
  /** Default: on, unless the environment sets `BELAY_DISABLE_FAILURE_DETAIL=1`. */
  readonly captureFailureDetail?: boolean;
  /** Called for every job start and finish, store fault and halt (metrics, tests). */
  readonly onEvent?: (event: WorkerEvent) => void;
  /** OpenTelemetry spans and metrics (see `belayTelemetry`); off when omitted. */
  readonly telemetry?: BelayTelemetry;
}

/** A pump event with the group it came from. */
export type WorkerEvent = PumpEvent & { readonly group: string; readonly workerId: string };

export type PumpHealth = DriverSnapshot & {
  readonly workerId: string;
  readonly halted: string | null;
  /** Store calls under way. */
  readonly inflight: number;
};

/** The state of every pump and of the observer dispatcher, for health endpoints. */
export interface WorkerHealth {
  /**
   * `degraded` while running with a group degraded or partly halted, or the observer dispatcher
   * degraded or stopped by a store fault; `halted` once a group is wholly halted.
   */
  readonly status: "idle" | "running" | "degraded" | "stopping" | "stopped" | "halted";
  /** Accepting work: running, and no group wholly halted (observers do not count). */
  readonly ready: boolean;
  /** Store calls and observer rounds under way across the worker (0 = quiet; handlers count as `executing`). */
  readonly inflight: number;
  readonly groups: readonly {
    readonly name: string;
    readonly status: "running" | "degraded" | "partiallyHalted" | "halted" | "stopped";
    readonly pumps: readonly PumpHealth[];
  }[];
  /** The observer dispatcher (transition observers), under the same fault policy as the pumps. */
  readonly observers: ObserversHealth;
  /** This worker holds the store's maintainer lease (it runs the cluster's maintenance). */
  readonly maintainer: boolean;
}

const DAY = 86_400_000;

function truthy(value: string | undefined): boolean {
  return value !== undefined && ["1", "true", "yes", "on"].includes(value.toLowerCase());
}

function nonNegative(value: number | undefined, fallback: number, field: string): number {
  const result = value ?? fallback;
  if (!Number.isSafeInteger(result) || result < 0) throw new InvalidInputError(field, "must be a non-negative integer");
  return result;
}

function positive(value: number | undefined, fallback: number, field: string): number {
  const result = value ?? fallback;
  if (!Number.isSafeInteger(result) || result < 1) throw new InvalidInputError(field, "must be a positive integer of milliseconds or a count");
  return result;
}

/**
 * Runs job handlers: worker groups of pumps that claim due jobs, run them concurrently up to the
 * pool size, report outcomes in batches, renew leases, sweep expired leases, mint schedules and
 * purge old jobs. Handlers run at least once: make them idempotent.
 *
 * @example
 * ```ts
 * const worker = new Worker({ store, jobs: [sendWelcome], groups: [{ name: "mail", queues: ["mail"], poolSize: 10 }] });
 * await worker.start();
 * process.on("SIGTERM", () => worker.stop({ timeoutMs: 30_000 }));
 * ```
 */
export class Worker {
  readonly #options: WorkerOptions;
  readonly #clock: Clock;
  /** Keeps the process alive from `start()` until the worker has stopped. */
  #hold: TimerHandle | null = null;
  readonly #logger: Logger;
  readonly #groups: { readonly name: string; readonly pumps: Pump[] }[];
  readonly #observers: ObserverDispatcher;
  #phase: "idle" | "running" | "stopping" | "stopped" = "idle";
  #unsubscribe: (() => void) | null = null;
  #stopping: Promise<void> | null = null;
  #unobserve: (() => void) | null = null;

  constructor(options: WorkerOptions) {
    this.#options = options;
    this.#clock = options.clock ?? systemClock;
    this.#logger = options.logger ?? consoleLogger({ component: "belay-worker" });
    const { store } = options;
    const registry = new Map<string, AnyJobDefinition>();
    for (const [i, job] of (options.jobs ?? []).entries()) {
      if (typeof job?.name !== "string") throw new InvalidInputError(`jobs[${i}]`, "must be a job definition from defineJob()");
      if (registry.has(job.name)) throw new InvalidInputError(`jobs[${i}]`, `repeats job name ${job.name}`);
      registry.set(job.name, job);
    }
    const leaseMs = positive(options.leaseMs, 60_000, "leaseMs");
    const pollIntervalMs = positive(options.pollIntervalMs, 1_000, "pollIntervalMs");
    const maxPollIntervalMs = Math.max(positive(options.maxPollIntervalMs, pollIntervalMs, "maxPollIntervalMs"), pollIntervalMs);
    const heartbeatIntervalMs = positive(options.heartbeatIntervalMs, Math.max(1, Math.floor(leaseMs / 3)), "heartbeatIntervalMs");
    const maintenanceIntervalMs = positive(options.maintenanceIntervalMs, 5_000, "maintenanceIntervalMs");
    const maintainerLeaseMs = positive(options.maintainerLeaseMs, 3 * maintenanceIntervalMs, "maintainerLeaseMs");
    if (maintainerLeaseMs <= maintenanceIntervalMs) {
      throw new InvalidInputError("maintainerLeaseMs", `must be longer than maintenanceIntervalMs (${maintenanceIntervalMs}), which is how often the holder renews it`);
    }
    const retention: Record<RetentionClass, number | null> = {
      succeededOrCancelled: options.retention?.succeededOrCancelledMs === undefined ? DAY : options.retention.succeededOrCancelledMs,
      deadLetteredOrQuarantined:
        options.retention?.deadLetteredOrQuarantinedMs === undefined ? 14 * DAY : options.retention.deadLetteredOrQuarantinedMs,
    };
    const captureFailureDetail = options.captureFailureDetail ?? !truthy(process.env["BELAY_DISABLE_FAILURE_DETAIL"]);
    const prefix = options.name ?? `${hostname()}/${process.pid}`;
    const defaultQueues = [...new Set([...registry.values()].map((j) => j.queue))];
    const groups = options.groups ?? [{ name: "default", queues: defaultQueues.length > 0 ? defaultQueues : ["default"] }];
    // One fault backoff range for pumps and observers (the fault policy is the same).
    const faultBackoffMs = { min: Math.min(pollIntervalMs, 1_000), max: Math.max(30_000, pollIntervalMs) };
    const names = new Set<string>();
    // One candidate per worker: the first pump of the first group. Its rounds sweep expired leases
    // of every group's queues under that group's policy, then of all queues under the worker's own
    // (queues only other workers serve: nobody else sweeps them while this one holds the lease).
    const maintainer = { holder: createWorkerId(prefix, "maintainer", 0), leaseMs: maintainerLeaseMs };
    const served = groups.map((group, g) => {
      if (typeof group.name !== "string" || group.name.length === 0) throw new InvalidInputError(`groups[${g}].name`, "must be a name");
      if (names.has(group.name)) throw new InvalidInputError(`groups[${g}].name`, `repeats group ${group.name}`);
      names.add(group.name);
      return { queues: servedQueues(group.queues), groupRetry: retryPolicy(group.retry ?? options.retry) as RetryPolicy };
    });
    const expirySweeps: readonly ExpirySweep[] = [
      ...served.map(({ queues, groupRetry }) => ({ queues: queues.map((q) => q.name), retry: toDisposition(groupRetry) })),
      { retry: toDisposition(retryPolicy(options.retry)) },
    ];
    this.#groups = groups.map((group, g) => {
      const { queues, groupRetry } = served[g]!;
      const poolSize = positive(group.poolSize, 20, `groups[${g}].poolSize`);
      const pumpCount = positive(group.pumps, 1, `groups[${g}].pumps`);
      const pumps = Array.from({ length: pumpCount }, (_, p) => {
        const workerId = createWorkerId(prefix, group.name, p);
        return new Pump({
          store,
          registry,
          clock: this.#clock,
          logger: this.#logger.child({ group: group.name, workerId }),
          captureFailureDetail,
          onEvent: (event) => options.onEvent?.({ ...event, group: group.name, workerId }),
          ...(options.telemetry === undefined ? {} : { telemetry: { telemetry: options.telemetry, group: group.name } }),
          driver: {
            workerId,
            queues,
            dispatch: group.dispatch ?? "strict",
            poolSize,
            claimBatch: positive(group.claimBatch, store.capabilities.bounds.claimBatch, `groups[${g}].claimBatch`),
            prefetch: nonNegative(group.prefetch, 4 * poolSize, `groups[${g}].prefetch`),
            leaseMs,
            heartbeatIntervalMs,
            pollIntervalMs,
            maxPollIntervalMs,
            outcomeBatch: Math.max(poolSize, store.capabilities.bounds.claimBatch),
            maintenance: g === 0 && p === 0,
            ...(g === 0 && p === 0 ? { maintainerLease: maintainer, expirySweeps } : {}),
            maintenanceIntervalMs,
            retention,
            purgeBatch: store.capabilities.bounds.purgeBatch,
            faultBackoffMs,
            retryFor: (job) => effectiveRetryPolicy(job.retry, registry.get(job.jobName)?.retry ?? groupRetry),
            groupRetry: toDisposition(groupRetry),
          },
        });
      });
      return { name: group.name, pumps };
    });
    this.#observers = new ObserverDispatcher({
      store,
      clock: this.#clock,
      logger: this.#logger,
      workerId: createWorkerId(prefix, "observers", 0),
      pollIntervalMs,
      faultBackoffMs,
      observers: options.observers ?? [],
    });
  }

  /** Starts every pump and observer. */
  async start(): Promise<void> {
    if (this.#phase !== "idle") throw new InvalidInputError("worker", `cannot start a ${this.#phase} worker`);
    this.#phase = "running";
    const { store } = this.#options;
    if ((this.#options.hints ?? true) && store.capabilities.wakeUpHints && store.subscribeHints) {
      this.#unsubscribe = store.subscribeHints((queue) => {
        for (const group of this.#groups) for (const pump of group.pumps) if (pump.serves(queue)) pump.hint(queue);
      });
    }
    this.#hold = this.#clock.hold?.() ?? null;
    this.#unobserve =
      this.#options.telemetry?.observe({
        store,
        pumps: () =>
          this.#groups.flatMap((g) =>
            g.pumps.map((p) => {
              const { executing, poolSize } = p.snapshot();
              return { group: g.name, workerId: p.workerId, executing, poolSize };
            }),
          ),
      }) ?? null;
    for (const group of this.#groups) for (const pump of group.pumps) pump.start();
    await this.#observers.start();
  }

  /**
   * Graceful stop: claim nothing more, let running handlers finish for up to `timeoutMs`
   * (default 30 s) and report their outcomes, then abort the rest and release their jobs so
   * another worker takes them at once. Resolves when every pump is quiet.
   */
  stop(options: { readonly timeoutMs?: number } = {}): Promise<void> {
    if (this.#stopping) return this.#stopping;
    const timeoutMs = options.timeoutMs ?? 30_000;
    const wasIdle = this.#phase === "idle";
    this.#phase = "stopping";
    this.#unsubscribe?.();
    const deadline = this.#clock.now() + timeoutMs;
    this.#stopping = (async () => {
      if (!wasIdle) {
        await Promise.all([
          ...this.#groups.flatMap((g) => g.pumps.map((p) => p.stop(deadline))),
          this.#observers.stop(),
        ]);
      }
      this.#phase = "stopped";
      this.#unobserve?.();
      this.#unobserve = null;
      this.#hold?.cancel();
      this.#hold = null;
    })();
    return this.#stopping;
  }

  /** Every pump's state and the observer dispatcher's. */
  health(): WorkerHealth {
    const groups = this.#groups.map((group) => {
      const pumps = group.pumps.map((p) => p.snapshot());
      const halted = pumps.filter((p) => p.halted !== null).length;
      const status: WorkerHealth["groups"][number]["status"] =
        this.#phase === "stopped"
          ? "stopped"
          : halted === pumps.length
            ? "halted"
            : halted > 0
              ? "partiallyHalted"
              : pumps.some((p) => p.degraded)
                ? "degraded"
                : "running";
      return { name: group.name, status, pumps };
    });
    const observers = this.#observers.health();
    const anyHalted = groups.some((g) => g.status === "halted");
    const status: WorkerHealth["status"] =
      this.#phase !== "running"
        ? this.#phase
        : anyHalted
          ? "halted"
          : groups.some((g) => g.status !== "running") || observers.status !== "running"
            ? "degraded"
            : "running";
    const inflight = groups.reduce((n, g) => n + g.pumps.reduce((m, p) => m + p.inflight, 0), 0) + this.#observers.inflight;
    const maintainer = groups.some((g) => g.pumps.some((p) => p.maintainer));
    return { status, ready: this.#phase === "running" && !anyHalted, inflight, groups, observers, maintainer };
  }
}

