import type { AcquireMaintainerLeaseResult, Instant, MintDecision, ScheduleRecord } from "@belay/contract";
import { type CronSchedule, parseCron, planSchedule } from "../cron-planner.js";
import type { DriverCommand, DriverConfig, DriverEvent, ExpirySweep, MaintenanceTask } from "../driver-types.js";
import { type Backoff, nextBackoff } from "../fault-policy.js";

/** One step of a round: a task, and for `expireLeases` which of the sweeps. */
interface Step {
  readonly task: MaintenanceTask;
  readonly sweep: number;
}

/**
 * The maintenance cadence of the pump that runs it: every interval, the lease-expiry sweeps,
 * schedule minting and the retention purges, one task at a time, a task that filled its batch
 * again at once, a failed one again after its backoff. Under an election (`maintainerLease`) a
 * round starts by taking or renewing the store's maintainer lease and runs only if granted; a
 * standby drops the round and tries again at the next one, or at the holder's expiry if sooner.
 */
export class Maintenance {
  readonly #config: DriverConfig;
  readonly #sweeps: readonly ExpirySweep[];
  #nextAt: Instant | null = null;
  #queue: Step[] = [];
  #inFlight: Step | null = null;
  /** The step whose failure is being backed off. */
  #failed: Step | null = null;
  #backoff: Backoff | null = null;
  readonly #crons = new Map<string, { key: string; cron: CronSchedule | null }>();
  /** Until when this pump holds the maintainer lease, by the store's answer; `null` when it does not. */
  #heldUntil: Instant | null = null;
  #stopping = false;
  #release: "none" | "inFlight" | "done" = "none";

  constructor(config: DriverConfig) {
    this.#config = config;
    this.#sweeps = config.expirySweeps ?? [{ queues: config.queues.map((q) => q.name), retry: config.groupRetry }];
  }

  /** Whether this pump runs rounds now: it holds the lease, or maintains without an election. */
  get maintaining(): boolean {
    return this.#config.maintenance && (this.#config.maintainerLease === undefined || this.#heldUntil !== null);
  }

  /** Nothing in flight, and a held lease released (or its release settled). */
  settled(): boolean {
    return this.#inFlight === null && this.#release !== "inFlight" && (this.#heldUntil === null || this.#release === "done");
  }

  /** The pump started: the first round is due at once. */
  start(now: Instant): void {
    if (this.#config.maintenance) this.#nextAt = now;
  }

  /** A graceful stop: the rest of the round is dropped (a task in flight still finishes), then the lease is released. */
  stop(): void {
    this.#queue = [];
    this.#stopping = true;
  }

  /**
   * A task finished. Returns whether it may have made jobs due (minted schedule instances,
   * expired leases), worth a poll.
   */
  onMaintained(event: Extract<DriverEvent, { type: "maintained" }>): boolean {
    const step = this.#inFlight ?? { task: event.task, sweep: 0 };
    this.#inFlight = null;
    if (event.full) this.#queue.unshift(step);
    return (event.task === "schedules" || event.task === "expireLeases") && event.count > 0;
  }

  onMaintenanceFailed(): void {
    // Kept for `backOff`, which puts it back (a non-transient fault halts the pump instead).
    this.#failed = this.#inFlight;
    this.#inFlight = null;
  }

  /** After a transient fault: the task runs again once the backoff ends. */
  backOff(task: MaintenanceTask, now: Instant): void {
    this.#queue.unshift(this.#failed ?? { task, sweep: 0 });
    this.#failed = null;
    this.#backoff = nextBackoff(this.#backoff, now, this.#config.faultBackoffMs);
  }

  /** The store answered the lease request: go on with the round, or drop it and wait as a standby. */
  onLeaseAnswered(result: AcquireMaintainerLeaseResult, now: Instant): void {
    this.#inFlight = null;
    if (result.status === "granted") {
      this.#heldUntil = result.expiresAt;
      return;
    }
    this.#heldUntil = null;
    this.#queue = [];
    // The holder's lease may end before the next round: try again the moment it is dead.
    if (!this.#stopping && this.#nextAt !== null && result.expiresAt > now && result.expiresAt < this.#nextAt) this.#nextAt = result.expiresAt;
  }

  onLeaseReleased(): void {
    this.#release = "done";
    this.#heldUntil = null;
  }

  /** During a stop: once nothing is in flight, hands a held lease back so a standby takes over at once. */
  maybeRelease(out: DriverCommand[]): void {
    const election = this.#config.maintainerLease;
    if (!this.#stopping || election === undefined || this.#heldUntil === null || this.#inFlight !== null || this.#release !== "none") return;
    this.#release = "inFlight";
    out.push({ type: "releaseMaintainerLease", holder: election.holder });
  }

  onSchedulesLoaded(schedules: readonly ScheduleRecord[], now: Instant, out: DriverCommand[]): void {
    const decisions: MintDecision[] = [];
    for (const schedule of schedules) {
      const cron = this.#cronOf(schedule.id, schedule.cron, schedule.timeZone);
      if (cron === null) continue; // an unparseable stored schedule is skipped, never fatal
      const decision = planSchedule(schedule, cron, now);
      if (decision !== null) decisions.push(decision);
    }
    if (decisions.length === 0) {
      this.#inFlight = null;
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

  maybeMaintain(now: Instant, out: DriverCommand[]): void {
    if (!this.#config.maintenance || this.#inFlight !== null) return;
    if (this.#backoff !== null && now < this.#backoff.at) return;
    const election = this.#config.maintainerLease !== undefined;
    if (this.#queue.length === 0) {
      if (this.#nextAt === null || now < this.#nextAt) return;
      this.#queue = election ? [{ task: "maintainerLease", sweep: 0 }] : [];
      this.#queue.push(...this.#round());
      this.#nextAt = now + this.#config.maintenanceIntervalMs;
    } else if (election && this.#queue[0]!.task !== "maintainerLease" && (this.#heldUntil === null || now >= this.#heldUntil)) {
      // A round that outlasted the lease renews it before going on (it may have been taken over).
      this.#queue.unshift({ task: "maintainerLease", sweep: 0 });
    }
    const step = this.#queue.shift();
    if (step === undefined) return;
    this.#backoff = null;
    this.#inFlight = step;
    out.push(this.#command(step, now));
  }

  #round(): Step[] {
    const steps: Step[] = this.#sweeps.map((_, sweep) => ({ task: "expireLeases", sweep }));
    steps.push({ task: "schedules", sweep: 0 });
    if (this.#config.retention.succeededOrCancelled !== null) steps.push({ task: "purgeSucceededOrCancelled", sweep: 0 });
    if (this.#config.retention.deadLetteredOrQuarantined !== null) steps.push({ task: "purgeDeadLetteredOrQuarantined", sweep: 0 });
    return steps;
  }

  #command(step: Step, now: Instant): DriverCommand {
    switch (step.task) {
      case "maintainerLease": {
        const { holder, leaseMs } = this.#config.maintainerLease!;
        return { type: "acquireMaintainerLease", holder, leaseMs };
      }
      case "expireLeases": {
        const sweep = this.#sweeps[step.sweep]!;
        return {
          type: "expireLeases",
          max: this.#config.claimBatch,
          ...(sweep.queues === undefined ? {} : { queues: sweep.queues }),
          retry: sweep.retry,
        };
      }
      case "schedules":
        return { type: "loadSchedules" };
      case "purgeSucceededOrCancelled":
      case "purgeDeadLetteredOrQuarantined": {
        const retentionClass = step.task === "purgeSucceededOrCancelled" ? "succeededOrCancelled" : "deadLetteredOrQuarantined";
        return { type: "purge", task: step.task, retentionClass, before: now - this.#config.retention[retentionClass]!, max: this.#config.purgeBatch };
      }
    }
  }

  /** When the next task may go out (a backoff ending, the next round), if none is in flight; else `null`. */
  nextWakeAt(): Instant | null {
    if (!this.#config.maintenance || this.#inFlight !== null) return null;
    return this.#queue.length > 0 ? (this.#backoff?.at ?? null) : this.#nextAt;
  }
}
