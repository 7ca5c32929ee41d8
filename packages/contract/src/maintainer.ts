import type { Instant } from "./job.js";

/**
 * The store's one maintainer lease: which worker runs the cluster-wide maintenance (schedule
 * minting, the lease-expiry sweep, retention purges) and until when. `null` while nobody holds
 * it (never taken, or released).
 */
export interface MaintainerLease {
  readonly holder: string;
  /** The lease is dead at exactly this instant, like a job's. */
  readonly expiresAt: Instant;
}

export interface AcquireMaintainerLeaseRequest {
  /** The candidate: one id per worker instance, stable for its lifetime. */
  readonly holder: string;
  /** How long a grant lasts from `now`. */
  readonly leaseMs: number;
  readonly now: Instant;
}

/**
 * `granted`: the caller holds the lease until `expiresAt` (taken or renewed). `heldByOther`:
 * another holder's live lease, with its holder and expiry, so a standby knows when to try again.
 */
export type AcquireMaintainerLeaseResult =
  | { readonly status: "granted"; readonly holder: string; readonly expiresAt: Instant }
  | { readonly status: "heldByOther"; readonly holder: string; readonly expiresAt: Instant };

export interface ReleaseMaintainerLeaseRequest {
  readonly holder: string;
}

/** `released`: the lease is free at once. `notHeld`: the caller did not hold it; nothing changed. */
export type ReleaseMaintainerLeaseResult = { readonly status: "released" } | { readonly status: "notHeld" };

/**
 * The one rule of the maintainer lease, which every store applies to the lease it read and then
 * writes by compare-and-set against that same read: the lease is granted when it is free, dead at
 * `now` (expiry ≤ `now`), or already the caller's; otherwise the live holder keeps it. A grant,
 * renewal included, runs to `now + leaseMs` exactly: an expiry written by a clock that once ran
 * far ahead is replaced at the next renewal instead of kept, so a holder that dies after that
 * blocks its standbys for one lease at most. (A clock stepping back may let the lease lapse
 * early; two maintainers for a moment are harmless, below.)
 *
 * The lease saves work, it fences nothing: every maintenance task is safe to run concurrently
 * (lease expiry disposes of each lease once, minting moves each cursor by compare-and-set,
 * purges delete what is there), so two maintainers for a moment — clocks skewed, a round longer
 * than the lease — cost duplicate reads, never a duplicate effect.
 */
export function decideMaintainerLease(current: MaintainerLease | null, request: AcquireMaintainerLeaseRequest): AcquireMaintainerLeaseResult {
  const { holder, now, leaseMs } = request;
  if (current !== null && current.holder !== holder && current.expiresAt > now) {
    return { status: "heldByOther", holder: current.holder, expiresAt: current.expiresAt };
  }
  return { status: "granted", holder, expiresAt: now + leaseMs };
}

/** What releasing does to the lease read: `released` (the store writes it free) when it was `holder`'s, else `notHeld` (no write). */
export function releasedMaintainerLease(current: MaintainerLease | null, request: ReleaseMaintainerLeaseRequest): ReleaseMaintainerLeaseResult {
  return current !== null && current.holder === request.holder ? { status: "released" } : { status: "notHeld" };
}
