import { it } from "vitest";
import type { SuiteContext } from "./suite-context.js";

/** Clauses touching real databases can take a while; none should take longer than this. */
const CLAUSE_TIMEOUT_MS = 60_000;

/** One clause of the contract: a test named after the guarantee it proves. */
export function clause(title: string, body: () => Promise<void>): void {
  it(title, body, CLAUSE_TIMEOUT_MS);
}

/**
 * What a clause needs beyond the mandatory contract: `stepHook` (the store declares
 * `capabilities.stepHook`), `transactions` (the store declares `transactionalEnqueue` and the
 * adapter grants `hooks.beginTransaction`), `enqueueThrough` (the store declares it and the
 * adapter's transactions carry an `executor`).
 */
export type ClauseNeed = "stepHook" | "transactions" | "enqueueThrough";

/** Why `need` is not met by this adapter, or `null` when it is. */
export async function unmet(ctx: SuiteContext, need: ClauseNeed): Promise<string | null> {
  const capabilities = await ctx.capabilities();
  switch (need) {
    case "stepHook":
      return capabilities.stepHook ? null : "the store declares no capabilities.stepHook";
    case "transactions":
      if (!capabilities.transactionalEnqueue) return "the store declares no capabilities.transactionalEnqueue";
      return ctx.hooks.beginTransaction ? null : "the store declares transactionalEnqueue but the adapter grants no hooks.beginTransaction";
    case "enqueueThrough":
      if (!capabilities.enqueueThrough) return "the store declares no capabilities.enqueueThrough";
      return ctx.hooks.beginTransaction ? null : "the store declares enqueueThrough but the adapter grants no hooks.beginTransaction with an executor";
  }
}

/**
 * A clause that needs an optional capability. Where the adapter lacks it, the clause is reported
 * as skipped with the reason (`not proven: …`), so a reader of the test report sees what was
 * not proven — never a silent pass.
 */
export function clauseNeeding(ctx: SuiteContext, need: ClauseNeed, title: string, body: () => Promise<void>): void {
  it(
    title,
    async (test) => {
      const reason = await unmet(ctx, need);
      if (reason !== null) {
        test.skip(`not proven: ${reason}`);
        return;
      }
      await body();
    },
    CLAUSE_TIMEOUT_MS,
  );
}
