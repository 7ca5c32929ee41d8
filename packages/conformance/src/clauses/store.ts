import { DEFAULT_BOUNDS, type StepPoint } from "@belay/contract";
import { expect } from "vitest";
import { clause, clauseGranted, clauseNeeding } from "../clause.js";
import { expectBelayError, newJob, T0 } from "../fixtures.js";
import type { SuiteContext } from "../suite-context.js";
import { expectNamedCapabilities } from "../suite-stores.js";

export function storeClauses(ctx: SuiteContext): void {
  clause("store: capabilities declare the name, transaction support, hints, bounds and history policy", async () => {
    const store = await ctx.store();
    expectNamedCapabilities(store);
    const { capabilities } = store;
    expect(typeof capabilities.transactionalEnqueue).toBe("boolean");
    expect(typeof capabilities.enqueueThrough).toBe("boolean");
    expect(typeof capabilities.wakeUpHints).toBe("boolean");
    expect(capabilities.bounds).toEqual(DEFAULT_BOUNDS);
    expect(capabilities.historyPolicy).toBe("transitionsAndFailureDetail");
    if (capabilities.wakeUpHints) expect(typeof store.subscribeHints).toBe("function");
    if (capabilities.enqueueThrough) {
      expect(typeof store.enqueueThrough).toBe("function");
      expect(typeof store.enqueueWorkflowThrough).toBe("function");
    }
  });

  clause("store: an optional capability the store does not declare is absent or refused loudly, and writes nothing", async () => {
    const store = await ctx.store();
    const { capabilities } = store;
    const refusals: [boolean, string, (() => unknown) | undefined, string][] = [
      [capabilities.wakeUpHints, "subscribeHints", store.subscribeHints && (() => store.subscribeHints!(() => {})), "BELAY_CAPABILITY_NOT_SUPPORTED"],
      [capabilities.stepHook, "setStepHook", store.setStepHook && (() => store.setStepHook!(null)), "BELAY_CAPABILITY_NOT_SUPPORTED"],
      [
        capabilities.enqueueThrough,
        "enqueueThrough",
        store.enqueueThrough && (() => store.enqueueThrough!({ query: async () => [] }, { jobs: [newJob("j1")], now: T0 })),
        "BELAY_TRANSACTION_NOT_SUPPORTED",
      ],
      [
        capabilities.enqueueThrough,
        "enqueueWorkflowThrough",
        store.enqueueWorkflowThrough &&
          (() => store.enqueueWorkflowThrough!({ query: async () => [] }, { workflow: { id: "w1", name: "w", jobs: [newJob("j1")] }, now: T0 })),
        "BELAY_TRANSACTION_NOT_SUPPORTED",
      ],
    ];
    for (const [declared, method, call, code] of refusals) {
      if (declared || call === undefined) continue; // declared: proven elsewhere; absent: nothing to refuse
      await expectBelayError(async () => call(), code, {}, method);
    }
    expect(await store.getJob("j1")).toBeNull();
    expect(await store.getWorkflow("w1")).toBeNull();
  });

  clauseNeeding(ctx, "stepHook", "store: the step hook is called at the internal steps of a write, inside it, until removed", async () => {
    const store = await ctx.store();
    const points: StepPoint[] = [];
    ctx.setStepHook(store, (point) => void points.push(point));
    await store.enqueue({ jobs: [newJob("j1"), newJob("j2", { parentIds: ["j1"] })], now: T0 });
    expect(points.length).toBeGreaterThanOrEqual(1);
    for (const point of points) {
      expect(typeof point.operation).toBe("string");
      expect(typeof point.step).toBe("string");
    }
    ctx.setStepHook(store, null);
    const seen = points.length;
    await store.enqueue({ jobs: [newJob("j3")], now: T0 });
    expect(points.length).toBe(seen);
  });

  clauseGranted(ctx, ["beginTransaction"], "store: a store the adapter opens caller transactions for declares transactionalEnqueue, and accepts them", async () => {
    const store = await ctx.store();
    expect(store.capabilities.transactionalEnqueue, "a transaction hook is granted, so the store must take a tx").toBe(true);
    const tx = await ctx.hooks.beginTransaction!(store);
    const [result] = await store.enqueue({ jobs: [newJob("j1")], now: T0, tx: tx.tx });
    expect(result).toMatchObject({ status: "created" });
    await tx.commit();
    expect(await store.getJob("j1")).toMatchObject({ state: "scheduled" });
  });

  clause("store: bounds and history policy given at creation are the ones in force", async () => {
    const store = await ctx.store({ bounds: { payloadBytes: 100, claimBatch: 4 }, historyPolicy: "transitions" });
    expect(store.capabilities.bounds).toMatchObject({ payloadBytes: 100, claimBatch: 4 });
    expect(store.capabilities.historyPolicy).toBe("transitions");
  });

  clause("store: migrate is idempotent on an up-to-date schema", async () => {
    const store = await ctx.store();
    const first = await store.migrate();
    const second = await store.migrate();
    expect(second.fromVersion).toBe(second.toVersion);
    expect(second.toVersion).toBe(first.toVersion);
  });

  clause("store: a closed store refuses further work", async () => {
    const store = await ctx.store();
    await store.close();
    await expectBelayError(() => store.enqueue({ jobs: [newJob("j1")], now: T0 }), "BELAY_STORE_CLOSED");
  });
}
