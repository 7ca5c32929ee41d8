import type { SuiteContext } from "../suite-context.js";

export function tagClauses(_ctx: SuiteContext): void {}
