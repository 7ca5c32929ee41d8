import type { JobStore, StepHook, StepPoint } from "@belay/contract";
import { InjectedFault } from "./injected-fault.js";
import { expect } from "vitest";
import { snapshot } from "./snapshot.js";
import type { SuiteContext } from "./suite-context.js";

/** A write parked at a step: `reached` resolves when it gets there; `release()` lets it go on. */
export interface Parked {
  readonly reached: Promise<StepPoint>;
  release(): void;
}

/** Parks the first write of `store` that reaches a step matching `match`. */
export function parkAt(ctx: SuiteContext, store: JobStore, match: (point: StepPoint) => boolean): Parked {
  let signalReached!: (point: StepPoint) => void;
  let signalRelease!: () => void;
  const reached = new Promise<StepPoint>((resolve) => (signalReached = resolve));
  const released = new Promise<void>((resolve) => (signalRelease = resolve));
  let armed = true;
  ctx.setStepHook(store, (point) => {
    if (!armed || !match(point)) return;
    armed = false;
    signalReached(point);
    return released;
  });
  return { reached, release: () => signalRelease() };
}

/** Resolves `true` if `promise` settles within `ms`, else `false` (it keeps running). */
export async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  const settled = promise.then(
    () => true,
    () => true,
  );
  try {
    return await Promise.race([settled, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** What {@link faultEveryStep} needs of a suite of either contract: fresh stores and their step hook. */
export interface SteppedStores<S> {
  store(): Promise<S>;
  setStepHook(store: S, hook: StepHook | null): void;
}

/**
 * Proves `operation` is atomic on a store of either contract: it is first run once on a probe
 * store to learn its internal steps; then, for every k, a fresh store goes through `setup`, the
 * operation is faulted at its k-th step, and `read` of the store must equal what it was before
 * (and the store must still accept the operation afterwards). Returns the number of steps seen.
 * An operation must expose `minSteps`: at least one step between two writes besides the one
 * before commit (2), unless it is a single write, which may expose only the step before commit (1).
 */
export async function faultEveryStep<S>(
  ctx: SteppedStores<S>,
  setup: (store: S) => Promise<void>,
  operation: (store: S) => Promise<unknown>,
  read: (store: S) => Promise<unknown>,
  minSteps = 2,
): Promise<number> {
  const probe = await ctx.store();
  await setup(probe);
  const points: StepPoint[] = [];
  ctx.setStepHook(probe, (point) => void points.push(point));
  await operation(probe);
  ctx.setStepHook(probe, null);
  expect(points.length, "the operation exposes internal steps").toBeGreaterThanOrEqual(minSteps);

  for (let k = 0; k < points.length; k++) {
    const store = await ctx.store();
    await setup(store);
    const before = await read(store);
    let seen = 0;
    ctx.setStepHook(store, (point) => {
      if (seen++ === k) throw new InjectedFault(point);
    });
    await expect(operation(store), `fault at step ${k} (${points[k]!.step})`).rejects.toMatchObject({ code: "BELAY_INJECTED_FAULT" });
    ctx.setStepHook(store, null);
    expect(await read(store), `nothing survives a fault at step ${k} (${points[k]!.step})`).toEqual(before);
    await operation(store);
  }
  return points.length;
}

/** {@link faultEveryStep} for the Storage Contract: the store must read the same {@link snapshot} as before. */
export function expectAtomic(
  ctx: SuiteContext,
  setup: (store: JobStore) => Promise<void>,
  operation: (store: JobStore) => Promise<unknown>,
): Promise<number> {
  return faultEveryStep(ctx, setup, operation, snapshot);
}

/**
 * Interleaves two writes deterministically: `first` runs on `store` until it reaches a step
 * matching `match` and is parked there, inside its transaction, holding whatever it holds; then
 * `second` starts (typically on a peer) and is given `ms` to finish or to block on `first`; then
 * `first` goes on. Both must settle; their results come back in that order.
 */
export async function whileParked<A, B>(
  ctx: SuiteContext,
  store: JobStore,
  match: (point: StepPoint) => boolean,
  first: () => Promise<A>,
  second: () => Promise<B>,
  ms = 200,
): Promise<[A, B]> {
  const parked = parkAt(ctx, store, match);
  const a = first();
  // A deadline, not a speed: only an operation that never gets there fails.
  const reached = await Promise.race([parked.reached.then(() => true), a.then(() => false, () => false)]);
  try {
    expect(reached, "the first write reaches the step it is parked at").toBe(true);
    const b = second();
    await settlesWithin(b, ms);
    parked.release();
    const [ra, rb] = await Promise.allSettled([a, b]);
    if (ra.status === "rejected") throw ra.reason;
    if (rb.status === "rejected") throw rb.reason;
    return [ra.value, rb.value];
  } finally {
    parked.release();
    ctx.setStepHook(store, null);
  }
}
