import type { Instant } from "@belay/contract";

/**
 * Every oracle of the simulator, by name, with what it guarantees. Each one is checked after
 * every step (or, for liveness, after the drain) and each has a sabotage switch that proves it
 * fires (`SABOTAGES`).
 */
export const ORACLES = {
  // ---- the job half ----
  legalTransition: "every transition is one of the eleven legal edges, with a cause that fits it",
  legalInitialState: "a job is born scheduled, awaiting parents or cancelled (a failed parent)",
  attemptMonotonic: "the attempt rises by one on each claim and otherwise never changes, except to 0 on a requeue",
  attemptCeiling: "no job is claimed beyond the attempt ceiling of its own retry policy (else its group's)",
  exclusiveExecution: "no handler starts while another worker holds a live lease on its job",
  effectOnce: "every recorded outcome and release came from the lease holder, with its lease live, in a write it sent",
  liveness: "once the faults stop, every job reaches a terminal state and every observer catches up",
  terminalStable: "a terminal job changes only by an operator requeue of a dead-lettered or quarantined job",
  concurrencyLimit: "no claim leases more of a queue's jobs than its concurrency limit",
  slotReleasedOnce: "each lease (a concurrency slot) is released exactly once: by one outcome, release or expiry",
  pausedQueue: "no job is claimed from a paused queue",
  quarantineFinal: "a quarantined job is never handed to a handler",
  auditComplete: "every operator action with an effect has its audit record, written with the effect, and no other",
  tickOnce: "a schedule never mints a tick twice",
  noOverlap: "a no-overlap schedule never mints a tick while an earlier instance is live",
  observerOrder: "an observer first sees a transition only after every earlier matching one was delivered or dead-lettered",
  observerResolution: "an observer's transition is delivered or dead-lettered, never both",
  observerRetryBudget: "a transition is dead-lettered only after its callback failed (or its delivery was lost) as often as its policy allows",
  poolCap: "a pump never runs more handlers than its pool size",
  runaway: "no loop spins: driver steps per pump per virtual second stay bounded",
  // ---- the promise half ----
  settlementWriteOnce: "a settled promise never changes: state, value and settlement time are written once",
  versionFence: "a task's version rises only on acquire, by one, and every write with a stale version is refused",
  awaiterWoken: "a suspended task is woken when a promise it awaits settles",
  executeNotLost: "a pending task always has its retry timer, and every task is fulfilled once the faults stop",
  deadlineFires: "after a timer scan at t, no promise is pending and no task timer is armed at or before t",
} as const;

export type OracleName = keyof typeof ORACLES;

/** One oracle's finding. */
export interface Violation {
  readonly oracle: OracleName;
  /** True (virtual) time of the step that found it. */
  readonly at: Instant;
  /** The scheduler step it was found after. */
  readonly step: number;
  readonly message: string;
}

/** Collects violations: the first of each oracle, and stops the run when told to. */
export class ViolationLog {
  readonly #violations: Violation[] = [];
  readonly #seen = new Set<OracleName>();
  readonly stopAtFirst: boolean;
  #now: () => { at: Instant; step: number };

  constructor(stopAtFirst: boolean, now: () => { at: Instant; step: number }) {
    this.stopAtFirst = stopAtFirst;
    this.#now = now;
  }

  report(oracle: OracleName, message: string): void {
    if (this.#seen.has(oracle)) return;
    this.#seen.add(oracle);
    const { at, step } = this.#now();
    this.#violations.push({ oracle, at, step, message });
  }

  get violations(): readonly Violation[] {
    return this.#violations;
  }

  /** Whether the run should stop now. */
  get done(): boolean {
    return this.stopAtFirst && this.#violations.length > 0;
  }
}
