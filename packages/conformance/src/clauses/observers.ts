import type { SuiteContext } from "../suite-context.js";

export function observerClauses(_ctx: SuiteContext): void {}
