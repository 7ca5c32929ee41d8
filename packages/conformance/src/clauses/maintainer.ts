import type { AcquireMaintainerLeaseResult, JobStore } from "@belay/contract";
import { expect } from "vitest";
import { clause } from "../clause.js";
import { SECOND, T0 } from "../fixtures.js";
import type { SuiteContext } from "../suite-context.js";

const LEASE_MS = 15 * SECOND;

const acquire = (store: JobStore, holder: string, now: number, leaseMs = LEASE_MS) => store.acquireMaintainerLease({ holder, now, leaseMs });

/** Asks until the answer is not a transient fault (concurrent candidates may collide). */
async function acquireSettled(store: JobStore, holder: string, now: number): Promise<AcquireMaintainerLeaseResult> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await acquire(store, holder, now);
    } catch (error) {
      if ((error as { code?: unknown }).code !== "BELAY_TRANSIENT_STORE" || attempt >= 20) throw error;
    }
  }
}

export function maintainerClauses(ctx: SuiteContext): void {
  clause("maintainer: a fresh store grants the lease to the first candidate, to now + leaseMs", async () => {
    const store = await ctx.store();
    expect(await acquire(store, "m1", T0)).toEqual({ status: "granted", holder: "m1", expiresAt: T0 + LEASE_MS });
  });

  clause("maintainer: the lease is exclusive while live — another candidate reads heldByOther with the holder and its expiry, and changes nothing", async () => {
    const store = await ctx.store();
    await acquire(store, "m1", T0);
    const peer = await ctx.peer(store);
    expect(await acquire(peer, "m2", T0 + LEASE_MS - 1, 60 * SECOND)).toEqual({ status: "heldByOther", holder: "m1", expiresAt: T0 + LEASE_MS });
    // The refusal wrote nothing: the holder still renews, the other is still refused.
    expect(await acquire(store, "m1", T0 + 1)).toEqual({ status: "granted", holder: "m1", expiresAt: T0 + 1 + LEASE_MS });
    expect(await acquire(peer, "m2", T0 + 2)).toEqual({ status: "heldByOther", holder: "m1", expiresAt: T0 + 1 + LEASE_MS });
  });

  clause("maintainer: the holder renews its lease, live or lapsed, each renewal to now + leaseMs exactly (an expiry set far ahead does not stick)", async () => {
    const store = await ctx.store();
    await acquire(store, "m1", T0);
    expect(await acquire(store, "m1", T0 + 5 * SECOND)).toEqual({ status: "granted", holder: "m1", expiresAt: T0 + 5 * SECOND + LEASE_MS });
    expect(await acquire(store, "m1", T0 + 100 * SECOND)).toEqual({ status: "granted", holder: "m1", expiresAt: T0 + 100 * SECOND + LEASE_MS });
    // A clock corrected back after running ahead: the renewal replaces the far expiry.
    expect(await acquire(store, "m1", T0 + 90 * SECOND, SECOND)).toEqual({ status: "granted", holder: "m1", expiresAt: T0 + 91 * SECOND });
  });

  clause("maintainer: another candidate takes the lease over at exactly its expiry (dead at expiry), and the old holder is then refused", async () => {
    const store = await ctx.store();
    await acquire(store, "m1", T0);
    const peer = await ctx.peer(store);
    expect(await acquire(peer, "m2", T0 + LEASE_MS)).toEqual({ status: "granted", holder: "m2", expiresAt: T0 + 2 * LEASE_MS });
    expect(await acquire(store, "m1", T0 + LEASE_MS + 1)).toEqual({ status: "heldByOther", holder: "m2", expiresAt: T0 + 2 * LEASE_MS });
  });

  clause("maintainer: release frees the lease at once for any candidate; a release by a non-holder is notHeld and changes nothing", async () => {
    const store = await ctx.store();
    expect(await store.releaseMaintainerLease({ holder: "m1" })).toEqual({ status: "notHeld" });
    await acquire(store, "m1", T0);
    const peer = await ctx.peer(store);
    expect(await peer.releaseMaintainerLease({ holder: "m2" })).toEqual({ status: "notHeld" });
    expect(await acquire(peer, "m2", T0 + 1)).toMatchObject({ status: "heldByOther", holder: "m1" });
    expect(await store.releaseMaintainerLease({ holder: "m1" })).toEqual({ status: "released" });
    expect(await store.releaseMaintainerLease({ holder: "m1" })).toEqual({ status: "notHeld" });
    expect(await acquire(peer, "m2", T0 + 2)).toEqual({ status: "granted", holder: "m2", expiresAt: T0 + 2 + LEASE_MS });
  });

  clause("maintainer: of concurrent candidates for a free or lapsed lease exactly one is granted, and all others name it", async () => {
    const store = await ctx.store();
    const peer = await ctx.peer(store);
    for (const [round, now] of [T0, T0 + 10 * LEASE_MS].entries()) {
      const candidates = Array.from({ length: 8 }, (_, i) => `r${round}c${i}`);
      const results = await Promise.all(candidates.map((holder, i) => acquireSettled(i % 2 === 0 ? store : peer, holder, now)));
      const winners = results.filter((r) => r.status === "granted");
      expect(winners, `round ${round}: ${JSON.stringify(results)}`).toHaveLength(1);
      const winner = winners[0]!.holder;
      for (const [i, result] of results.entries()) {
        expect(result).toEqual({ status: candidates[i] === winner ? "granted" : "heldByOther", holder: winner, expiresAt: now + LEASE_MS });
      }
    }
  });
}
