import { describe, expect, it } from "vitest";
import { ORACLES, type OracleName, SABOTAGES, type SabotageName, formatViolation, replayCommand, runPlan, runSeed, swarmPlan } from "../src/index.js";

/**
 * A swarm seed on which each sabotage's oracle is the first to fire (found by
 * `pnpm sim --seeds 40 --sabotage NAME`; any seed that shows it will do).
 */
const SEEDS: Record<SabotageName, number> = {
  unloggedClaim: 1,
  initialLeased: 1,
  attemptRewind: 1,
  claimIgnoresLease: 1,
  unfencedReport: 3,
  sweepRequeuesDead: 1,
  claimIgnoresLimit: 1,
  doubleDisposal: 1,
  claimIgnoresPause: 1,
  claimQuarantined: 5,
  unauditedResume: 1,
  cursorRewind: 1,
  plannerBlind: 1,
  deliveriesReordered: 10,
  deadLetterDelivered: 1,
  inflatedDeliveryAttempts: 1,
  observerSkips: 14,
  groupPolicyWins: 1,
  fireAndForget: 1,
  hotLoop: 1,
  idleSleepsForever: 1,
  staleSettleRead: 1,
  acquireKeepsVersion: 1,
  heartbeatIgnoresFence: 5,
  staleFulfillApplied: 5,
  settleForgetsAwaiters: 1,
  noRetryTimer: 1,
  scanSkipsDeadlines: 1,
};

describe("simulator sabotage: every oracle fires under its deliberate bug", () => {
  it("every oracle has a sabotage switch", () => {
    const proven = new Set<OracleName>(Object.values(SABOTAGES).map((s) => s.oracle));
    expect(Object.keys(ORACLES).filter((o) => !proven.has(o as OracleName))).toEqual([]);
  });

  for (const [name, { half, oracle, bug }] of Object.entries(SABOTAGES) as [SabotageName, (typeof SABOTAGES)[SabotageName]][]) {
    it(`${oracle} fires when ${bug} (${name})`, { timeout: 120_000 }, async () => {
      const seed = SEEDS[name];
      const result = await runSeed(seed, half, { sabotage: name });
      const first = result.violations[0];
      expect(first?.oracle, `${first ? formatViolation(first) : "no violation"}\n  replay: ${replayCommand(seed, half, name)}`).toBe(oracle);
      // The control: the same plan without the bug breaks no oracle.
      const control = await runPlan(swarmPlan(seed, half, name));
      expect(control.violations.map(formatViolation)).toEqual([]);
    });
  }
});
