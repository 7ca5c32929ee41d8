import { expect, it } from "vitest";
import { type SimHalf, formatViolation, replayCommand, runSeed } from "../src/index.js";

/** Swarm seeds per half in CI (BELAY_SIM_SEEDS overrides). */
export const SWARM_SEEDS = Number(process.env.BELAY_SIM_SEEDS ?? 1_000);
const CHUNK = 100;

/**
 * Registers the swarm of one half: seeds 1…SWARM_SEEDS in chunks of 100, each chunk a test
 * that fails with every failing seed, its first violation and the command that replays it.
 */
export function swarmSuite(half: SimHalf): void {
  for (let from = 1; from <= SWARM_SEEDS; from += CHUNK) {
    const to = Math.min(SWARM_SEEDS, from + CHUNK - 1);
    it(`${half}: swarm seeds ${from}–${to} run with no oracle violation`, { timeout: 600_000 }, async () => {
      const failures: string[] = [];
      for (let seed = from; seed <= to; seed++) {
        const result = await runSeed(seed, half);
        const first = result.violations[0];
        if (first !== undefined) failures.push(`seed ${result.plan.seed}: ${formatViolation(first)}\n  replay: ${replayCommand(seed, half)}`);
      }
      expect(failures, failures.join("\n")).toEqual([]);
    });
  }
}
