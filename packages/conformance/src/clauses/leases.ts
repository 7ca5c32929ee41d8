import type { SuiteContext } from "../suite-context.js";

export function leaseClauses(_ctx: SuiteContext): void {}
