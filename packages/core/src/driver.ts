import type { Instant } from "@belay/contract";
import { Claims } from "./driver/claims.js";
import { Leases } from "./driver/leases.js";
import { Maintenance } from "./driver/maintenance.js";
import { Outcomes } from "./driver/outcomes.js";
import { Slots } from "./driver/slots.js";
import type { DriverCommand, DriverConfig, DriverEvent, DriverSnapshot, ExecutionResult, StoreFault } from "./driver-types.js";
import { FaultState } from "./fault-policy.js";

/**
 * The node driver: a pure state machine, one per pump. The shell feeds it events (`step`) and
 * carries out the commands it returns; the driver never awaits, never reads a clock, never
 * touches I/O, so the same logic runs in production, in the test harness and in the simulator.
 *
 * It owns: backpressure (never more jobs held than free slots, counting claims in flight), claim
 * planning across queues, outcome buffering and batching (one report in flight; outcomes that
 * finish meanwhile ride the next), heartbeats for every held lease, the maintenance cadence, idle
 * backoff from the store's next-due answer, fault backoff, graceful stop and fail-stop.
 *
 * Each concern keeps its state in its own part (`driver/`: slots, claims, outcomes, leases,
 * maintenance); this class routes events to them and owns the lifecycle: phase, faults, stop,
 * and the one wake-up request.
 */
export class NodeDriver {
  readonly #config: DriverConfig;
  #phase: DriverSnapshot["phase"] = "idle";
  readonly #faults = new FaultState();
  readonly #slots: Slots;
  readonly #outcomes: Outcomes;
  readonly #leases: Leases;
  readonly #claims: Claims;
  readonly #maintenance: Maintenance;
  #stopAnnounced = false;
  #wakeAt: Instant | null = null;

  constructor(config: DriverConfig) {
    this.#config = config;
    this.#slots = new Slots(config);
    this.#outcomes = new Outcomes(config);
    this.#leases = new Leases(config, this.#slots, this.#outcomes);
    this.#claims = new Claims(config, this.#slots, this.#leases);
    this.#maintenance = new Maintenance(config);
  }

  /** The driver's current state, for health reporting. */
  snapshot(): DriverSnapshot {
    return {
      phase: this.#phase,
      degraded: this.#faults.degraded,
      lastFault: this.#faults.lastFault,
      executing: this.#slots.running.size,
      reserved: this.#claims.reserved,
      waiting: this.#slots.waiting,
      unreported: this.#outcomes.unreported,
      poolSize: this.#config.poolSize,
      maintainer: this.#maintenance.maintaining,
    };
  }

  /** Feeds one event; returns the commands to carry out, in order. */
  step(event: DriverEvent): DriverCommand[] {
    const out: DriverCommand[] = [];
    if (this.#phase === "halted" || this.#phase === "stopped") return out;
    const { now } = event;
    switch (event.type) {
      case "started":
        this.#phase = "running";
        this.#claims.wantPoll();
        this.#maintenance.start(now);
        break;
      case "timer":
        this.#wakeAt = null; // the requested wake-up has happened
        break;
      case "hint":
        if (this.#config.queues.some((q) => q.name === event.queue)) this.#claims.hint();
        break;
      case "claimed": {
        const requested = this.#claims.answered(event.jobs.length);
        this.#faults.recovered();
        if (this.#phase === "stopping") {
          // Claimed after the stop began: hand the jobs straight back.
          this.#leases.release(event.jobs.map((j) => ({ jobId: j.id, attempt: j.attempt })), out);
          break;
        }
        this.#claims.onClaimed(event.jobs, requested, event.nextDueAt, now, out);
        break;
      }
      case "claimFailed":
        this.#claims.onClaimFailed();
        if (this.#fault(event.fault, out)) this.#claims.backOff(now);
        break;
      case "finished":
        this.#onFinished(event.jobId, event.attempt, event.result, now);
        break;
      case "finishedMany":
        for (const { jobId, attempt, result } of event.executions) this.#onFinished(jobId, attempt, result, now);
        break;
      case "reported":
        this.#faults.recovered();
        // A terminal outcome may have released a dependent job: look for it now.
        if (this.#outcomes.onReported(event.results, now)) this.#claims.wantPoll();
        break;
      case "reportFailed":
        this.#outcomes.onReportFailed();
        if (this.#fault(event.fault, out)) this.#outcomes.backOff(now);
        break;
      case "heartbeatAnswered":
        this.#faults.recovered();
        this.#leases.onHeartbeatAnswered(event.results, out);
        break;
      case "heartbeatFailed":
        this.#leases.onHeartbeatFailed();
        this.#fault(event.fault, out);
        break;
      case "schedulesLoaded":
        this.#maintenance.onSchedulesLoaded(event.schedules, now, out);
        break;
      case "maintained":
        this.#faults.recovered();
        if (this.#maintenance.onMaintained(event)) this.#claims.wantPoll();
        break;
      case "maintainerLeaseAnswered":
        this.#faults.recovered();
        this.#maintenance.onLeaseAnswered(event.result, now);
        break;
      case "maintainerLeaseReleased":
        this.#maintenance.onLeaseReleased();
        break;
      case "maintenanceFailed":
        this.#maintenance.onMaintenanceFailed();
        if (this.#fault(event.fault, out)) this.#maintenance.backOff(event.task, now);
        break;
      case "released":
      case "releaseFailed":
        // A failed release costs nothing but time: the lease lapses and a peer takes the job.
        this.#leases.onReleaseSettled();
        break;
      case "stopRequested":
        if (this.#phase === "running" || this.#phase === "idle") {
          this.#phase = "stopping";
          this.#claims.stop();
          this.#maintenance.stop();
          // Jobs that never started go straight back.
          this.#leases.release(this.#slots.takeWaiting(), out);
        }
        break;
      case "stopDeadline":
        if (this.#phase === "stopping") this.#leases.releaseRunning(out);
        break;
    }
    // A fault while handling the event may have halted the pump (TypeScript cannot see it).
    if ((this.#phase as DriverSnapshot["phase"]) === "halted") return out;
    this.#progress(now, out);
    return out;
  }

  #onFinished(jobId: string, attempt: number, result: ExecutionResult, now: Instant): void {
    const running = this.#slots.finish(jobId, attempt, now);
    if (running === undefined) return;
    this.#claims.slotFreed();
    if (!running.abandoned) this.#outcomes.add(running, result, now);
  }

  /** Records a fault under the fault policy; a non-transient one halts the pump. Returns whether the pump goes on. */
  #fault(fault: StoreFault, out: DriverCommand[]): boolean {
    if (this.#faults.record(fault).type === "backOff") return true;
    this.#phase = "halted";
    for (const [jobId, running] of this.#slots.running) {
      if (!running.abandoned) out.push({ type: "abort", jobId, reason: "halted" });
    }
    // Jobs that never started go back at once (best effort), not when their leases lapse.
    this.#leases.release(this.#slots.takeWaiting(), out);
    out.push({ type: "halted", message: fault.message });
    return false;
  }

  // ---- what to do next -------------------------------------------------------------------------

  /** Issues whatever the state now allows, then asks for the next wake-up. */
  #progress(now: Instant, out: DriverCommand[]): void {
    this.#claims.pollIfDue(now);
    if (this.#slots.waiting > 0) this.#leases.release(this.#slots.startWaiting(now, out), out);
    this.#outcomes.maybeReport(now, out);
    if (this.#phase === "running") {
      this.#claims.maybeClaim(now, out);
      this.#maintenance.maybeMaintain(now, out);
    }
    this.#leases.maybeHeartbeat(now, out);
    if (this.#phase === "stopping") this.#maintenance.maybeRelease(out);
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

  #drained(): boolean {
    return (
      !this.#slots.handlersOwed() &&
      this.#slots.waiting === 0 &&
      this.#outcomes.settled() &&
      this.#claims.settled() &&
      this.#leases.settled() &&
      this.#maintenance.settled()
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
      running ? this.#claims.nextWakeAt() : null,
      this.#leases.nextWakeAt(),
      this.#slots.nextWakeAt(),
      this.#outcomes.nextWakeAt(),
      running ? this.#maintenance.nextWakeAt() : null,
    ];
    let at: Instant | null = null;
    for (const candidate of candidates) if (candidate !== null && candidate > now && (at === null || candidate < at)) at = candidate;
    if (at === null || at === this.#wakeAt) return;
    this.#wakeAt = at;
    out.push({ type: "wakeAt", at });
  }
}
