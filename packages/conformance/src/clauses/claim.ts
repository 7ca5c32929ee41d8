import type { SuiteContext } from "../suite-context.js";

export function claimClauses(_ctx: SuiteContext): void {}
