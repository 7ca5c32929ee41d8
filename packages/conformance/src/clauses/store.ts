import { DEFAULT_BOUNDS } from "@belay/contract";
import { expect } from "vitest";
import { clause } from "../clause.js";
import { expectBelayError, newJob, T0 } from "../fixtures.js";
import type { SuiteContext } from "../suite-context.js";

export function storeClauses(ctx: SuiteContext): void {
  clause("store: capabilities declare the name, transaction support, hints, bounds and history policy", async () => {
    const store = await ctx.store();
    const { capabilities } = store;
    expect(typeof capabilities.name).toBe("string");
    expect(capabilities.name.length).toBeGreaterThan(0);
    expect(typeof capabilities.transactionalEnqueue).toBe("boolean");
    expect(typeof capabilities.wakeUpHints).toBe("boolean");
    expect(capabilities.bounds).toEqual(DEFAULT_BOUNDS);
    expect(capabilities.historyPolicy).toBe("transitionsAndFailureDetail");
    expect(typeof store.subscribeHints === "function").toBe(capabilities.wakeUpHints);
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
