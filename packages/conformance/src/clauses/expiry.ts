import type { SuiteContext } from "../suite-context.js";

export function expiryClauses(_ctx: SuiteContext): void {}
