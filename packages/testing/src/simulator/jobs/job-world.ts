import { type Instant, type NewJob, type ObserverDelivery, encodeSeqCursor } from "@belay/contract";
import { MemoryStore } from "@belay/memory";
import type { JobEvent, JobSpec, JobsPlan } from "../plan.js";
import { KeyedDice, parseSeed } from "../prng.js";
import type { SabotageName } from "../sabotage.js";
import { Scheduler } from "../scheduler.js";
import { CALL_TIMEOUT_MS, type LinkFaults, StoreLink } from "../store-link.js";
import { ViolationLog } from "../violations.js";
import { type CommittedAction, type JobMeta, JobOracles } from "./job-oracles.js";
import { ObserverOracles } from "./observer-oracles.js";
import { SabotagedJobStore } from "./sabotaged-store.js";
import { SimNode } from "./sim-node.js";

/** Where the simulation's virtual time starts: 2026-01-01T00:00:00Z. */
export const SIM_START: Instant = Date.UTC(2026, 0, 1);
/** The operator's actor name in audit records. */
export const OPERATOR = "operator";

/** What a run of the job half tells its caller. */
export interface JobRunStats {
  readonly steps: number;
  readonly jobs: number;
  readonly virtualMs: number;
  readonly drained: boolean;
}

/**
 * The job half of the simulator: N nodes (each the real driver per pump, the real observer
 * dispatcher) on one memory store and one virtual timeline, a client that enqueues, an operator
 * who cancels, requeues, pauses, resumes, limits and triggers, and the plan's faults until
 * `activeMs`; then a drain, and liveness. Oracles run after every step.
 */
export class JobWorld {
  readonly plan: JobsPlan;
  readonly sabotage: SabotageName | null;
  readonly scheduler = new Scheduler(SIM_START);
  readonly dice: KeyedDice;
  readonly violations: ViolationLog;
  readonly store: SabotagedJobStore;
  readonly jobOracles: JobOracles;
  readonly observerOracles: ObserverOracles;
  readonly nodes: SimNode[];
  readonly faultsEndAt: Instant;
  faultsActive = true;
  readonly #meta = new Map<string, JobMeta>();
  readonly #client: StoreLink;
  readonly #operator: StoreLink;
  #wrote = false;
  #operatorActed = false;
  #logPosition = -1;
  #auditSeq = 0;
  readonly #deadLetterChecks = new Set<string>();
  #pendingClientCalls = 0;
  #halted = false;
  #triggers = 0;
  #hints = 0;

  constructor(plan: JobsPlan, options: { sabotage?: SabotageName | null; stopAtFirst?: boolean } = {}) {
    this.plan = plan;
    this.sabotage = options.sabotage ?? null;
    this.dice = new KeyedDice(parseSeed(plan.seed));
    this.violations = new ViolationLog(options.stopAtFirst ?? true, () => ({ at: this.scheduler.now - SIM_START, step: this.scheduler.steps }));
    this.store = new SabotagedJobStore(new MemoryStore({ wakeUpHints: true }), this.sabotage);
    this.faultsEndAt = SIM_START + plan.activeMs;
    this.jobOracles = new JobOracles({
      log: this.violations,
      leaseMs: plan.leaseMs,
      skewOf: (workerId) => plan.skewMs[Number(/^n(\d+)\./.exec(workerId)?.[1] ?? -1)] ?? 0,
      meta: (jobId) => this.#metaOf(jobId),
      noOverlapSchedules: new Set(plan.schedules.filter((s) => s.noOverlap).map((s) => s.id)),
    });
    this.observerOracles = new ObserverOracles(this.violations, plan.observers);
    this.nodes = Array.from({ length: plan.nodes }, (_, i) => new SimNode(this, i));
    const faults = () => this.#linkFaults(false);
    this.#client = new StoreLink({ scheduler: this.scheduler, dice: this.dice, name: "client", faults, onPerform: this.markWrote });
    this.#operator = new StoreLink({ scheduler: this.scheduler, dice: this.dice, name: "operator", faults, onPerform: this.markWrote });
  }

  /** A store call performed in this step: the oracles read the log after it. */
  readonly markWrote = (): void => {
    this.#wrote = true;
  };

  /** Stops the run (a runaway loop). */
  halt(): void {
    this.#halted = true;
  }

  nodeFaults(): LinkFaults | null {
    return this.#linkFaults(true);
  }

  #linkFaults(node: boolean): LinkFaults | null {
    if (!this.faultsActive) return null;
    const { axes } = this.plan;
    return {
      before: axes.storeFault,
      after: axes.lostAck,
      fatal: node ? axes.fatalStoreFault : 0,
      drop: node ? axes.heartbeatLoss : 0,
      latencyMs: axes.latencyMs,
    };
  }

  #metaOf(jobId: string): JobMeta {
    const known = this.#meta.get(jobId);
    if (known !== undefined) return known;
    const at = jobId.lastIndexOf("@");
    const schedule = at > 0 ? this.plan.schedules.find((s) => s.id === jobId.slice(0, at)) : undefined;
    return {
      maxAttempts: schedule?.retry?.maxAttempts ?? this.plan.groupRetry.maxAttempts,
      scheduleId: schedule?.id ?? null,
    };
  }

  /** After a committed observer report: read its dead letters at the end of the step. */
  checkDeadLetters(observerId: string): void {
    this.#deadLetterChecks.add(observerId);
  }

  /** An observer callback, as the plan's observer faults decide it. */
  observerCallback(dispatcher: string, observerId: string, delivery: ObserverDelivery): void | Promise<void> {
    const { axes } = this.plan;
    const dice = this.dice;
    const poison = dice.chance(axes.observerPoison, "poison", observerId, delivery.position);
    const transient = this.faultsActive && dice.chance(axes.observerFailure, "observerFailure", observerId, delivery.position, delivery.deliveryAttempt);
    const fails = poison || transient;
    this.observerOracles.onCallback(dispatcher, observerId, delivery, fails);
    if (!fails) return;
    if (dice.chance(0.3, "observerHang", observerId, delivery.position, delivery.deliveryAttempt)) return new Promise<void>(() => {});
    throw new Error(`simulated observer failure at ${delivery.position}`);
  }

  // ---- the run ------------------------------------------------------------------------------

  async run(): Promise<JobRunStats> {
    const { plan, scheduler } = this;
    const raw = this.store.raw;
    await raw.migrate();
    raw.subscribeHints((queue) => this.#onHint(queue));
    for (const schedule of plan.schedules) {
      await raw.upsertSchedule({
        schedule: {
          id: schedule.id,
          cron: schedule.cron,
          timeZone: "UTC",
          jobName: "work",
          queue: schedule.queue,
          payload: "{}",
          catchUp: schedule.catchUp,
          noOverlap: schedule.noOverlap,
          retry: schedule.retry,
        },
        now: SIM_START,
      });
    }
    for (const node of this.nodes) scheduler.at(SIM_START + node.index, () => node.start());
    for (const event of plan.events) {
      if (event.at < plan.activeMs) scheduler.at(SIM_START + event.at, () => this.#onEvent(event));
    }
    scheduler.at(this.faultsEndAt, () => this.#stopFaults());
    const deadline = this.faultsEndAt + plan.drainMs;
    const drained = await scheduler.drive(deadline, {
      afterStep: () => this.#afterStep(),
      runaway: (message) => {
        this.violations.report("runaway", message);
        this.#halted = true;
      },
      stopped: () => this.violations.done || this.#halted,
      drained: () => !this.faultsActive && this.#drained(),
    });
    if (!drained && !this.violations.done && !this.#halted) await this.#checkLiveness();
    return { steps: scheduler.steps, jobs: this.jobOracles.jobs.size, virtualMs: scheduler.now - SIM_START, drained };
  }

  #drained(): boolean {
    return this.jobOracles.live === 0 && this.observerOracles.unresolved === 0 && this.#pendingClientCalls === 0;
  }

  async #checkLiveness(): Promise<void> {
    if (this.jobOracles.live > 0) {
      const live = this.jobOracles.liveJobs();
      this.violations.report("liveness", `${live.length} job(s) not terminal ${this.plan.drainMs} ms after the faults stopped: ${live.slice(0, 5).join(", ")}`);
    }
    const open = this.observerOracles.unresolvedList();
    const raw = this.store.raw;
    const stuck: typeof open = [];
    for (const item of open) {
      if ((await raw.getJob(item.jobId)) === null) this.observerOracles.exempt(item.observerId, item.position);
      else stuck.push(item);
    }
    if (stuck.length > 0) {
      const first = stuck[0]!;
      this.violations.report(
        "liveness",
        `${stuck.length} observed transition(s) neither delivered nor dead-lettered after the drain, e.g. ${first.observerId} at ${first.position} (job ${first.jobId})`,
      );
    }
  }

  async #afterStep(): Promise<void> {
    const store = this.store;
    if (this.#wrote) {
      this.#wrote = false;
      const entries = await store.transitionsAfter(this.#logPosition);
      for (const e of entries) if (e.position > this.#logPosition) this.#logPosition = e.position;
      if (entries.length > 0) {
        this.jobOracles.onTransitions(entries);
        this.observerOracles.onTransitions(entries);
      }
    }
    if (this.#operatorActed) {
      this.#operatorActed = false;
      const page = await store.listAuditRecords({ after: encodeSeqCursor(this.#auditSeq), limit: 200 });
      for (const record of page.records) if (record.seq > this.#auditSeq) this.#auditSeq = record.seq;
      this.jobOracles.onAudit(page.records, OPERATOR);
    }
    for (const observerId of this.#deadLetterChecks) this.observerOracles.onDeadLetters(observerId, await store.raw.listObserverDeadLetters(observerId));
    this.#deadLetterChecks.clear();
    if (this.observerOracles.suspects.length > 0) {
      const gone = new Set<string>();
      for (const { earlier } of this.observerOracles.suspects) {
        for (const q of earlier) if ((await store.raw.getJob(q.jobId)) === null) gone.add(q.jobId);
      }
      this.observerOracles.settleSuspects(gone);
    }
    this.jobOracles.endStep();
  }

  #stopFaults(): void {
    this.faultsActive = false;
    for (const node of this.nodes) node.healAll();
    for (const schedule of this.plan.schedules) {
      this.#operator.call({ op: "removeSchedule", perform: () => this.store.raw.removeSchedule({ scheduleId: schedule.id }), answer: () => {}, fail: () => {} });
    }
    // Once every operator request still on the wire has landed, the operator undoes what would
    // hold the drain back: paused queues resume.
    this.scheduler.after(CALL_TIMEOUT_MS + 500, () => {
      for (const group of this.plan.groups) {
        for (const queue of group.queues) if (this.jobOracles.paused(queue)) this.#operatorCall({ at: this.plan.activeMs, kind: "resume", queue });
      }
    });
  }

  #onHint(queue: string): void {
    const { axes } = this.plan;
    const n = this.#hints++;
    for (const node of this.nodes) {
      if (!node.up || node.isolated) continue;
      for (const pump of node.pumps) {
        if (!pump.serves(queue)) continue;
        const key = ["hint", n, pump.workerId] as const;
        const faulty = this.faultsActive;
        if (faulty && this.dice.chance(axes.hintLoss, ...key, "loss")) continue;
        const delay = faulty && this.dice.chance(axes.hintDelay, ...key, "delay") ? this.dice.int(1, 2_000, ...key, "delayMs") : 0;
        const copies = faulty && this.dice.chance(axes.hintDuplicate, ...key, "dup") ? 2 : 1;
        for (let c = 0; c < copies; c++) this.scheduler.after(delay + c, () => pump.hint(queue));
      }
    }
  }

  // ---- scripted events ----------------------------------------------------------------------

  #onEvent(event: JobEvent): void {
    switch (event.kind) {
      case "enqueue":
        this.#enqueue(event.jobs, null);
        break;
      case "workflow":
        this.#enqueue(event.jobs, event.id);
        break;
      case "crash":
        this.nodes[event.node]?.crashFor(event.downMs);
        break;
      case "stop":
        this.nodes[event.node]?.stopFor(event.downMs);
        break;
      case "isolate":
        this.nodes[event.node]?.isolateFor(event.forMs);
        break;
      default:
        this.#operatorCall(event);
    }
  }

  #newJob(spec: JobSpec, now: Instant): NewJob {
    this.#meta.set(spec.id, { maxAttempts: spec.retry?.maxAttempts ?? this.plan.groupRetry.maxAttempts, scheduleId: null });
    return {
      id: spec.id,
      jobName: spec.name,
      queue: spec.queue,
      payload: spec.badPayload ? "{not json" : JSON.stringify({ id: spec.id }),
      dueAt: now + spec.dueInMs,
      ...(spec.parents && spec.parents.length > 0 ? { parentIds: spec.parents, dependencyMode: spec.mode ?? "onSuccess" } : {}),
      retry: spec.retry ?? null,
    };
  }

  /** The client enqueues (a batch or a workflow), retrying a failed call twice: ids make it idempotent. */
  #enqueue(specs: readonly JobSpec[], workflowId: string | null, attempt = 0): void {
    const now = this.scheduler.now;
    const jobs = specs.map((spec) => this.#newJob(spec, now));
    const raw = this.store.raw;
    this.#pendingClientCalls++;
    const done = () => this.#pendingClientCalls--;
    const retry = () => {
      done();
      if (attempt < 2) this.scheduler.after(300, () => this.#enqueue(specs, workflowId, attempt + 1));
    };
    if (workflowId === null) this.#client.call({ op: "enqueue", perform: () => raw.enqueue({ jobs, now }), answer: done, fail: retry });
    else {
      this.#client.call({
        op: "enqueueWorkflow",
        perform: () => raw.enqueueWorkflow({ workflow: { id: workflowId, name: "sim.flow", jobs }, now }),
        answer: done,
        fail: retry,
      });
    }
  }

  #operatorCall(event: Extract<JobEvent, { kind: "cancel" | "requeue" | "pause" | "resume" | "limit" | "trigger" }>): void {
    const now = this.scheduler.now;
    const raw = this.store.raw;
    const oracles = this.jobOracles;
    const commit = (action: CommittedAction & { limit?: number | null }) => {
      this.#operatorActed = true;
      oracles.recordOperator(action);
    };
    const actor = OPERATOR;
    const ignore = () => {};
    switch (event.kind) {
      case "cancel":
      case "requeue": {
        const eligible = oracles.jobsIn(event.kind === "cancel" ? ["scheduled", "awaitingParents", "leased"] : ["deadLettered", "quarantined"]);
        const jobId = event.job ?? (eligible.length === 0 ? undefined : eligible[(event.pick ?? 0) % eligible.length]);
        if (jobId === undefined) return;
        if (event.kind === "cancel") {
          this.#operator.call({
            op: "cancelJob",
            perform: () => raw.cancelJob({ jobId, actor, now }),
            performed: (r) => commit({ action: "cancel", target: jobId, now, audited: r.status === "cancelled" || r.status === "cancelRequested" }),
            answer: ignore,
            fail: ignore,
          });
        } else {
          this.#operator.call({
            op: "requeueJob",
            perform: () => raw.requeueJob({ jobId, actor, now }),
            performed: (r) => commit({ action: "requeue", target: jobId, now, audited: r.status === "requeued" }),
            answer: ignore,
            fail: ignore,
          });
        }
        return;
      }
      case "pause":
      case "resume": {
        const { queue } = event;
        const action = event.kind === "pause" ? "pauseQueue" : "resumeQueue";
        this.#operator.call({
          op: action,
          perform: () => (event.kind === "pause" ? raw.pauseQueue({ queue, actor, now }) : raw.resumeQueue({ queue, actor, now })),
          performed: () => commit({ action, target: queue, now, audited: true }),
          answer: ignore,
          fail: ignore,
        });
        return;
      }
      case "limit": {
        const { queue, limit } = event;
        this.#operator.call({
          op: "setConcurrencyLimit",
          perform: () => raw.setConcurrencyLimit({ queue, limit, actor, now }),
          performed: () => commit({ action: "setConcurrencyLimit", target: queue, now, audited: true, limit }),
          answer: ignore,
          fail: ignore,
        });
        return;
      }
      case "trigger": {
        const scheduleId = event.schedule;
        const schedule = this.plan.schedules.find((s) => s.id === scheduleId);
        const jobId = `${scheduleId}#t${++this.#triggers}`;
        this.#meta.set(jobId, { maxAttempts: schedule?.retry?.maxAttempts ?? this.plan.groupRetry.maxAttempts, scheduleId: schedule ? scheduleId : null });
        this.#operator.call({
          op: "triggerSchedule",
          perform: () => raw.triggerSchedule({ scheduleId, jobId, actor, now }),
          performed: (r) => commit({ action: "triggerSchedule", target: scheduleId, now, audited: r.status === "triggered" }),
          answer: ignore,
          fail: ignore,
        });
        return;
      }
    }
  }
}
