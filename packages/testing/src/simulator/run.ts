import { JobWorld } from "./jobs/job-world.js";
import { swarmJobsPlan } from "./jobs/job-swarm.js";
import type { SimPlan } from "./plan.js";
import { PromiseWorld } from "./promises/promise-world.js";
import { swarmPromisesPlan } from "./promises/promise-swarm.js";
import { Rng, type Seed, formatSeed, parseSeed } from "./prng.js";
import { SABOTAGES, type SabotageName } from "./sabotage.js";
import type { Violation } from "./violations.js";

/** Which half of Belay a plan simulates. */
export type SimHalf = SimPlan["half"];

export interface SimRunOptions {
  /** A sabotage switch of this plan's half (a deliberate bug), for proving an oracle fires. */
  readonly sabotage?: SabotageName | null;
  /** Stop at the first step with a violation (default true); false collects the first of each oracle. */
  readonly stopAtFirst?: boolean;
}

export interface SimResult {
  readonly plan: SimPlan;
  readonly sabotage: SabotageName | null;
  readonly violations: readonly Violation[];
  /** Simulator steps, entities (jobs or promises), virtual time run, and whether the drain finished early. */
  readonly stats: { readonly steps: number; readonly entities: number; readonly virtualMs: number; readonly drained: boolean };
}

/** The plan a swarm seed expands to, for one half. */
export function swarmPlan(seed: Seed | number | string, half: SimHalf, sabotage: SabotageName | null = null): SimPlan {
  const value = typeof seed === "bigint" ? seed : parseSeed(seed);
  const rng = Rng.fromSeed(value).fork(half);
  return half === "jobs" ? swarmJobsPlan(value, rng, sabotage) : swarmPromisesPlan(value, rng, sabotage);
}

/** Runs one plan to its end (or its first violation). Deterministic: the same plan, the same result. */
export async function runPlan(plan: SimPlan, options: SimRunOptions = {}): Promise<SimResult> {
  const sabotage = options.sabotage ?? null;
  if (sabotage !== null && SABOTAGES[sabotage].half !== plan.half) {
    throw new RangeError(`sabotage ${sabotage} belongs to the ${SABOTAGES[sabotage].half} half, not ${plan.half}`);
  }
  const stopAtFirst = options.stopAtFirst ?? true;
  if (plan.half === "jobs") {
    const world = new JobWorld(plan, { sabotage, stopAtFirst });
    const stats = await world.run();
    return { plan, sabotage, violations: world.violations.violations, stats: { steps: stats.steps, entities: stats.jobs, virtualMs: stats.virtualMs, drained: stats.drained } };
  }
  const world = new PromiseWorld(plan, { sabotage, stopAtFirst });
  const stats = await world.run();
  return { plan, sabotage, violations: world.violations.violations, stats };
}

/** Runs a swarm seed of one half. */
export function runSeed(seed: Seed | number | string, half: SimHalf, options: SimRunOptions = {}): Promise<SimResult> {
  return runPlan(swarmPlan(seed, half, options.sabotage ?? null), options);
}

/** The one-line command that replays a swarm seed exactly. */
export function replayCommand(seed: Seed | number | string, half: SimHalf, sabotage: SabotageName | null = null): string {
  const value = typeof seed === "bigint" ? seed : parseSeed(seed);
  return `pnpm sim --replay ${formatSeed(value)} --half ${half}${sabotage ? ` --sabotage ${sabotage}` : ""}`;
}

/** The one-line command that replays a saved plan. */
export function replayPlanCommand(path: string, sabotage: SabotageName | null = null): string {
  return `pnpm sim --plan ${path}${sabotage ? ` --sabotage ${sabotage}` : ""}`;
}

/** One violation as a report line: the oracle, when and what. */
export function formatViolation(violation: Violation): string {
  return `${violation.oracle} at ${(violation.at / 1_000).toFixed(3)} s (step ${violation.step}): ${violation.message}`;
}
