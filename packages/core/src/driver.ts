import {
  type ClaimedJob,
  type HeldLease,
  type Instant,
  type MintDecision,
  type OutcomeReport,
  type OutcomeResult,
  type HeartbeatResult,
  type ScheduleRecord,
  countedAttempts,
} from "@belay/contract";
import { type CronSchedule, parseCron, planSchedule } from "./cron-planner.js";
import { type DispatchCredits, type PlannedClaim, planClaims } from "./dispatch.js";
import type {
  DriverCommand,
  DriverConfig,
  DriverEvent,
  DriverSnapshot,
  ExecutionResult,
  MaintenanceTask,
  StoreFault,
} from "./driver-types.js";
import { decideFailure } from "./retry.js";

interface Running {
  readonly job: ClaimedJob;
  /** The lease is gone (lost, or released at a stop deadline): whatever the handler does is dropped. */
  abandoned: boolean;
  cancelRequested: boolean;
  readonly startedAt: Instant;
}

/**
 * How long, on average, a prefetched job may wait locally for a slot. The allowance of waiting
 * jobs shrinks as handlers get slower (poolSize × this ÷ the mean handler time), so prefetching
 * speeds up short jobs and never hoards long ones that an idle peer could run.
 */
const PREFETCH_WAIT_MS = 50;

/**
 * The longest a prefetched job waits for a slot (handlers that turned slow, e.g. one long job
 * among short ones): past it the job is handed back, unstarted, for any node to claim.
 */
const PREFETCH_WAIT_LIMIT_MS = 1_000;

/** A claimed job waiting for a slot, with when it was claimed and until when its lease holds. */
interface Waiting {
  readonly job: ClaimedJob;
  readonly claimedAt: Instant;
  leaseExpiresAt: Instant;
}

/** A fault backoff: when the retried action may run again. */
interface Backoff {
  at: Instant;
  ms: number;
}

const MAINTENANCE_ORDER: readonly MaintenanceTask[] = [
  "expireLeases",
  "schedules",
  "purgeSucceededOrCancelled",
  "purgeDeadLetteredOrQuarantined",
];

/**
 * The node driver: a pure state machine, one per pump. The shell feeds it events (`step`) and
 * carries out the commands it returns; the driver never awaits, never reads a clock, never
 * touches I/O, so the same logic runs in production, in the test harness and in the simulator.
 *
 * It owns: backpressure (never more jobs held than free slots, counting claims in flight), claim
 * planning across queues, outcome buffering and batching (one report in flight; outcomes that
 * finish meanwhile ride the next), heartbeats for every held lease, the maintenance cadence, idle
 * backoff from the store's next-due answer, fault backoff, graceful stop and fail-stop.
 */
export class NodeDriver {
  readonly #config: DriverConfig;
  #phase: DriverSnapshot["phase"] = "idle";
  #degraded = false;
  #lastFault: string | null = null;

  readonly #running = new Map<string, Running>();
  /** Claimed jobs waiting for a free handler slot, oldest claim first. */
  #waiting: Waiting[] = [];
  /** The `now` of the event being handled. */
  #lastNow: Instant = 0;
  /** Moving mean of handler time (ms); `null` until a handler has finished. */
  #meanHandlerMs: number | null = null;
  /** Outcomes waiting for a report, oldest first. */
  #buffer: OutcomeReport[] = [];
  /** The claimed job behind each unreported outcome (to decide a retry if the store rejects it). */
  readonly #unreported = new Map<string, ClaimedJob>();
  #reportInFlight: { batchId: number; reports: readonly OutcomeReport[] } | null = null;
  #reportBackoff: Backoff | null = null;
  #nextBatchId = 1;

  #claimInFlight: { claimId: number; max: number } | null = null;
  #plannedClaims: PlannedClaim[] = [];
  #nextClaimId = 1;
  #credits: DispatchCredits = [];
  /** A claim should run as soon as slots allow. */
  #pollWanted = false;
  #nextPollAt: Instant | null = null;
  #idleMs: number;
  #claimBackoff: Backoff | null = null;
  /** The last claim came back full: more work is probably waiting. */
  #backlog = false;

  #heartbeatInFlight = false;
  /** The attempt of each lease the heartbeat in flight renews (its answers match on both). */
  #heartbeatSent = new Map<string, number>();
  #nextHeartbeatAt: Instant | null = null;

  #nextMaintenanceAt: Instant | null = null;
  #maintenanceQueue: MaintenanceTask[] = [];
  #maintenanceInFlight: MaintenanceTask | null = null;
  #maintenanceBackoff: Backoff | null = null;
  readonly #crons = new Map<string, { key: string; cron: CronSchedule | null }>();

  #releasesInFlight = 0;
  #stopAnnounced = false;
  #wakeAt: Instant | null = null;

  constructor(config: DriverConfig) {
    this.#config = config;
    this.#idleMs = config.pollIntervalMs;
  }

  /** The driver's current state, for health reporting. */
  snapshot(): DriverSnapshot {
    return {
      phase: this.#phase,
      degraded: this.#degraded,
      lastFault: this.#lastFault,
      executing: this.#running.size,
      reserved: this.#claimInFlight?.max ?? 0,
      waiting: this.#waiting.length,
      unreported: this.#buffer.length + (this.#reportInFlight?.reports.length ?? 0),
      poolSize: this.#config.poolSize,
    };
  }

  /** Feeds one event; returns the commands to carry out, in order. */
  step(event: DriverEvent): DriverCommand[] {
    const out: DriverCommand[] = [];
    if (this.#phase === "halted" || this.#phase === "stopped") return out;
    const { now } = event;
    this.#lastNow = now;
    switch (event.type) {
      case "started":
        this.#phase = "running";
        this.#pollWanted = true;
        if (this.#config.maintenance) this.#nextMaintenanceAt = now;
        break;
      case "timer":
        this.#wakeAt = null; // the requested wake-up has happened
        break;
      case "hint":
        if (this.#config.queues.some((q) => q.name === event.queue)) {
          this.#pollWanted = true;
          this.#idleMs = this.#config.pollIntervalMs;
        }
        break;
      case "claimed":
        this.#onClaimed(event.jobs, event.nextDueAt, now, out);
        break;
      case "claimFailed":
        this.#claimInFlight = null;
        this.#plannedClaims = [];
        if (this.#fault(event.fault, out)) {
          this.#claimBackoff = this.#backoff(this.#claimBackoff, now);
          this.#pollWanted = true;
        }
        break;
      case "finished":
        this.#onFinished(event.jobId, event.attempt, event.result, now);
        break;
      case "finishedMany":
        for (const { jobId, attempt, result } of event.executions) this.#onFinished(jobId, attempt, result, now);
        break;
      case "reported":
        this.#onReported(event.results, now);
        break;
      case "reportFailed":
        if (this.#reportInFlight !== null) this.#buffer = [...this.#reportInFlight.reports, ...this.#buffer];
        this.#reportInFlight = null;
        if (this.#fault(event.fault, out)) this.#reportBackoff = this.#backoff(this.#reportBackoff, now);
        break;
      case "heartbeatAnswered":
        this.#heartbeatInFlight = false;
        this.#healthy();
        this.#onHeartbeat(event.results, out);
        this.#heartbeatSent.clear();
        break;
      case "heartbeatFailed":
        this.#heartbeatInFlight = false;
        this.#heartbeatSent.clear();
        this.#fault(event.fault, out);
        break;
      case "schedulesLoaded":
        this.#onSchedulesLoaded(event.schedules, now, out);
        break;
      case "maintained":
        this.#maintenanceInFlight = null;
        this.#healthy();
        if (event.full) this.#maintenanceQueue.unshift(event.task);
        if (event.task === "schedules" && event.count > 0) this.#pollWanted = true;
        if (event.task === "expireLeases" && event.count > 0) this.#pollWanted = true;
        break;
      case "maintenanceFailed":
        this.#maintenanceInFlight = null;
        if (this.#fault(event.fault, out)) {
          this.#maintenanceQueue.unshift(event.task);
          this.#maintenanceBackoff = this.#backoff(this.#maintenanceBackoff, now);
        }
        break;
      case "released":
      case "releaseFailed":
        // A failed release costs nothing but time: the lease lapses and a peer takes the job.
        this.#releasesInFlight--;
        break;
      case "stopRequested":
        if (this.#phase === "running" || this.#phase === "idle") {
          this.#phase = "stopping";
          this.#pollWanted = false;
          this.#plannedClaims = [];
          this.#maintenanceQueue = [];
          // Jobs that never started go straight back.
          this.#releaseWaiting(this.#waiting, out);
          this.#waiting = [];
        }
        break;
      case "stopDeadline":
        if (this.#phase === "stopping") this.#releaseRunning(out);
        break;
    }
    // A fault while handling the event may have halted the pump (TypeScript cannot see it).
    if ((this.#phase as DriverSnapshot["phase"]) === "halted") return out;
    this.#progress(now, out);
    return out;
  }

  // ---- reactions -------------------------------------------------------------------------------

  #onClaimed(jobs: readonly ClaimedJob[], nextDueAt: Instant | null, now: Instant, out: DriverCommand[]): void {
    const requested = this.#claimInFlight?.max ?? jobs.length;
    this.#claimInFlight = null;
    this.#claimBackoff = null;
    this.#healthy();
    if (this.#phase === "stopping") {
      // Claimed after the stop began: hand the jobs straight back.
      if (jobs.length > 0) this.#release(jobs.map((j) => ({ jobId: j.id, attempt: j.attempt })), out);
      return;
    }
    for (const job of jobs) this.#waiting.push({ job, claimedAt: now, leaseExpiresAt: job.leaseExpiresAt });
    this.#startWaiting(now, out);
    if (jobs.length > 0) {
      this.#nextHeartbeatAt ??= now + this.#config.heartbeatIntervalMs;
      this.#idleMs = this.#config.pollIntervalMs;
    }
    this.#backlog = jobs.length >= requested;
    if (this.#backlog) {
      // More is probably waiting: poll again once the poll's remaining claims (if any) went out.
      this.#pollWanted = true;
      return;
    }
    if (this.#plannedClaims.length > 0) return; // the poll's remaining claims go out next
    // The served queues are drained up to now: sleep until the next due job, or the idle
    // interval, which doubles (up to its ceiling) with every empty poll.
    const idleWake = now + (jobs.length === 0 ? this.#idleMs : this.#config.pollIntervalMs);
    if (jobs.length === 0) this.#idleMs = Math.min(this.#idleMs * 2, this.#config.maxPollIntervalMs);
    this.#nextPollAt =
      nextDueAt === null
        ? idleWake
        : nextDueAt <= now
          ? now + this.#config.pollIntervalMs // due work withheld by a concurrency limit
          : Math.min(nextDueAt, idleWake);
  }

  /**
   * Starts waiting jobs, oldest first, while handler slots are free. A job whose lease has run
   * out meanwhile is dropped, never started (a peer may already run it); one that waited past
   * the limit is handed back.
   */
  #startWaiting(now: Instant, out: DriverCommand[]): void {
    let taken = 0;
    const overdue: Waiting[] = [];
    while (taken < this.#waiting.length) {
      const waiting = this.#waiting[taken]!;
      if (waiting.leaseExpiresAt <= now) {
        taken++;
        continue;
      }
      if (now - waiting.claimedAt >= PREFETCH_WAIT_LIMIT_MS) {
        overdue.push(waiting);
        taken++;
        continue;
      }
      if (this.#running.size >= this.#config.poolSize) break;
      taken++;
      const { job } = waiting;
      this.#running.set(job.id, { job, abandoned: false, cancelRequested: false, startedAt: now });
      out.push({ type: "execute", job });
    }
    if (taken > 0) this.#waiting = this.#waiting.slice(taken);
    // Later entries were claimed no earlier than the first kept one; the wake-up covers them.
    this.#releaseWaiting(overdue, out);
  }

  #releaseWaiting(waiting: readonly Waiting[], out: DriverCommand[]): void {
    if (waiting.length > 0) this.#release(waiting.map(({ job }) => ({ jobId: job.id, attempt: job.attempt })), out);
  }

  #onFinished(jobId: string, attempt: number, result: ExecutionResult, now: Instant): void {
    const running = this.#running.get(jobId);
    if (running === undefined || running.job.attempt !== attempt) return;
    this.#running.delete(jobId);
    const ms = Math.max(0, now - running.startedAt);
    this.#meanHandlerMs = this.#meanHandlerMs === null ? ms : this.#meanHandlerMs + (ms - this.#meanHandlerMs) / 8;
    if (this.#backlog) this.#pollWanted = true;
    if (running.abandoned) return;
    this.#buffer.push(this.#toReport(running, result, now));
    this.#unreported.set(jobId, running.job);
  }

  #toReport(running: Running, result: ExecutionResult, now: Instant): OutcomeReport {
    const { job } = running;
    const base = { jobId: job.id, workerId: this.#config.workerId, attempt: job.attempt };
    switch (result.type) {
      case "succeeded":
        return { ...base, outcome: { type: "succeeded", output: result.output }, addTags: result.addTags };
      case "cancelled":
        return { ...base, outcome: { type: "cancelled" }, addTags: result.addTags };
      case "unroutable":
        return { ...base, outcome: { type: "unroutable", reason: result.reason } };
      case "failed": {
        if (running.cancelRequested) return { ...base, outcome: { type: "cancelled" }, addTags: result.addTags };
        const decision = result.retryable
          ? decideFailure(this.#config.retryFor(job.jobName), job.id, countedAttempts(job), now)
          : ({ type: "deadLetter" } as const);
        return {
          ...base,
          outcome: {
            type: "failed",
            retryAt: decision.type === "retry" ? decision.retryAt : null,
            failureDetail: result.failureDetail,
          },
          addTags: result.addTags,
        };
      }
    }
  }

  #onReported(results: readonly OutcomeResult[], now: Instant): void {
    const batch = this.#reportInFlight?.reports ?? [];
    this.#reportInFlight = null;
    this.#reportBackoff = null;
    this.#healthy();
    for (const [i, result] of results.entries()) {
      const job = this.#unreported.get(result.jobId);
      if (result.status === "rejected" && job !== undefined && batch[i]?.outcome.type !== "failed") {
        // The store refused the report itself (e.g. output over its bound): fail the attempt
        // under the job type's policy (the refused row changed nothing, so the lease still holds).
        const decision = decideFailure(this.#config.retryFor(job.jobName), job.id, countedAttempts(job), now);
        this.#buffer.push({
          jobId: job.id,
          workerId: this.#config.workerId,
          attempt: job.attempt,
          outcome: {
            type: "failed",
            retryAt: decision.type === "retry" ? decision.retryAt : null,
            failureDetail: `the store rejected the outcome: ${result.rejection.message}`,
          },
        });
        continue;
      }
      this.#unreported.delete(result.jobId);
      // A terminal outcome may have released a dependent job: look for it now.
      if (result.status === "applied") this.#pollWanted = true;
    }
  }

  #onHeartbeat(results: readonly HeartbeatResult[], out: DriverCommand[]): void {
    if (this.#waiting.length > 0) this.#onWaitingHeartbeat(results);
    for (const result of results) {
      const sent = this.#heartbeatSent.get(result.jobId);
      const found = this.#running.get(result.jobId);
      // An answer about an earlier attempt of the same job (reported, retried and claimed again
      // while the heartbeat was in flight) is not about this one.
      const running = found !== undefined && found.job.attempt === sent ? found : undefined;
      if (result.status === "lost") {
        if (running !== undefined && !running.abandoned) {
          running.abandoned = true;
          out.push({ type: "abort", jobId: result.jobId, reason: "leaseLost" });
        }
        // A buffered outcome of a lost lease would only be stale.
        this.#buffer = this.#buffer.filter((r) => r.jobId !== result.jobId || r.attempt !== sent);
        if (this.#unreported.get(result.jobId)?.attempt === sent) this.#unreported.delete(result.jobId);
      } else if (result.cancelRequested && running !== undefined && !running.cancelRequested && !running.abandoned) {
        running.cancelRequested = true;
        out.push({ type: "abort", jobId: result.jobId, reason: "cancelRequested" });
      }
    }
  }

  /**
   * A waiting job whose lease is lost is dropped; one whose cancel was requested never starts:
   * it is reported cancelled (a pending cancel wins).
   */
  #onWaitingHeartbeat(results: readonly HeartbeatResult[]): void {
    const byId = new Map(results.map((r) => [r.jobId, r]));
    this.#waiting = this.#waiting.filter((waiting) => {
      const { job } = waiting;
      const result = byId.get(job.id);
      if (result === undefined || this.#heartbeatSent.get(job.id) !== job.attempt) return true;
      if (result.status === "lost") return false;
      waiting.leaseExpiresAt = result.leaseExpiresAt;
      if (!result.cancelRequested) return true;
      this.#buffer.push({ jobId: job.id, workerId: this.#config.workerId, attempt: job.attempt, outcome: { type: "cancelled" }, addTags: [] });
      this.#unreported.set(job.id, job);
      return false;
    });
  }

  #onSchedulesLoaded(schedules: readonly ScheduleRecord[], now: Instant, out: DriverCommand[]): void {
    const decisions: MintDecision[] = [];
    for (const schedule of schedules) {
      const cron = this.#cronOf(schedule.id, schedule.cron, schedule.timeZone);
      if (cron === null) continue; // an unparseable stored schedule is skipped, never fatal
      const decision = planSchedule(schedule, cron, now);
      if (decision !== null) decisions.push(decision);
    }
    if (decisions.length === 0) {
      this.#maintenanceInFlight = null;
      return;
    }
    out.push({ type: "mintDue", decisions });
  }

  #cronOf(id: string, expression: string, timeZone: string): CronSchedule | null {
    const key = `${expression}\u0000${timeZone}`;
    const cached = this.#crons.get(id);
    if (cached?.key === key) return cached.cron;
    let cron: CronSchedule | null;
    try {
      cron = parseCron(expression, timeZone);
    } catch {
      cron = null;
    }
    this.#crons.set(id, { key, cron });
    return cron;
  }

  /** Records a fault; a non-transient one halts the pump. Returns whether the pump goes on. */
  #fault(fault: StoreFault, out: DriverCommand[]): boolean {
    this.#lastFault = fault.message;
    if (fault.transient) {
      this.#degraded = true;
      return true;
    }
    this.#phase = "halted";
    for (const [jobId, running] of this.#running) {
      if (!running.abandoned) out.push({ type: "abort", jobId, reason: "halted" });
    }
    // Jobs that never started go back at once (best effort), not when their leases lapse.
    this.#releaseWaiting(this.#waiting, out);
    this.#waiting = [];
    out.push({ type: "halted", message: fault.message });
    return false;
  }

  #healthy(): void {
    this.#degraded = false;
  }

  #backoff(previous: Backoff | null, now: Instant): Backoff {
    const { min, max } = this.#config.faultBackoffMs;
    const ms = previous === null ? min : Math.min(previous.ms * 2, max);
    return { at: now + ms, ms };
  }

  #release(leases: readonly HeldLease[], out: DriverCommand[]): void {
    this.#releasesInFlight++;
    out.push({ type: "release", leases });
  }

  /** At the stop deadline: abort every running handler and hand its job back. */
  #releaseRunning(out: DriverCommand[]): void {
    const leases: HeldLease[] = [];
    for (const [jobId, running] of this.#running) {
      if (running.abandoned) continue;
      running.abandoned = true;
      out.push({ type: "abort", jobId, reason: "stopping" });
      leases.push({ jobId, attempt: running.job.attempt });
    }
    if (leases.length > 0) this.#release(leases, out);
  }

  // ---- what to do next -------------------------------------------------------------------------

  /** Issues whatever the state now allows, then asks for the next wake-up. */
  #progress(now: Instant, out: DriverCommand[]): void {
    if (this.#nextPollAt !== null && now >= this.#nextPollAt) {
      this.#nextPollAt = null;
      this.#pollWanted = true;
    }
    if (this.#waiting.length > 0) this.#startWaiting(now, out);
    this.#maybeReport(now, out);
    if (this.#phase === "running") {
      this.#maybeClaim(now, out);
      this.#maybeMaintain(now, out);
    }
    this.#maybeHeartbeat(now, out);
    if (this.#phase === "stopping" && this.#drained()) {
      this.#phase = "stopped";
      if (!this.#stopAnnounced) {
        this.#stopAnnounced = true;
        out.push({ type: "stopped" });
      }
      return;
    }
    this.#scheduleWake(now, out);
  }

  #maybeReport(now: Instant, out: DriverCommand[]): void {
    if (this.#reportInFlight !== null || this.#buffer.length === 0) return;
    if (this.#reportBackoff !== null && now < this.#reportBackoff.at) return;
    const reports = this.#buffer.slice(0, this.#config.outcomeBatch);
    this.#buffer = this.#buffer.slice(reports.length);
    const batchId = this.#nextBatchId++;
    this.#reportInFlight = { batchId, reports };
    out.push({ type: "report", batchId, reports });
  }

  /** Jobs this pump may hold now: running, waiting, and reserved by a claim in flight. */
  #capacity(): number {
    const { poolSize, prefetch } = this.#config;
    if (prefetch === 0 || this.#meanHandlerMs === null) return poolSize; // nothing known yet: no hoarding
    // A handler running longer than the mean says more about the next wait than the mean does.
    const oldest = this.#running.values().next().value; // the Map keeps start order
    const handlerMs = oldest === undefined ? this.#meanHandlerMs : Math.max(this.#meanHandlerMs, this.#lastNow - oldest.startedAt);
    return poolSize + Math.min(prefetch, Math.floor((poolSize * PREFETCH_WAIT_MS) / Math.max(handlerMs, 0.01)));
  }

  #freeSlots(): number {
    return this.#capacity() - this.#running.size - this.#waiting.length - (this.#claimInFlight?.max ?? 0);
  }

  #maybeClaim(now: Instant, out: DriverCommand[]): void {
    if (this.#claimInFlight !== null) return;
    if (this.#claimBackoff !== null && now < this.#claimBackoff.at) return;
    if (this.#plannedClaims.length === 0) {
      if (!this.#pollWanted) return;
      const free = Math.min(this.#freeSlots(), this.#config.claimBatch);
      if (free <= 0) return; // stays wanted: the next finished job frees a slot
      // While jobs still wait for a slot, a claim can wait for half the capacity to be free:
      // fewer, larger claims, and the handlers never starve.
      if (this.#waiting.length > 0 && free < Math.min(this.#config.claimBatch, Math.ceil(this.#capacity() / 2))) return;
      const plan = planClaims(this.#config.dispatch, this.#config.queues, free, this.#credits);
      this.#credits = plan.credits;
      this.#plannedClaims = [...plan.claims];
      this.#pollWanted = false;
      this.#nextPollAt = null;
    }
    const next = this.#plannedClaims.shift();
    if (next === undefined) return;
    const max = Math.min(next.max, this.#freeSlots());
    if (max <= 0) {
      this.#plannedClaims = [];
      this.#pollWanted = true;
      return;
    }
    const claimId = this.#nextClaimId++;
    this.#claimInFlight = { claimId, max };
    out.push({ type: "claim", claimId, queues: next.queues, max, leaseMs: this.#config.leaseMs });
  }

  #maybeHeartbeat(now: Instant, out: DriverCommand[]): void {
    if (this.#nextHeartbeatAt === null || now < this.#nextHeartbeatAt || this.#heartbeatInFlight) return;
    const leases = this.#heldLeases();
    if (leases.length === 0) {
      this.#nextHeartbeatAt = null;
      return;
    }
    this.#heartbeatInFlight = true;
    this.#heartbeatSent = new Map(leases.map((l) => [l.jobId, l.attempt]));
    this.#nextHeartbeatAt = now + this.#config.heartbeatIntervalMs;
    out.push({ type: "heartbeat", leases, leaseMs: this.#config.leaseMs });
  }

  /** Whether this pump holds any lease (cheap: no list is built). */
  #holdsLeases(): boolean {
    return this.#running.size > 0 || this.#waiting.length > 0 || this.#buffer.length > 0 || this.#reportInFlight !== null;
  }

  /** Every lease this pump still holds: running and waiting jobs, outcomes not yet reported. */
  #heldLeases(): HeldLease[] {
    const leases: HeldLease[] = this.#waiting.map(({ job }) => ({ jobId: job.id, attempt: job.attempt }));
    for (const running of this.#running.values()) {
      if (!running.abandoned) leases.push({ jobId: running.job.id, attempt: running.job.attempt });
    }
    for (const report of [...this.#buffer, ...(this.#reportInFlight?.reports ?? [])]) {
      leases.push({ jobId: report.jobId, attempt: report.attempt });
    }
    return leases;
  }

  #maybeMaintain(now: Instant, out: DriverCommand[]): void {
    if (!this.#config.maintenance || this.#maintenanceInFlight !== null) return;
    if (this.#maintenanceBackoff !== null && now < this.#maintenanceBackoff.at) return;
    if (this.#maintenanceQueue.length === 0) {
      if (this.#nextMaintenanceAt === null || now < this.#nextMaintenanceAt) return;
      this.#maintenanceQueue = MAINTENANCE_ORDER.filter((task) => this.#enabled(task));
      this.#nextMaintenanceAt = now + this.#config.maintenanceIntervalMs;
    }
    const task = this.#maintenanceQueue.shift();
    if (task === undefined) return;
    this.#maintenanceBackoff = null;
    this.#maintenanceInFlight = task;
    out.push(this.#maintenanceCommand(task, now));
  }

  #enabled(task: MaintenanceTask): boolean {
    if (task === "purgeSucceededOrCancelled") return this.#config.retention.succeededOrCancelled !== null;
    if (task === "purgeDeadLetteredOrQuarantined") return this.#config.retention.deadLetteredOrQuarantined !== null;
    return true;
  }

  #maintenanceCommand(task: MaintenanceTask, now: Instant): DriverCommand {
    switch (task) {
      case "expireLeases":
        return {
          type: "expireLeases",
          max: this.#config.claimBatch,
          queues: this.#config.queues.map((q) => q.name),
          retry: this.#config.groupRetry,
        };
      case "schedules":
        return { type: "loadSchedules" };
      case "purgeSucceededOrCancelled":
      case "purgeDeadLetteredOrQuarantined": {
        const retentionClass = task === "purgeSucceededOrCancelled" ? "succeededOrCancelled" : "deadLetteredOrQuarantined";
        return { type: "purge", task, retentionClass, before: now - this.#config.retention[retentionClass]!, max: this.#config.purgeBatch };
      }
    }
  }

  #drained(): boolean {
    const handlersOwed = [...this.#running.values()].some((r) => !r.abandoned);
    return (
      !handlersOwed &&
      this.#waiting.length === 0 &&
      this.#buffer.length === 0 &&
      this.#reportInFlight === null &&
      this.#claimInFlight === null &&
      this.#releasesInFlight === 0 &&
      this.#maintenanceInFlight === null
    );
  }

  /**
   * Asks for a wake-up at the earliest instant something will become possible without an event:
   * the next poll, a fault backoff ending, a heartbeat, the next maintenance. Work blocked on an
   * answer or on a free slot needs no timer: the answer or the finished job wakes the driver.
   */
  #scheduleWake(now: Instant, out: DriverCommand[]): void {
    const running = this.#phase === "running";
    const candidates: (Instant | null)[] = [
      running && !this.#pollWanted ? this.#nextPollAt : null,
      running && this.#pollWanted && this.#claimInFlight === null ? (this.#claimBackoff?.at ?? null) : null,
      !this.#heartbeatInFlight && this.#holdsLeases() ? this.#nextHeartbeatAt : null,
      this.#waiting.length > 0 ? this.#waiting[0]!.claimedAt + PREFETCH_WAIT_LIMIT_MS : null,
      this.#buffer.length > 0 && this.#reportInFlight === null ? (this.#reportBackoff?.at ?? null) : null,
      running && this.#config.maintenance && this.#maintenanceInFlight === null
        ? this.#maintenanceQueue.length > 0
          ? (this.#maintenanceBackoff?.at ?? null)
          : this.#nextMaintenanceAt
        : null,
    ];
    let at: Instant | null = null;
    for (const candidate of candidates) if (candidate !== null && candidate > now && (at === null || candidate < at)) at = candidate;
    if (at === null || at === this.#wakeAt) return;
    this.#wakeAt = at;
    out.push({ type: "wakeAt", at });
  }
}
