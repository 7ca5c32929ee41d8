import type { SimPlan } from "./plan.js";
import { type SabotageName, isSabotage } from "./sabotage.js";
import { ORACLES, type OracleName } from "./violations.js";

/**
 * A saved plan with what it must do: trip `expect` (an oracle, under `sabotage` or — for a bug
 * found and fixed — without one) or, with `expect: "clean"`, run with no violation at all.
 * Regression fixtures are files of this shape; `pnpm sim --plan FILE` replays one.
 */
export interface SimFixture {
  readonly name: string;
  /** What the plan shows, in a sentence. */
  readonly note: string;
  readonly sabotage: SabotageName | null;
  readonly expect: OracleName | "clean";
  readonly plan: SimPlan;
}

/** Reads a fixture (or a bare plan, which then must run clean) from parsed JSON; throws a `RangeError` if it is neither. */
export function parseSimFixture(json: unknown, name = "plan"): SimFixture {
  if (typeof json !== "object" || json === null) throw new RangeError(`${name}: not a plan or a fixture`);
  const value = json as Partial<SimFixture> & { half?: unknown };
  if (value.half === "jobs" || value.half === "promises") return { name, note: "", sabotage: null, expect: "clean", plan: value as unknown as SimPlan };
  const plan = value.plan as { half?: unknown } | undefined;
  if (plan?.half !== "jobs" && plan?.half !== "promises") throw new RangeError(`${name}: no plan of the jobs or promises half`);
  const sabotage = value.sabotage ?? null;
  if (sabotage !== null && !isSabotage(sabotage)) throw new RangeError(`${name}: unknown sabotage ${String(sabotage)}`);
  const expect = value.expect ?? "clean";
  if (expect !== "clean" && !Object.hasOwn(ORACLES, expect)) throw new RangeError(`${name}: unknown oracle ${String(expect)}`);
  return { name: value.name ?? name, note: value.note ?? "", sabotage, expect, plan: value.plan as SimPlan };
}
