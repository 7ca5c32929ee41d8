import type { Instant, PromiseStore } from "@belay/contract";
import { faultEveryStep } from "../interleaving.js";
import { T0 } from "./fixtures.js";
import type { PromiseSuiteContext } from "./suite-context.js";

/**
 * {@link faultEveryStep} for the Promise Store Contract: the store's snapshot at `now` must equal
 * the one before. Returns the number of steps seen.
 */
export function expectPromiseAtomic(
  ctx: PromiseSuiteContext,
  setup: (store: PromiseStore) => Promise<void>,
  operation: (store: PromiseStore) => Promise<unknown>,
  now: Instant = T0,
  minSteps = 2,
): Promise<number> {
  return faultEveryStep(ctx, setup, operation, (store) => store.snapshot(now), minSteps);
}
