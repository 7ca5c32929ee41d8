import type { ClaimedJob, HeldLease } from "@belay/contract";
import {
  type AbortReason, type DriverCommand, type DriverConfig, type DriverEvent, type ExecutionResult, type MaintenanceTask, NodeDriver,
  classifyStoreFault,
} from "@belay/core";
import type { EventHandle } from "../scheduler.js";
import type { LinkCall, StoreLink } from "../store-link.js";
import { type Behaviour, behaviourOf, resultOf } from "./handlers.js";
import type { JobWorld } from "./job-world.js";

/** Job names the simulated workers have handlers for (others are quarantined when claimed). */
const REGISTERED = new Set(["work"]);

/** Driver steps one pump may take in one virtual second before it counts as a runaway loop. */
export const RUNAWAY_STEPS_PER_SECOND = 5_000;

interface Execution {
  readonly job: ClaimedJob;
  readonly behaviour: Behaviour | null;
  end: EventHandle | null;
  done: boolean;
}

/**
 * One pump of a simulated node: the real `NodeDriver`, and a shell that carries out its commands
 * as `Pump` does — each command the same store call, each answer the same event — but over a
 * simulated network (`StoreLink`), on the node's skewed clock, with simulated handlers. It is
 * deliberately a copy of `Pump#carryOut`'s mapping, not of its promise plumbing: every store call
 * becomes a step of the simulator, so a fault can land between any two of them.
 */
export class SimPump {
  readonly workerId: string;
  readonly config: DriverConfig;
  readonly driver: NodeDriver;
  /** Handlers running, by job id. */
  readonly running = new Map<string, Execution>();
  alive = true;
  halted = false;
  stopped = false;
  readonly #world: JobWorld;
  readonly #link: StoreLink;
  readonly #skewMs: number;
  readonly #onSettled: (pump: SimPump, how: "stopped" | "halted") => void;
  readonly #queue: DriverEvent[] = [];
  #draining = false;
  #timer: EventHandle | null = null;
  #finished: { jobId: string; attempt: number; result: ExecutionResult }[] = [];
  #second = -1;
  #stepsThisSecond = 0;

  constructor(options: {
    world: JobWorld;
    link: StoreLink;
    config: DriverConfig;
    skewMs: number;
    onSettled: (pump: SimPump, how: "stopped" | "halted") => void;
  }) {
    this.#world = options.world;
    this.#link = options.link;
    this.config = options.config;
    this.workerId = options.config.workerId;
    this.#skewMs = options.skewMs;
    this.#onSettled = options.onSettled;
    this.driver = new NodeDriver(options.config);
  }

  /** This pump's clock: true time plus its node's skew. */
  now(): number {
    return this.#world.scheduler.now + this.#skewMs;
  }

  start(): void {
    this.post({ type: "started", now: this.now() });
  }

  hint(queue: string): void {
    if (this.#world.sabotage === "idleSleepsForever") return;
    this.post({ type: "hint", queue, now: this.now() });
  }

  /** Graceful stop: stop claiming, let handlers finish until `deadlineMs` from now, then release. */
  stop(deadlineMs: number): void {
    this.post({ type: "stopRequested", now: this.now() });
    this.#world.scheduler.after(deadlineMs, () => {
      if (this.alive) this.post({ type: "stopDeadline", now: this.now() });
    });
  }

  /** The node crashed: nothing of this pump runs again. */
  kill(): void {
    this.alive = false;
    this.#timer?.cancel();
    for (const execution of this.running.values()) execution.end?.cancel();
    this.running.clear();
  }

  serves(queue: string): boolean {
    return this.config.queues.some((q) => q.name === queue);
  }

  post(event: DriverEvent): void {
    if (!this.alive) return;
    this.#queue.push(event);
    if (this.#draining) return;
    this.#draining = true;
    try {
      for (let next = this.#queue.shift(); next !== undefined; next = this.#queue.shift()) {
        this.#countStep();
        for (const command of this.driver.step(next)) this.#carryOut(command);
        if (this.#world.sabotage === "hotLoop" && next.type === "timer") this.#world.scheduler.after(0, () => this.post({ type: "timer", now: this.now() }));
      }
    } finally {
      this.#draining = false;
    }
  }

  #countStep(): void {
    const second = Math.floor(this.#world.scheduler.now / 1_000);
    if (second !== this.#second) {
      this.#second = second;
      this.#stepsThisSecond = 0;
    }
    if (++this.#stepsThisSecond > RUNAWAY_STEPS_PER_SECOND) {
      this.#world.violations.report("runaway", `pump ${this.workerId} took more than ${RUNAWAY_STEPS_PER_SECOND} driver steps in one virtual second`);
      this.#world.halt();
    }
  }

  #carryOut(command: DriverCommand): void {
    const { workerId } = this;
    const store = this.#world.store;
    const raw = store.raw;
    const oracles = this.#world.jobOracles;
    const now = this.now();
    const call = this.#link.call.bind(this.#link);
    const post = (event: DriverEvent) => this.post(event);
    /** A store call writing `leases`: the oracle is told before it is performed. */
    const writing = <T>(leases: readonly HeldLease[], link: LinkCall<T>) =>
      call({
        ...link,
        perform: () => {
          oracles.recordWrites(workerId, leases, now);
          return link.perform();
        },
      });
    /** A maintenance task's store call: its failure is the task's `maintenanceFailed`. */
    const maintain = <T>(task: MaintenanceTask, op: string, perform: () => Promise<T>, answer: (result: T) => void) =>
      call({ op, perform, answer, fail: (e) => post({ type: "maintenanceFailed", task, fault: classifyStoreFault(e), now: this.now() }) });
    switch (command.type) {
      case "claim":
        call({
          op: "claim",
          perform: () => store.claim({ workerId, queues: command.queues, max: command.max, leaseMs: command.leaseMs, now }),
          answer: (r) => post({ type: "claimed", claimId: command.claimId, jobs: r.jobs, nextDueAt: r.nextDueAt, now: this.now() }),
          fail: (e) => post({ type: "claimFailed", claimId: command.claimId, fault: classifyStoreFault(e), now: this.now() }),
        });
        break;
      case "execute":
        this.#execute(command.job);
        break;
      case "report":
        writing(command.reports, {
          op: "reportOutcomes",
          perform: () => store.reportOutcomes({ reports: command.reports, now }),
          answer: (results) => post({ type: "reported", batchId: command.batchId, results, now: this.now() }),
          fail: (e) => post({ type: "reportFailed", batchId: command.batchId, fault: classifyStoreFault(e), now: this.now() }),
        });
        break;
      case "heartbeat":
        call({
          op: "heartbeat",
          drop: true,
          perform: () => raw.heartbeat({ workerId, leases: command.leases, leaseMs: command.leaseMs, now }),
          performed: (results) => oracles.recordHeartbeat(workerId, command.leases, results),
          answer: (results) => post({ type: "heartbeatAnswered", results, now: this.now() }),
          fail: (e) => post({ type: "heartbeatFailed", fault: classifyStoreFault(e), now: this.now() }),
        });
        break;
      case "abort":
        this.#abort(command.jobId, command.reason);
        break;
      case "release":
        writing(command.leases, {
          op: "release",
          perform: () => raw.release({ workerId, leases: command.leases, now }),
          answer: (results) => post({ type: "released", results, now: this.now() }),
          fail: (e) => post({ type: "releaseFailed", leases: command.leases, fault: classifyStoreFault(e), now: this.now() }),
        });
        break;
      case "expireLeases":
        maintain(
          "expireLeases",
          "expireLeases",
          () => store.expireLeases({ now, max: command.max, ...(command.queues === undefined ? {} : { queues: command.queues }), retry: command.retry }),
          ({ expired }) => post({ type: "maintained", task: "expireLeases", count: expired.length, full: expired.length >= command.max, now: this.now() }),
        );
        break;
      case "acquireMaintainerLease":
        maintain(
          "maintainerLease",
          "acquireMaintainerLease",
          () => raw.acquireMaintainerLease({ holder: command.holder, leaseMs: command.leaseMs, now }),
          (result) => post({ type: "maintainerLeaseAnswered", result, now: this.now() }),
        );
        break;
      case "releaseMaintainerLease":
        call({
          op: "releaseMaintainerLease",
          perform: () => raw.releaseMaintainerLease({ holder: command.holder }),
          answer: () => post({ type: "maintainerLeaseReleased", now: this.now() }),
          fail: () => post({ type: "maintainerLeaseReleased", now: this.now() }),
        });
        break;
      case "loadSchedules":
        maintain("schedules", "listSchedules", () => store.listSchedules(), (schedules) => post({ type: "schedulesLoaded", schedules, now: this.now() }));
        break;
      case "mintDue":
        maintain("schedules", "mintDue", () => store.mintDue({ decisions: command.decisions, now }), (results) => {
          const minted = results.reduce((n, r) => n + (r.status === "minted" ? r.jobIds.length : 0), 0);
          post({ type: "maintained", task: "schedules", count: minted, full: false, now: this.now() });
        });
        break;
      case "purge":
        maintain(
          command.task,
          "purgeTerminal",
          () => raw.purgeTerminal({ retentionClass: command.retentionClass, before: command.before, max: command.max }),
          ({ purged }) => post({ type: "maintained", task: command.task, count: purged, full: purged >= command.max, now: this.now() }),
        );
        break;
      case "wakeAt": {
        this.#timer?.cancel();
        this.#timer = null;
        if (this.#world.sabotage === "idleSleepsForever") {
          const s = this.driver.snapshot();
          if (s.executing + s.waiting + s.unreported + s.reserved === 0) break;
        }
        this.#timer = this.#world.scheduler.at(command.at - this.#skewMs, () => {
          this.#timer = null;
          this.post({ type: "timer", now: this.now() });
        });
        break;
      }
      case "stopped":
        this.stopped = true;
        this.#timer?.cancel();
        this.#onSettled(this, "stopped");
        break;
      case "halted":
        this.halted = true;
        this.#timer?.cancel();
        this.#onSettled(this, "halted");
        break;
    }
  }

  // ---- handlers -----------------------------------------------------------------------------

  #execute(job: ClaimedJob): void {
    const world = this.#world;
    const scheduler = world.scheduler;
    world.jobOracles.onExecute(this.workerId, job, scheduler.now);
    if (this.running.size >= this.config.poolSize) {
      world.violations.report("poolCap", `pump ${this.workerId} started job ${job.id} with ${this.running.size} handlers already running; its pool is ${this.config.poolSize}`);
    }
    let behaviour: Behaviour | null = null;
    let result: ExecutionResult;
    let routable = REGISTERED.has(job.jobName);
    if (routable) {
      try {
        JSON.parse(job.payload);
      } catch {
        routable = false;
      }
    }
    if (!routable) {
      result = { type: "unroutable", reason: REGISTERED.has(job.jobName) ? "the payload is not JSON" : `no handler for job name ${job.jobName}` };
    } else {
      behaviour = behaviourOf(world.dice, world.plan.axes, world.plan.leaseMs, job.id, job.attempt, world.faultsActive);
      result = resultOf(behaviour, job.id, job.attempt);
    }
    const execution: Execution = { job, behaviour, end: null, done: false };
    this.running.set(job.id, execution);
    if (world.sabotage === "fireAndForget") this.#finish(job, result, false);
    const duration = behaviour === null ? 0 : behaviour.durationMs;
    if (Number.isFinite(duration)) execution.end = scheduler.after(duration, () => this.#end(execution, result));
  }

  #abort(jobId: string, reason: AbortReason): void {
    const execution = this.running.get(jobId);
    if (execution === undefined || execution.done || execution.behaviour === null) return;
    if (execution.behaviour.ignoresAbort) return;
    execution.end?.cancel();
    const { job } = execution;
    // A handler that stops at its signal throws `JobAbortedError`; the pump makes a cancel of it
    // when the reason was a requested cancel, a failure otherwise (which the driver drops).
    const result: ExecutionResult =
      reason === "cancelRequested"
        ? { type: "cancelled", addTags: [] }
        : { type: "failed", failureDetail: `JobAbortedError: ${reason}`, addTags: [], retryable: true };
    execution.end = this.#world.scheduler.after(this.#world.dice.int(1, 30, "abortDelay", job.id, job.attempt), () => this.#end(execution, result));
  }

  /** The faults stopped: handlers that hang (and never heard an abort they honour) now return. */
  releaseHangs(): void {
    for (const execution of this.running.values()) {
      if (execution.done || execution.end !== null) continue;
      const { job } = execution;
      execution.end = this.#world.scheduler.after(this.#world.dice.int(1, 200, "unhang", job.id, job.attempt), () =>
        this.#end(execution, { type: "succeeded", output: null, addTags: [] }),
      );
    }
  }

  #end(execution: Execution, result: ExecutionResult): void {
    if (!this.alive || execution.done) return;
    execution.done = true;
    if (this.running.get(execution.job.id) === execution) this.running.delete(execution.job.id);
    if (this.#world.sabotage === "fireAndForget") return;
    this.#finish(execution.job, result, true);
  }

  /** Handlers that end at the same instant reach the driver together, as the pump batches them. */
  #finish(job: ClaimedJob, result: ExecutionResult, batched: boolean): void {
    this.#finished.push({ jobId: job.id, attempt: job.attempt, result });
    if (this.#finished.length > 1 && batched) return;
    this.#world.scheduler.after(0, () => {
      const executions = this.#finished;
      this.#finished = [];
      if (executions.length === 0) return;
      if (executions.length === 1) this.post({ type: "finished", ...executions[0]!, now: this.now() });
      else this.post({ type: "finishedMany", executions, now: this.now() });
    });
  }
}
