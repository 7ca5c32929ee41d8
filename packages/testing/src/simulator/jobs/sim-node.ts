import { type JobStore, type ObserverDelivery, isBelayError } from "@belay/contract";
import { type Clock, type DriverConfig, type ObserverOptions, Worker, effectiveRetryPolicy, retryPolicy, servedQueues, silentLogger, toDisposition } from "@belay/core";
import { StoreLink } from "../store-link.js";
import type { JobWorld } from "./job-world.js";
import { SimPump } from "./sim-pump.js";

/** How long a graceful stop lets handlers run before it releases their jobs. */
const STOP_DEADLINE_MS = 2_000;
/** How soon a supervisor restarts a node whose pump fail-stopped. */
const HALT_RESTART_MS = 2_000;

/**
 * One simulated worker process: a pump per group and pump index (the real driver each), and the
 * real observer dispatcher (a `Worker` with no groups) — all on the node's skewed clock, over one
 * store link per incarnation. A crash silences everything of the incarnation at once; a restart
 * is a new process with new worker ids.
 */
export class SimNode {
  readonly index: number;
  readonly name: string;
  readonly skewMs: number;
  incarnation = 0;
  up = false;
  pumps: SimPump[] = [];
  #isolatedUntil = -Infinity;
  #observers: Worker | null = null;
  readonly #world: JobWorld;
  #restart: (() => void) | null = null;

  constructor(world: JobWorld, index: number) {
    this.#world = world;
    this.index = index;
    this.name = `n${index}`;
    this.skewMs = world.plan.skewMs[index] ?? 0;
  }

  get isolated(): boolean {
    return this.#world.scheduler.now < this.#isolatedUntil;
  }

  /** The dispatcher name of the current incarnation (for the observer oracles). */
  get dispatcher(): string {
    return `${this.name}.${this.incarnation}/observers`;
  }

  start(): void {
    if (this.up) return;
    const world = this.#world;
    this.incarnation++;
    this.up = true;
    const incarnation = this.incarnation;
    const alive = () => this.up && this.incarnation === incarnation;
    const link = new StoreLink({
      scheduler: world.scheduler,
      dice: world.dice,
      name: `${this.name}.${incarnation}`,
      faults: () => world.nodeFaults(),
      isolated: () => this.isolated,
      alive,
      onPerform: world.markWrote,
    });
    const plan = world.plan;
    const bounds = world.store.capabilities.bounds;
    const groupRetry = retryPolicy({ maxAttempts: plan.groupRetry.maxAttempts, delaysMs: plan.groupRetry.delaysMs });
    this.pumps = [];
    // As a Worker does: one candidate per node incarnation for the maintainer lease (the first
    // pump of the first group), sweeping every group's queues and then all of them.
    const maintainerLease = { holder: `${this.name}.${incarnation}/maintainer`, leaseMs: 3 * plan.maintenanceMs };
    const expirySweeps = [
      ...plan.groups.map((group) => ({ queues: servedQueues(group.queues).map((q) => q.name), retry: toDisposition(groupRetry) })),
      { retry: toDisposition(groupRetry) },
    ];
    for (const [g, group] of plan.groups.entries()) {
      const claimBatch = Math.min(32, bounds.claimBatch);
      for (let p = 0; p < group.pumps; p++) {
        const config: DriverConfig = {
          workerId: `${this.name}.${incarnation}/${group.name}/${p}`,
          queues: servedQueues(group.queues),
          dispatch: group.dispatch,
          poolSize: group.poolSize,
          claimBatch,
          prefetch: group.prefetch,
          leaseMs: plan.leaseMs,
          heartbeatIntervalMs: Math.max(1, Math.floor(plan.leaseMs / 3)),
          pollIntervalMs: plan.pollMs,
          maxPollIntervalMs: Math.max(plan.maxPollMs, plan.pollMs),
          outcomeBatch: Math.max(group.poolSize, claimBatch),
          maintenance: g === 0 && p === 0,
          ...(g === 0 && p === 0 ? { maintainerLease, expirySweeps } : {}),
          maintenanceIntervalMs: plan.maintenanceMs,
          retention: { succeededOrCancelled: plan.retention.succeededOrCancelledMs, deadLetteredOrQuarantined: plan.retention.deadLetteredOrQuarantinedMs },
          purgeBatch: bounds.purgeBatch,
          faultBackoffMs: { min: Math.min(plan.pollMs, 1_000), max: Math.max(plan.faultBackoffMaxMs, plan.pollMs) },
          retryFor: world.sabotage === "groupPolicyWins" ? () => groupRetry : (job) => effectiveRetryPolicy(job.retry, groupRetry),
          groupRetry: toDisposition(groupRetry),
        };
        this.pumps.push(new SimPump({ world, link, config, skewMs: this.skewMs, onSettled: (pump, how) => this.#onPumpSettled(pump, how, incarnation) }));
      }
    }
    for (const pump of this.pumps) pump.start();
    if (plan.observers.length > 0) this.#startObservers(link, incarnation, alive);
  }

  /** Abrupt: the process dies; its leases lapse, its requests on the wire still land. */
  crash(): void {
    if (!this.up) return;
    this.up = false;
    for (const pump of this.pumps) pump.kill();
    this.#world.observerOracles.onDispatcherGone(this.dispatcher);
    this.#observers = null; // abandoned: its awaits never resolve, its timers never fire
  }

  /** Crash now, start again after `downMs` (but no later than the end of the faults). */
  crashFor(downMs: number): void {
    if (!this.up) return;
    this.crash();
    this.#scheduleRestart(downMs);
  }

  /** Graceful stop (handlers finish or are released at the deadline), then a restart after `downMs`. */
  stopFor(downMs: number): void {
    if (!this.up) return;
    const incarnation = this.incarnation;
    this.#restart = () => {
      if (this.incarnation !== incarnation || !this.up) return;
      this.crash();
      this.#scheduleRestart(downMs);
    };
    void this.#observers?.stop();
    for (const pump of this.pumps) pump.stop(STOP_DEADLINE_MS);
  }

  isolateFor(forMs: number): void {
    this.#isolatedUntil = Math.max(this.#isolatedUntil, this.#world.scheduler.now + forMs);
  }

  /** The faults stopped: heal, and let hung handlers return. */
  healAll(): void {
    this.#isolatedUntil = -Infinity;
    if (!this.up) this.start();
    for (const pump of this.pumps) pump.releaseHangs();
  }

  #scheduleRestart(downMs: number): void {
    const world = this.#world;
    const at = Math.min(world.scheduler.now + downMs, Math.max(world.faultsEndAt, world.scheduler.now));
    world.scheduler.at(at, () => this.start());
  }

  #onPumpSettled(pump: SimPump, how: "stopped" | "halted", incarnation: number): void {
    if (this.incarnation !== incarnation) return;
    if (how === "halted") {
      // A supervisor notices the fail-stopped pump and restarts the process.
      this.#world.scheduler.after(HALT_RESTART_MS, () => {
        if (this.incarnation === incarnation && this.up) this.crashFor(0);
      });
      return;
    }
    if (this.pumps.every((p) => p.stopped || p.halted)) this.#restart?.();
    void pump;
  }

  // ---- observers ----------------------------------------------------------------------------

  #startObservers(link: StoreLink, incarnation: number, alive: () => boolean): void {
    const world = this.#world;
    const dispatcher = this.dispatcher;
    const skew = this.skewMs;
    const clock: Clock = {
      now: () => world.scheduler.now + skew,
      setTimer: (at, callback) => {
        const handle = world.scheduler.at(at - skew, () => {
          if (alive()) callback();
        }, true);
        return { cancel: () => handle.cancel() };
      },
    };
    const call = <T>(op: string, perform: () => Promise<T>, hooks: { performed?: (r: T) => void; answered?: (r: T) => void; failed?: () => void } = {}) =>
      new Promise<T>((resolve, reject) =>
        link.call({
          op,
          perform,
          ...(hooks.performed ? { performed: hooks.performed } : {}),
          answer: (r) => {
            hooks.answered?.(r);
            resolve(r);
          },
          fail: (e) => {
            hooks.failed?.();
            if (!isBelayError(e, "BELAY_TRANSIENT_STORE")) superviseObservers();
            reject(e);
          },
          settle: true,
        }),
      );
    // A non-transient store fault fail-stops the dispatcher (the pumps run on): a supervisor
    // watching the worker's health restarts the process.
    const superviseObservers = () =>
      world.scheduler.after(HALT_RESTART_MS, () => {
        if (alive() && this.#observers === worker && worker.health().observers.status === "stopped") this.crashFor(0);
      });
    const store = world.store;
    const oracles = world.observerOracles;
    const view = {
      capabilities: store.capabilities,
      registerObserver: (request: Parameters<JobStore["registerObserver"]>[0]) => call("registerObserver", () => store.raw.registerObserver(request)),
      claimObserverDeliveries: (request: Parameters<JobStore["claimObserverDeliveries"]>[0]) => {
        let handout: ReturnType<typeof oracles.onHandout> | null = null;
        return call("claimObserverDeliveries", () => store.claimObserverDeliveries(request), {
          performed: (r) => {
            if (r.status === "acquired") handout = oracles.onHandout(dispatcher, request.observerId, r.deliveries);
          },
          answered: () => {
            if (handout) handout.answered = true;
          },
          failed: () => {
            if (handout) oracles.onHandoutLost(handout);
          },
        });
      },
      reportObserverDeliveries: (request: Parameters<JobStore["reportObserverDeliveries"]>[0]) =>
        call("reportObserverDeliveries", () => store.reportObserverDeliveries(request), {
          performed: (r) => {
            if (r.status === "applied") oracles.onReportApplied(request.observerId, request.outcomes);
            world.checkDeadLetters(request.observerId);
          },
        }),
    } as unknown as JobStore;
    const observers: ObserverOptions[] = world.plan.observers.map((spec) => ({
      id: spec.id,
      states: spec.states,
      ...(spec.queues ? { queues: spec.queues } : {}),
      startAt: "beginning" as const,
      retry: { maxAttempts: spec.retry.maxAttempts, delaysMs: spec.retry.delaysMs },
      timeoutMs: spec.timeoutMs,
      handle: (delivery: ObserverDelivery) => world.observerCallback(dispatcher, spec.id, delivery),
    }));
    const worker = new Worker({
      store: view,
      jobs: [],
      groups: [],
      observers,
      clock,
      logger: silentLogger,
      pollIntervalMs: world.plan.pollMs,
      hints: false,
      name: `${this.name}.${incarnation}`,
      captureFailureDetail: false,
    });
    this.#observers = worker;
    worker.start().catch(() => {
      // Registration failed (a store fault): a supervisor starts the dispatcher again shortly.
      world.scheduler.after(1_000, () => {
        if (alive() && this.#observers === worker) this.#startObservers(link, incarnation, alive);
      });
    });
  }
}
