import { type AcquireMaintainerLeaseResult, type ClaimedJob, type JobStore, type OutcomeResult, type Tag, utf8ByteLength } from "@belay/contract";
import type { Clock, TimerHandle } from "./clock.js";
import type { AnyJobDefinition } from "./define-job.js";
import { NodeDriver } from "./driver.js";
import type { AbortReason, DriverCommand, DriverConfig, DriverEvent, DriverSnapshot, ExecutionResult, StoreFault } from "./driver-types.js";
import { classifyStoreFault } from "./fault-policy.js";
import { HandlerAbort, type JobContext, JobAbortedError } from "./job-context.js";
import type { Logger } from "./logger.js";
import { parseTags, type TagInput } from "./tags.js";
import type { BelayTelemetry } from "./telemetry.js";

/** Something a pump tells its worker about, for metrics and tests. */
export type PumpEvent =
  | { readonly type: "jobStarted"; readonly job: ClaimedJob }
  | { readonly type: "jobFinished"; readonly job: ClaimedJob; readonly result: ExecutionResult["type"]; readonly durationMs: number }
  | { readonly type: "outcomesReported"; readonly results: readonly OutcomeResult[] }
  /** This pump's answer from the maintainer election (every round, holder or standby). */
  | { readonly type: "maintainerLease"; readonly result: AcquireMaintainerLeaseResult }
  | { readonly type: "storeFault"; readonly operation: string; readonly transient: boolean; readonly message: string }
  | { readonly type: "halted"; readonly message: string };

export interface PumpOptions {
  readonly store: JobStore;
  readonly registry: ReadonlyMap<string, AnyJobDefinition>;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly driver: DriverConfig;
  /** Capture error names, messages and stacks as failure detail (off: `BELAY_DISABLE_FAILURE_DETAIL`). */
  readonly captureFailureDetail: boolean;
  readonly onEvent: (event: PumpEvent) => void;
  /** Spans and metrics; `undefined` keeps every telemetry call off the hot path. */
  readonly telemetry?: { readonly telemetry: BelayTelemetry; readonly group: string };
}

/**
 * The shell of one pump: feeds its driver events and carries out the driver's commands against
 * the store, the handlers and the clock. It owns no decisions — the driver makes them all — only
 * I/O, timers and error classification. Events are queued so the driver is never re-entered.
 */
export class Pump {
  readonly workerId: string;
  readonly #options: PumpOptions;
  readonly #driver: NodeDriver;
  readonly #events: DriverEvent[] = [];
  #draining = false;
  #timer: TimerHandle | null = null;
  #deadline: TimerHandle | null = null;
  readonly #aborts = new Map<string, HandlerAbort>();
  readonly #settled: Promise<void>;
  #settle!: () => void;
  #halted: string | null = null;
  /** Store calls under way (for harnesses that wait until a pump is quiet; handlers are `executing`). */
  #inflight = 0;
  /** Executions that ended in this turn of the event loop, delivered together at its end. */
  #finished: { jobId: string; attempt: number; result: ExecutionResult }[] = [];

  constructor(options: PumpOptions) {
    this.#options = options;
    this.workerId = options.driver.workerId;
    this.#driver = new NodeDriver(options.driver);
    this.#settled = new Promise((resolve) => (this.#settle = resolve));
  }

  /** The driver's state plus whether the pump fail-stopped. */
  snapshot(): DriverSnapshot & { readonly workerId: string; readonly halted: string | null; readonly inflight: number } {
    return { ...this.#driver.snapshot(), workerId: this.workerId, halted: this.#halted, inflight: this.#inflight };
  }

  /** Counts `work` as in flight until it settles. */
  #track<T>(work: Promise<T>): Promise<T> {
    this.#inflight++;
    return work.finally(() => {
      this.#inflight--;
    });
  }

  /** Whether this pump serves `queue` (for wake-up hints). */
  serves(queue: string): boolean {
    return this.#options.driver.queues.some((q) => q.name === queue);
  }

  start(): void {
    this.#post({ type: "started", now: this.#now() });
  }

  hint(queue: string): void {
    this.#post({ type: "hint", queue, now: this.#now() });
  }

  /**
   * Stops claiming, lets running handlers finish until `deadline`, flushes their outcomes, then
   * aborts the rest and releases their jobs. Resolves once nothing is in flight.
   */
  stop(deadline: number): Promise<void> {
    this.#post({ type: "stopRequested", now: this.#now() });
    this.#deadline = this.#options.clock.setTimer(deadline, () => this.#post({ type: "stopDeadline", now: this.#now() }));
    return this.#settled;
  }

  #now(): number {
    return this.#options.clock.now();
  }

  #post(event: DriverEvent): void {
    this.#events.push(event);
    if (this.#draining) return;
    this.#draining = true;
    try {
      for (let next = this.#events.shift(); next !== undefined; next = this.#events.shift()) {
        for (const command of this.#driver.step(next)) this.#carryOut(command);
      }
    } finally {
      this.#draining = false;
    }
  }

  /** Tells the host. A listener that throws is logged and ignored: it never stops the pump or strands a command. */
  #emit(event: PumpEvent): void {
    try {
      this.#options.onEvent(event);
    } catch (error) {
      this.#options.logger.warn("an onEvent listener threw; ignored", { event: event.type, error: (error as Error)?.message ?? String(error) });
    }
  }

  /** Classifies a store error for the driver, which applies the fault policy (`fault-policy.ts`). */
  #fault(operation: string, error: unknown): StoreFault {
    const fault = classifyStoreFault(error);
    const { transient, message } = fault;
    this.#emit({ type: "storeFault", operation, transient, message });
    if (transient) this.#options.logger.warn("transient store fault", { operation, error: message });
    else this.#options.logger.error("store fault: the pump stops", { operation, error: message, workerId: this.workerId });
    return fault;
  }

  #carryOut(command: DriverCommand): void {
    const { store } = this.#options;
    const { workerId } = this;
    switch (command.type) {
      case "claim":
        this.#track(store.claim({ workerId, queues: command.queues, max: command.max, leaseMs: command.leaseMs, now: this.#now() })).then(
          (result) => this.#post({ type: "claimed", claimId: command.claimId, jobs: result.jobs, nextDueAt: result.nextDueAt, now: this.#now() }),
          (error) => this.#post({ type: "claimFailed", claimId: command.claimId, fault: this.#fault("claim", error), now: this.#now() }),
        );
        break;
      case "execute":
        // Run the handler outside the driver's step.
        queueMicrotask(() => void this.#execute(command.job));
        break;
      case "report":
        this.#track(store.reportOutcomes({ reports: command.reports, now: this.#now() })).then(
          (results) => {
            this.#options.telemetry?.telemetry.outcomesReported(results);
            this.#emit({ type: "outcomesReported", results });
            this.#post({ type: "reported", batchId: command.batchId, results, now: this.#now() });
          },
          (error) => this.#post({ type: "reportFailed", batchId: command.batchId, fault: this.#fault("reportOutcomes", error), now: this.#now() }),
        );
        break;
      case "heartbeat":
        this.#track(store.heartbeat({ workerId, leases: command.leases, leaseMs: command.leaseMs, now: this.#now() })).then(
          (results) => this.#post({ type: "heartbeatAnswered", results, now: this.#now() }),
          (error) => this.#post({ type: "heartbeatFailed", fault: this.#fault("heartbeat", error), now: this.#now() }),
        );
        break;
      case "abort":
        this.#abort(command.jobId, command.reason);
        break;
      case "release":
        this.#track(store.release({ workerId, leases: command.leases, now: this.#now() })).then(
          (results) => this.#post({ type: "released", results, now: this.#now() }),
          (error) => this.#post({ type: "releaseFailed", leases: command.leases, fault: this.#fault("release", error), now: this.#now() }),
        );
        break;
      case "acquireMaintainerLease":
        this.#track(store.acquireMaintainerLease({ holder: command.holder, leaseMs: command.leaseMs, now: this.#now() })).then(
          (result) => {
            this.#emit({ type: "maintainerLease", result });
            this.#post({ type: "maintainerLeaseAnswered", result, now: this.#now() });
          },
          (error) => this.#post({ type: "maintenanceFailed", task: "maintainerLease", fault: this.#fault("acquireMaintainerLease", error), now: this.#now() }),
        );
        break;
      case "releaseMaintainerLease":
        // A release that fails costs a standby one lease of waiting, nothing more: never a fault.
        this.#track(store.releaseMaintainerLease({ holder: command.holder })).then(
          () => this.#post({ type: "maintainerLeaseReleased", now: this.#now() }),
          (error) => {
            this.#options.logger.warn("the maintainer lease was not released; it lapses", { error: (error as Error)?.message ?? String(error) });
            this.#post({ type: "maintainerLeaseReleased", now: this.#now() });
          },
        );
        break;
      case "expireLeases":
        this.#track(
          store.expireLeases({ now: this.#now(), max: command.max, ...(command.queues === undefined ? {} : { queues: command.queues }), retry: command.retry }),
        ).then(
          ({ expired }) => {
            if (expired.length > 0) this.#options.telemetry?.telemetry.leasesExpired(expired);
            this.#post({ type: "maintained", task: "expireLeases", count: expired.length, full: expired.length >= command.max, now: this.#now() });
          },
          (error) => this.#post({ type: "maintenanceFailed", task: "expireLeases", fault: this.#fault("expireLeases", error), now: this.#now() }),
        );
        break;
      case "loadSchedules":
        this.#track(store.listSchedules()).then(
          (schedules) => this.#post({ type: "schedulesLoaded", schedules, now: this.#now() }),
          (error) => this.#post({ type: "maintenanceFailed", task: "schedules", fault: this.#fault("listSchedules", error), now: this.#now() }),
        );
        break;
      case "mintDue":
        this.#track(store.mintDue({ decisions: command.decisions, now: this.#now() })).then(
          (results) => {
            const minted = results.reduce((n, r) => n + (r.status === "minted" ? r.jobIds.length : 0), 0);
            this.#post({ type: "maintained", task: "schedules", count: minted, full: false, now: this.#now() });
          },
          (error) => this.#post({ type: "maintenanceFailed", task: "schedules", fault: this.#fault("mintDue", error), now: this.#now() }),
        );
        break;
      case "purge":
        this.#track(store.purgeTerminal({ retentionClass: command.retentionClass, before: command.before, max: command.max })).then(
          ({ purged }) => this.#post({ type: "maintained", task: command.task, count: purged, full: purged >= command.max, now: this.#now() }),
          (error) => this.#post({ type: "maintenanceFailed", task: command.task, fault: this.#fault("purgeTerminal", error), now: this.#now() }),
        );
        break;
      case "wakeAt":
        this.#timer?.cancel();
        this.#timer = this.#options.clock.setTimer(command.at, () => {
          this.#timer = null;
          this.#post({ type: "timer", now: this.#now() });
        });
        break;
      case "stopped":
        this.#finish();
        break;
      case "halted":
        this.#halted = command.message;
        this.#emit({ type: "halted", message: command.message });
        this.#finish();
        break;
    }
  }

  #finish(): void {
    this.#timer?.cancel();
    this.#deadline?.cancel();
    this.#settle();
  }

  #abort(jobId: string, reason: AbortReason): void {
    this.#aborts.get(jobId)?.abort(new JobAbortedError(reason));
  }

  async #execute(job: ClaimedJob): Promise<void> {
    const started = this.#now();
    this.#emit({ type: "jobStarted", job });
    const traced = this.#options.telemetry;
    let result: ExecutionResult;
    if (traced === undefined) result = await this.#run(job);
    else {
      const span = traced.telemetry.startProcess(job, traced.group, started);
      result = await traced.telemetry.within(span, () => this.#run(job));
      traced.telemetry.endProcess(job, span, result, this.#now() - started);
    }
    this.#emit({ type: "jobFinished", job, result: result.type, durationMs: this.#now() - started });
    // Handlers that end in the same turn (a claimed batch of quick jobs) report together and free
    // their slots together: one report and one claim instead of one each.
    this.#finished.push({ jobId: job.id, attempt: job.attempt, result });
    if (this.#finished.length === 1) {
      setImmediate(() => {
        const executions = this.#finished;
        this.#finished = [];
        this.#post({ type: "finishedMany", executions, now: this.#now() });
      });
    }
  }

  /** Runs one handler and classifies what happened. Never throws. */
  async #run(job: ClaimedJob): Promise<ExecutionResult> {
    const definition = this.#options.registry.get(job.jobName);
    if (definition === undefined) return { type: "unroutable", reason: `no handler for job name ${job.jobName}` };
    let payload: unknown;
    try {
      payload = JSON.parse(job.payload);
    } catch (error) {
      return { type: "unroutable", reason: `the payload is not JSON: ${(error as Error).message}` };
    }
    if (definition.schema !== undefined) {
      const checked = await definition.schema["~standard"].validate(payload);
      if (checked.issues !== undefined) {
        return { type: "unroutable", reason: `the payload fails the schema: ${checked.issues[0]?.message ?? "invalid"}` };
      }
      payload = checked.value;
    }
    const abort = new HandlerAbort();
    this.#aborts.set(job.id, abort);
    const added: Tag[] = [];
    const ctx = this.#context(job, abort, added);
    try {
      const output = await definition.handler(payload, ctx);
      const text = output === undefined ? null : JSON.stringify(output);
      const bound = this.#options.store.capabilities.bounds.outputBytes;
      if (text != null && utf8ByteLength(text) > bound) {
        return this.#failed(new Error(`the output of ${job.jobName} is ${utf8ByteLength(text)} bytes; the bound is ${bound}`), added, true);
      }
      return { type: "succeeded", output: text ?? null, addTags: added };
    } catch (error) {
      const reason = abort.reason;
      if (reason instanceof JobAbortedError && reason.reason === "cancelRequested") return { type: "cancelled", addTags: added };
      const permanent = typeof error === "object" && error !== null && (error as { permanent?: unknown }).permanent === true;
      return this.#failed(error, added, !permanent);
    } finally {
      this.#aborts.delete(job.id);
    }
  }

  #failed(error: unknown, addTags: readonly Tag[], retryable: boolean): ExecutionResult {
    let failureDetail: string | null = null;
    if (this.#options.captureFailureDetail) {
      failureDetail =
        error instanceof Error ? `${error.name}: ${error.message}${error.stack ? `\n${error.stack}` : ""}` : `thrown: ${String(error)}`;
    }
    return { type: "failed", failureDetail, addTags, retryable };
  }

  #context(job: ClaimedJob, abort: HandlerAbort, added: Tag[]): JobContext {
    const { store, logger } = this.#options;
    let jobLogger: Logger | undefined;
    const parentOutput = async (parent: AnyJobDefinition | string): Promise<unknown> => {
      let parentId: string | undefined;
      if (typeof parent === "string") parentId = job.parentIds.includes(parent) ? parent : undefined;
      else {
        for (const id of job.parentIds) {
          if ((await store.getJob(id))?.jobName === parent.name) {
            parentId = id;
            break;
          }
        }
      }
      if (parentId === undefined) return null;
      const output = await store.getJobOutput(parentId);
      return output === null ? null : JSON.parse(output);
    };
    return {
      jobId: job.id,
      jobName: job.jobName,
      queue: job.queue,
      attempt: job.attempt,
      get signal() {
        return abort.signal;
      },
      enqueuedAt: job.enqueuedAt,
      dueAt: job.dueAt,
      tags: job.tags,
      traceContext: job.traceContext,
      scheduleId: job.scheduleId,
      workflowId: job.workflowId,
      // Made on first use, as the signal is: most handlers never log.
      get logger() {
        return (jobLogger ??= logger.child({ jobId: job.id, jobName: job.jobName, attempt: job.attempt }));
      },
      addTags: (...tags: TagInput[]) => void added.push(...parseTags(tags, "tags")),
      parentOutput: parentOutput as JobContext["parentOutput"],
    };
  }
}
