import type { HeartbeatResult, HeldLease, Instant } from "@belay/contract";
import type { DriverCommand, DriverConfig } from "../driver-types.js";
import type { Outcomes } from "./outcomes.js";
import type { Slots } from "./slots.js";

/**
 * The leases a pump holds — running and waiting jobs, outcomes not yet reported — renewed by one
 * heartbeat for all of them every interval; lost leases and requested cancels from its answers;
 * and the releases that hand jobs back (at a stop, a fault-stop, a prefetch wait limit).
 */
export class Leases {
  readonly #config: DriverConfig;
  readonly #slots: Slots;
  readonly #outcomes: Outcomes;
  #heartbeatInFlight = false;
  /** The attempt of each lease the heartbeat in flight renews (its answers match on both). */
  #heartbeatSent = new Map<string, number>();
  #nextHeartbeatAt: Instant | null = null;
  #releasesInFlight = 0;

  constructor(config: DriverConfig, slots: Slots, outcomes: Outcomes) {
    this.#config = config;
    this.#slots = slots;
    this.#outcomes = outcomes;
  }

  /** No release is in flight. */
  settled(): boolean {
    return this.#releasesInFlight === 0;
  }

  /** Jobs were claimed: the first heartbeat falls due one interval from now (unless one is due). */
  claimed(now: Instant): void {
    this.#nextHeartbeatAt ??= now + this.#config.heartbeatIntervalMs;
  }

  /** Hands jobs back (fenced) so another worker may take them at once. */
  release(leases: readonly HeldLease[], out: DriverCommand[]): void {
    if (leases.length === 0) return;
    this.#releasesInFlight++;
    out.push({ type: "release", leases });
  }

  /** A release was answered or failed: a failed one costs nothing but time (the lease lapses). */
  onReleaseSettled(): void {
    this.#releasesInFlight--;
  }

  /** At the stop deadline: abort every running handler and hand its job back. */
  releaseRunning(out: DriverCommand[]): void {
    const leases: HeldLease[] = [];
    for (const [jobId, running] of this.#slots.running) {
      if (running.abandoned) continue;
      running.abandoned = true;
      out.push({ type: "abort", jobId, reason: "stopping" });
      leases.push({ jobId, attempt: running.job.attempt });
    }
    this.release(leases, out);
  }

  onHeartbeatAnswered(results: readonly HeartbeatResult[], out: DriverCommand[]): void {
    this.#heartbeatInFlight = false;
    if (this.#slots.waiting > 0) {
      for (const job of this.#slots.renewWaiting(results, this.#heartbeatSent)) this.#outcomes.addCancelled(job);
    }
    for (const result of results) {
      const sent = this.#heartbeatSent.get(result.jobId);
      const found = this.#slots.running.get(result.jobId);
      // An answer about an earlier attempt of the same job (reported, retried and claimed again
      // while the heartbeat was in flight) is not about this one.
      const running = found !== undefined && found.job.attempt === sent ? found : undefined;
      if (result.status === "lost") {
        if (running !== undefined && !running.abandoned) {
          running.abandoned = true;
          out.push({ type: "abort", jobId: result.jobId, reason: "leaseLost" });
        }
        this.#outcomes.dropLost(result.jobId, sent);
      } else if (result.cancelRequested && running !== undefined && !running.cancelRequested && !running.abandoned) {
        running.cancelRequested = true;
        out.push({ type: "abort", jobId: result.jobId, reason: "cancelRequested" });
      }
    }
    this.#heartbeatSent.clear();
  }

  onHeartbeatFailed(): void {
    this.#heartbeatInFlight = false;
    this.#heartbeatSent.clear();
  }

  maybeHeartbeat(now: Instant, out: DriverCommand[]): void {
    if (this.#nextHeartbeatAt === null || now < this.#nextHeartbeatAt || this.#heartbeatInFlight) return;
    const leases = this.#held();
    if (leases.length === 0) {
      this.#nextHeartbeatAt = null;
      return;
    }
    this.#heartbeatInFlight = true;
    this.#heartbeatSent = new Map(leases.map((l) => [l.jobId, l.attempt]));
    this.#nextHeartbeatAt = now + this.#config.heartbeatIntervalMs;
    out.push({ type: "heartbeat", leases, leaseMs: this.#config.leaseMs });
  }

  /** Every lease this pump still holds: waiting and running jobs, outcomes not yet reported. */
  #held(): HeldLease[] {
    return [...this.#slots.leases(), ...this.#outcomes.leases()];
  }

  /** When the next heartbeat falls due, if one is owed and none is in flight; else `null`. */
  nextWakeAt(): Instant | null {
    const holds = this.#slots.holdsAny() || this.#outcomes.holdsAny();
    return !this.#heartbeatInFlight && holds ? this.#nextHeartbeatAt : null;
  }
}
