import type { SuiteContext } from "../suite-context.js";

export function operatorClauses(_ctx: SuiteContext): void {}
