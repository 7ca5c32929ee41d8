import { it } from "vitest";
import { type ConformanceHooks, DATABASE_HOOKS, type SuiteContext } from "./suite-context.js";

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
 * adapter's transactions carry an `executor`), `wakeUpHints` (the store declares it).
 */
export type ClauseNeed = "stepHook" | "transactions" | "enqueueThrough" | "wakeUpHints";

/** Why `need` is not met by this adapter, or `null` when it is; `declared` says whether the store claims the capability. */
export async function unmet(ctx: SuiteContext, need: ClauseNeed): Promise<{ readonly reason: string; readonly declared: boolean } | null> {
  const capabilities = await ctx.capabilities();
  const flag =
    need === "stepHook"
      ? capabilities.stepHook
      : need === "transactions"
        ? capabilities.transactionalEnqueue
        : need === "wakeUpHints"
          ? capabilities.wakeUpHints
          : capabilities.enqueueThrough;
  const name = need === "transactions" ? "transactionalEnqueue" : need;
  if (!flag) return { reason: `the store declares no capabilities.${name}`, declared: false };
  if (need === "stepHook" || need === "wakeUpHints" || ctx.hooks.beginTransaction) return null;
  return { reason: `the store declares ${name} but the adapter grants no hooks.beginTransaction`, declared: true };
}

/**
 * A clause that needs an optional capability. Where the store does not declare it and the clause
 * gives `otherwise`, that runs instead (typically: the capability is refused loudly). Otherwise a
 * missing capability or hook reports the clause as skipped with the reason (`not proven: …`), so
 * a reader of the test report sees what was not proven — never a silent pass.
 */
export function clauseNeeding(
  ctx: SuiteContext,
  need: ClauseNeed,
  title: string,
  body: () => Promise<void>,
  otherwise?: () => Promise<void>,
): void {
  it(
    title,
    async (test) => {
      const missing = await unmet(ctx, need);
      if (missing === null) return body();
      if (!missing.declared && otherwise !== undefined) return otherwise();
      test.skip(`not proven: ${missing.reason}`);
    },
    CLAUSE_TIMEOUT_MS,
  );
}

/**
 * A clause that needs powers only the adapter can grant (`hooks`): reported as skipped with what
 * is missing (`not proven: …`) when the adapter grants any of them not — never a silent pass. For
 * a store declared `withoutDatabase`, a clause needing a database's hook is left out, with a line.
 */
export function clauseGranted(
  ctx: SuiteContext,
  needs: readonly (keyof ConformanceHooks)[],
  title: string,
  body: () => Promise<void>,
): void {
  if (ctx.withoutDatabase !== undefined && needs.some((hook) => DATABASE_HOOKS.includes(hook))) {
    // A store without a database: the clause does not apply. Said once per clause, at collection.
    console.info(`[conformance] ${ctx.name}: left out (${ctx.withoutDatabase}): ${title}`);
    return;
  }
  it(
    title,
    async (test) => {
      const missing = needs.filter((hook) => ctx.hooks[hook] === undefined);
      if (missing.length === 0) return body();
      test.skip(`not proven: the adapter grants no ${missing.map((hook) => `hooks.${hook}`).join(", ")}`);
    },
    CLAUSE_TIMEOUT_MS,
  );
}
