import type { SuiteContext } from "../suite-context.js";

export function workflowClauses(_ctx: SuiteContext): void {}
