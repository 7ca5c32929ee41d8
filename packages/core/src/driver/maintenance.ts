import type { Instant, MintDecision, ScheduleRecord } from "@belay/contract";
import { type CronSchedule, parseCron, planSchedule } from "../cron-planner.js";
import type { DriverCommand, DriverConfig, DriverEvent, MaintenanceTask } from "../driver-types.js";
import { type Backoff, nextBackoff } from "../fault-policy.js";

const MAINTENANCE_ORDER: readonly MaintenanceTask[] = [
  "expireLeases",
  "schedules",
  "purgeSucceededOrCancelled",
  "purgeDeadLetteredOrQuarantined",
];

/**
 * The maintenance cadence of the one pump per group that runs it: every interval, the lease-expiry
 * sweep, schedule minting and the retention purges, one task at a time, a task that filled its
 * batch again at once, a failed one again after its backoff.
 */
export class Maintenance {
  readonly #config: DriverConfig;
  #nextAt: Instant | null = null;
  #queue: MaintenanceTask[] = [];
  #inFlight: MaintenanceTask | null = null;
  #backoff: Backoff | null = null;
  readonly #crons = new Map<string, { key: string; cron: CronSchedule | null }>();

  constructor(config: DriverConfig) {
    this.#config = config;
  }

  /** No task is in flight. */
  settled(): boolean {
    return this.#inFlight === null;
  }

  /** The pump started: the first round is due at once. */
  start(now: Instant): void {
    if (this.#config.maintenance) this.#nextAt = now;
  }

  /** A graceful stop: the rest of the round is dropped (a task in flight still finishes). */
  stop(): void {
    this.#queue = [];
  }

  /**
   * A task finished. Returns whether it may have made jobs due (minted schedule instances,
   * expired leases), worth a poll.
   */
  onMaintained(event: Extract<DriverEvent, { type: "maintained" }>): boolean {
    this.#inFlight = null;
    if (event.full) this.#queue.unshift(event.task);
    return (event.task === "schedules" || event.task === "expireLeases") && event.count > 0;
  }

  onMaintenanceFailed(): void {
    this.#inFlight = null;
  }

  /** After a transient fault: the task runs again once the backoff ends. */
  backOff(task: MaintenanceTask, now: Instant): void {
    this.#queue.unshift(task);
    this.#backoff = nextBackoff(this.#backoff, now, this.#config.faultBackoffMs);
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
    if (this.#queue.length === 0) {
      if (this.#nextAt === null || now < this.#nextAt) return;
      this.#queue = MAINTENANCE_ORDER.filter((task) => this.#enabled(task));
      this.#nextAt = now + this.#config.maintenanceIntervalMs;
    }
    const task = this.#queue.shift();
    if (task === undefined) return;
    this.#backoff = null;
    this.#inFlight = task;
    out.push(this.#command(task, now));
  }

  #enabled(task: MaintenanceTask): boolean {
    if (task === "purgeSucceededOrCancelled") return this.#config.retention.succeededOrCancelled !== null;
    if (task === "purgeDeadLetteredOrQuarantined") return this.#config.retention.deadLetteredOrQuarantined !== null;
    return true;
  }

  #command(task: MaintenanceTask, now: Instant): DriverCommand {
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

  /** When the next task may go out (a backoff ending, the next round), if none is in flight; else `null`. */
  nextWakeAt(): Instant | null {
    if (!this.#config.maintenance || this.#inFlight !== null) return null;
    return this.#queue.length > 0 ? (this.#backoff?.at ?? null) : this.#nextAt;
  }
}
