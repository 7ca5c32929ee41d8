import { it } from "vitest";
import type { ConformanceHooks, SuiteContext } from "./suite-context.js";

/** Clauses touching real databases can take a while; none should take longer than this. */
const CLAUSE_TIMEOUT_MS = 60_000;

/** One clause of the contract: a test named after the guarantee it proves. */
export function clause(title: string, body: () => Promise<void>): void {
  it(title, body, CLAUSE_TIMEOUT_MS);
}

/**
 * A clause that needs an adapter hook. Without the hook it is reported as skipped, with the
 * missing hook in its title, so a reader of the test report sees what was not proven.
 */
export function clauseWith(
  ctx: SuiteContext,
  hook: keyof ConformanceHooks,
  title: string,
  body: () => Promise<void>,
): void {
  if (ctx.can(hook)) it(title, body, CLAUSE_TIMEOUT_MS);
  else it.skip(`${title} [not proven: the adapter grants no hooks.${hook}]`, body);
}
