import type { SuiteContext } from "../suite-context.js";

export function readClauses(_ctx: SuiteContext): void {}
