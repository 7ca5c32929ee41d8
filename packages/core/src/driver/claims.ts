import type { ClaimedJob, Instant } from "@belay/contract";
import { type DispatchCredits, type PlannedClaim, planClaims } from "../dispatch.js";
import type { DriverCommand, DriverConfig } from "../driver-types.js";
import { type Backoff, nextBackoff } from "../fault-policy.js";
import type { Leases } from "./leases.js";
import type { Slots } from "./slots.js";

/**
 * Claiming: when to poll (wanted now, or at the next poll instant with adaptive idle backoff from
 * the store's next-due answer), how much to ask for (never more than free slots plus the prefetch
 * allowance, counting the claim in flight), and in which order across queues.
 */
export class Claims {
  readonly #config: DriverConfig;
  readonly #slots: Slots;
  readonly #leases: Leases;
  #inFlight: { claimId: number; max: number } | null = null;
  #planned: PlannedClaim[] = [];
  #nextClaimId = 1;
  #credits: DispatchCredits = [];
  /** A claim should run as soon as slots allow. */
  #pollWanted = false;
  #nextPollAt: Instant | null = null;
  #idleMs: number;
  #backoff: Backoff | null = null;
  /** The last claim came back full: more work is probably waiting. */
  #backlog = false;

  constructor(config: DriverConfig, slots: Slots, leases: Leases) {
    this.#config = config;
    this.#slots = slots;
    this.#leases = leases;
    this.#idleMs = config.pollIntervalMs;
  }

  /** Slots reserved by the claim in flight. */
  get reserved(): number {
    return this.#inFlight?.max ?? 0;
  }

  /** No claim is in flight. */
  settled(): boolean {
    return this.#inFlight === null;
  }

  /** Something may be due: poll as soon as slots allow. */
  wantPoll(): void {
    this.#pollWanted = true;
  }

  /** A wake-up hint for a served queue: poll now, and restart idle backoff. */
  hint(): void {
    this.#pollWanted = true;
    this.#idleMs = this.#config.pollIntervalMs;
  }

  /** A handler finished: after a full claim, its slot is worth a poll. */
  slotFreed(): void {
    if (this.#backlog) this.#pollWanted = true;
  }

  /** Stop claiming (a graceful stop). */
  stop(): void {
    this.#pollWanted = false;
    this.#planned = [];
  }

  /** The claim in flight was answered; returns how many jobs it asked for. */
  answered(fallback: number): number {
    const requested = this.#inFlight?.max ?? fallback;
    this.#inFlight = null;
    this.#backoff = null;
    return requested;
  }

  onClaimed(jobs: readonly ClaimedJob[], requested: number, nextDueAt: Instant | null, now: Instant, out: DriverCommand[]): void {
    this.#slots.hold(jobs, now);
    this.#leases.release(this.#slots.startWaiting(now, out), out);
    if (jobs.length > 0) {
      this.#leases.claimed(now);
      this.#idleMs = this.#config.pollIntervalMs;
    }
    this.#backlog = jobs.length >= requested;
    if (this.#backlog) {
      // More is probably waiting: poll again once the poll's remaining claims (if any) went out.
      this.#pollWanted = true;
      return;
    }
    if (this.#planned.length > 0) return; // the poll's remaining claims go out next
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

  /** The claim failed: the rest of the poll is dropped. */
  onClaimFailed(): void {
    this.#inFlight = null;
    this.#planned = [];
  }

  /** After a transient fault: poll again once the backoff ends. */
  backOff(now: Instant): void {
    this.#backoff = nextBackoff(this.#backoff, now, this.#config.faultBackoffMs);
    this.#pollWanted = true;
  }

  /** The poll instant has come: a poll is wanted. */
  pollIfDue(now: Instant): void {
    if (this.#nextPollAt !== null && now >= this.#nextPollAt) {
      this.#nextPollAt = null;
      this.#pollWanted = true;
    }
  }

  #freeSlots(now: Instant): number {
    return this.#slots.capacity(now) - this.#slots.held() - this.reserved;
  }

  maybeClaim(now: Instant, out: DriverCommand[]): void {
    if (this.#inFlight !== null) return;
    if (this.#backoff !== null && now < this.#backoff.at) return;
    if (this.#planned.length === 0) {
      if (!this.#pollWanted) return;
      const free = Math.min(this.#freeSlots(now), this.#config.claimBatch);
      if (free <= 0) return; // stays wanted: the next finished job frees a slot
      // While jobs still wait for a slot, a claim can wait for half the capacity to be free:
      // fewer, larger claims, and the handlers never starve.
      if (this.#slots.waiting > 0 && free < Math.min(this.#config.claimBatch, Math.ceil(this.#slots.capacity(now) / 2))) return;
      const plan = planClaims(this.#config.dispatch, this.#config.queues, free, this.#credits);
      this.#credits = plan.credits;
      this.#planned = [...plan.claims];
      this.#pollWanted = false;
      this.#nextPollAt = null;
    }
    const next = this.#planned.shift();
    if (next === undefined) return;
    const max = Math.min(next.max, this.#freeSlots(now));
    if (max <= 0) {
      this.#planned = [];
      this.#pollWanted = true;
      return;
    }
    const claimId = this.#nextClaimId++;
    this.#inFlight = { claimId, max };
    out.push({ type: "claim", claimId, queues: next.queues, max, leaseMs: this.#config.leaseMs });
  }

  /** The next poll instant, or the end of a fault backoff holding a wanted poll; else `null`. */
  nextWakeAt(): Instant | null {
    if (!this.#pollWanted) return this.#nextPollAt;
    return this.#inFlight === null ? (this.#backoff?.at ?? null) : null;
  }
}
