import type { SuiteContext } from "../suite-context.js";

export function retentionClauses(_ctx: SuiteContext): void {}
