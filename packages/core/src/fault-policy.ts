import { type Instant, isBelayError } from "@belay/contract";
import type { StoreFault } from "./driver-types.js";

// The shell's one fault policy (DESIGN §6), shared by pumps and observer dispatchers: a transient
// store fault marks the loop degraded and retries with backoff; any other store error stops that
// loop (fail-stop) and stays visible in health. The process keeps serving its other loops. Pure:
// the shells read the clock and keep the timers.

/**
 * Classifies what a store call threw. Transient by code (`BELAY_TRANSIENT_STORE`), not by
 * `instanceof`: a duplicate install of `@belay/contract` would break `instanceof`.
 */
export function classifyStoreFault(error: unknown): StoreFault {
  return {
    transient: isBelayError(error, "BELAY_TRANSIENT_STORE"),
    message: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
  };
}

/** Backoff after a transient store fault: doubles from `min` up to `max`. */
export interface FaultBackoffRange {
  readonly min: number;
  readonly max: number;
}

/** A fault backoff: when the retried action may run again. */
export interface Backoff {
  readonly at: Instant;
  readonly ms: number;
}

/** The backoff after one more transient fault: `min` after the first, doubling up to `max`. */
export function nextBackoff(previous: Backoff | null, now: Instant, range: FaultBackoffRange): Backoff {
  const ms = previous === null ? range.min : Math.min(previous.ms * 2, range.max);
  return { at: now + ms, ms };
}

/** What the policy says to do about a store fault. */
export type FaultResponse = { readonly type: "backOff" } | { readonly type: "stop" };

/** A loop's health under the fault policy. */
export type FaultStatus = "running" | "degraded" | "stopped";

/**
 * One loop's fault state (a pump's driver, an observer dispatcher). `record` applies the policy;
 * a stop is final, a degradation lasts until the next store call succeeds.
 */
export class FaultState {
  #degraded = false;
  #stopped: string | null = null;
  #lastFault: string | null = null;

  get status(): FaultStatus {
    return this.#stopped !== null ? "stopped" : this.#degraded ? "degraded" : "running";
  }

  /** A transient fault has not been followed by a successful store call yet. */
  get degraded(): boolean {
    return this.#degraded;
  }

  /** The fault that stopped the loop, or `null`. */
  get stopped(): string | null {
    return this.#stopped;
  }

  /** The latest fault's message, kept after recovery; `null` before any. */
  get lastFault(): string | null {
    return this.#lastFault;
  }

  /** Records a fault: transient → degraded, back off and retry; anything else → stop. */
  record(fault: StoreFault): FaultResponse {
    this.#lastFault = fault.message;
    if (fault.transient) {
      this.#degraded = true;
      return { type: "backOff" };
    }
    this.#stopped = fault.message;
    return { type: "stop" };
  }

  /** A store call succeeded. */
  recovered(): void {
    this.#degraded = false;
  }
}
