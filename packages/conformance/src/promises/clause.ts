import { it } from "vitest";
import type { PromiseSuiteContext } from "./suite-context.js";

const CLAUSE_TIMEOUT_MS = 60_000;

/** One clause of the Promise Store Contract: a test named after the guarantee it proves. */
export function promiseClause(title: string, body: () => Promise<void>): void {
  it(title, body, CLAUSE_TIMEOUT_MS);
}

/**
 * A clause that needs `capabilities.stepHook`. Without it the clause is reported as skipped
 * (`not proven: …`), never silently passed.
 */
export function promiseClauseNeedingStepHook(ctx: PromiseSuiteContext, title: string, body: () => Promise<void>): void {
  it(
    title,
    async (test) => {
      const capabilities = await ctx.capabilities();
      if (!capabilities.stepHook) return test.skip("not proven: the store declares no capabilities.stepHook");
      return body();
    },
    CLAUSE_TIMEOUT_MS,
  );
}

/**
 * A clause written as the contract should behave, which the shared `PromiseMachine` (or its
 * request checks) does not satisfy yet: every store inherits the defect. Registered as an expected
 * failure (`it.fails`) unless the adapter asks to assert it; its title says so and `defect` says
 * what is wrong.
 */
export function machineDefectClause(ctx: PromiseSuiteContext, title: string, defect: string, body: () => Promise<void>): void {
  const named = `${title} [machine defect: ${defect}]`;
  if (ctx.machineDefects === "assert") it(named, body, CLAUSE_TIMEOUT_MS);
  else it.fails(named, body, CLAUSE_TIMEOUT_MS);
}
