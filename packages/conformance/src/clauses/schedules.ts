import type { SuiteContext } from "../suite-context.js";

export function scheduleClauses(_ctx: SuiteContext): void {}
