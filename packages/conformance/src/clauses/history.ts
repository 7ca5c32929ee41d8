import type { SuiteContext } from "../suite-context.js";

export function historyClauses(_ctx: SuiteContext): void {}
