import type { Instant, PromiseStore, StepPoint } from "@belay/contract";
import { expect } from "vitest";
import { InjectedFault } from "../injected-fault.js";
import { T0 } from "./fixtures.js";
import type { PromiseSuiteContext } from "./suite-context.js";

/**
 * Proves `operation` is atomic: it runs once on a probe store to learn its internal steps; then,
 * for every k, a fresh store goes through `setup`, the operation is faulted at its k-th step, and
 * the store's snapshot must equal the one before (and the operation must still succeed after).
 * Returns the number of steps seen.
 */
export async function expectPromiseAtomic(
  ctx: PromiseSuiteContext,
  setup: (store: PromiseStore) => Promise<void>,
  operation: (store: PromiseStore) => Promise<unknown>,
  now: Instant = T0,
  minSteps = 2,
): Promise<number> {
  const probe = await ctx.store();
  await setup(probe);
  const points: StepPoint[] = [];
  ctx.setStepHook(probe, (point) => void points.push(point));
  await operation(probe);
  ctx.setStepHook(probe, null);
  // At least one step between two writes, besides the one before commit (an operation that is a
  // single write, as an outbox take, may expose only the step before commit: `minSteps` 1).
  expect(points.length, "the operation exposes internal steps").toBeGreaterThanOrEqual(minSteps);

  for (let k = 0; k < points.length; k++) {
    const store = await ctx.store();
    await setup(store);
    const before = await store.snapshot(now);
    let seen = 0;
    ctx.setStepHook(store, (point) => {
      if (seen++ === k) throw new InjectedFault(point);
    });
    await expect(operation(store), `fault at step ${k} (${points[k]!.step})`).rejects.toMatchObject({ code: "BELAY_INJECTED_FAULT" });
    ctx.setStepHook(store, null);
    expect(await store.snapshot(now), `nothing survives a fault at step ${k} (${points[k]!.step})`).toEqual(before);
    await operation(store);
  }
  return points.length;
}
