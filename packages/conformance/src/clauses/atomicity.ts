import type { SuiteContext } from "../suite-context.js";

export function atomicityClauses(_ctx: SuiteContext): void {}
