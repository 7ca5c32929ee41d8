import type { SuiteContext } from "../suite-context.js";

export function outcomeClauses(_ctx: SuiteContext): void {}
