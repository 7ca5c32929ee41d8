import { DEFAULT_PROMISE_BOUNDS, DEFAULT_PROMISE_SETTINGS } from "@belay/contract";
import { expect } from "vitest";
import { promiseClause } from "../clause.js";
import { LISTENER, MINUTE, T0, TARGET_TAGS, createPromise, createRequest, createTargeted, expectCode, fencedCreate, holdTask, ok, suspend } from "../fixtures.js";
import { expectNamedCapabilities } from "../../suite-stores.js";
import type { PromiseSuiteContext } from "../suite-context.js";

// The store as a whole: what it declares, migrate, reset and snapshot (the protocol's debug.reset
// and debug.snap), close.

export function promiseStoreClauses(ctx: PromiseSuiteContext): void {
  promiseClause("store: capabilities declare a name, the default bounds and settings, and whether the step hook exists", async () => {
    const store = await ctx.store();
    expectNamedCapabilities(store);
    expect(store.capabilities.bounds).toEqual(DEFAULT_PROMISE_BOUNDS);
    expect(store.capabilities.settings).toEqual(DEFAULT_PROMISE_SETTINGS);
    if (!store.capabilities.stepHook && store.setStepHook) expect(() => store.setStepHook!(null)).toThrow();
  });

  promiseClause("store: migrate is idempotent on an up-to-date store and keeps the data", async () => {
    const store = await ctx.store();
    await createPromise(store, "p1");
    const result = await store.migrate();
    expect(result.fromVersion).toBe(result.toVersion);
    expect((await store.snapshot(T0)).promises.map((p) => p.id)).toEqual(["p1"]);
  });

  promiseClause("store: snapshot shows every record kind, each list in key order, with the stored (not timed-out) state", async () => {
    const store = await ctx.store();
    await holdTask(store, "root");
    await fencedCreate(store, "root", 1, createRequest("root:2"));
    await fencedCreate(store, "root", 1, createRequest("root:1", { timeoutAt: T0 + 10 }));
    expect((await suspend(store, "root", 1, ["root:2", "root:1"])).status).toBe(200);
    await ok(store, { kind: "promise.register_listener", awaited: "root:2", address: LISTENER });
    await createTargeted(store, "b");
    await createTargeted(store, "a");
    await ok(store, { kind: "schedule.create", id: "s1", cron: "* * * * *", promiseId: "{{.id}}", promiseTimeout: MINUTE, promiseTags: TARGET_TAGS, nextRunAt: T0 + MINUTE });
    const snapshot = await store.snapshot(T0 + 20);
    expect(snapshot.promises.map((p) => [p.id, p.state])).toEqual([["a", "pending"], ["b", "pending"], ["root", "pending"], ["root:1", "pending"], ["root:2", "pending"]]);
    expect(snapshot.tasks.map((t) => [t.id, t.state])).toEqual([["a", "pending"], ["b", "pending"], ["root", "suspended"]]);
    expect(snapshot.callbacks).toEqual([{ awaited: "root:1", awaiter: "root" }, { awaited: "root:2", awaiter: "root" }]);
    expect(snapshot.listeners).toEqual([{ promiseId: "root:2", address: LISTENER }]);
    expect(snapshot.schedules.map((s) => s.id)).toEqual(["s1"]);
    expect(snapshot.outbox.map((m) => `${m.kind}:${m.id}`)).toEqual(["execute:a", "execute:b"]);
    expect(snapshot.timers.promises.map((t) => t.id)).toEqual(["a", "b", "root", "root:1", "root:2"]);
    expect(snapshot.timers.tasks.map((t) => t.id)).toEqual(["a", "b"]);
  });

  promiseClause("store: reset deletes every promise, task, callback, listener, schedule and message; the store works on afterwards", async () => {
    const store = await ctx.store();
    await holdTask(store, "root");
    await fencedCreate(store, "root", 1, createRequest("root:1"));
    expect((await suspend(store, "root", 1, ["root:1"])).status).toBe(200);
    await ok(store, { kind: "promise.register_listener", awaited: "root:1", address: LISTENER });
    await createTargeted(store, "queued");
    await ok(store, { kind: "schedule.create", id: "s1", cron: "* * * * *", promiseId: "{{.id}}", promiseTimeout: MINUTE, promiseTags: TARGET_TAGS, nextRunAt: T0 + MINUTE });
    await store.reset();
    expect(await store.snapshot(T0)).toEqual({ promises: [], tasks: [], callbacks: [], listeners: [], schedules: [], outbox: [], timers: { promises: [], tasks: [] } });
    expect(await store.takeOutbox({ now: T0 + MINUTE, max: 10, leaseMs: MINUTE })).toEqual([]);
    expect(await store.dueSchedules({ now: T0 + MINUTE, max: 10 })).toEqual([]);
    expect(await store.expireTimers({ now: T0 + 100 * MINUTE, max: 10 })).toEqual({ promisesTimedOut: 0, tasksRetried: 0, leasesExpired: 0, more: false });
    expect((await createTargeted(store, "root")).state).toBe("pending");
  });

  promiseClause("store: a closed store refuses further work", async () => {
    const store = await ctx.store();
    await store.close();
    await expectCode(() => store.handle(createRequest("p1"), T0), "BELAY_STORE_CLOSED");
  });
}
