import { expect } from "vitest";
import { machineDefectClause, promiseClause } from "../clause.js";
import {
  DEADLINE, LISTENER, MINUTE, T0, TTL, acquire, createPromise, createRequest, createTargeted, execute, expectUnchanged,
  fencedCreate, getTask, holdTask, ok, queued, refused, settle, storedPromise, storedTask, suspend, taskTimer, unblock,
} from "../fixtures.js";
import type { PromiseSuiteContext } from "../suite-context.js";

// promise.settle: write-once settlement by a client, and the settlement chain that commits with
// it — the promise's own task fulfilled, awaiting tasks resumed, listeners unblocked.

/** `parent` held at version 1, suspended on a fresh child `child` (no target). */
async function parkedOn(store: Parameters<typeof createPromise>[0], parent: string, child: string, childDeadline = DEADLINE) {
  await holdTask(store, parent);
  await fencedCreate(store, parent, 1, createRequest(child, { timeoutAt: childDeadline }));
  expect(await suspend(store, parent, 1, [child])).toEqual({ status: 200, data: {} });
}

export function settleClauses(ctx: PromiseSuiteContext): void {
  promiseClause("promise.settle: settles a pending promise with the given state and value at now, and drops its deadline", async () => {
    const store = await ctx.store();
    await createPromise(store, "p1");
    const record = await settle(store, "p1", "resolved", { headers: { h: "1" }, data: "b2s=" }, T0 + 7);
    expect(record).toEqual({ id: "p1", state: "resolved", param: {}, value: { headers: { h: "1" }, data: "b2s=" }, tags: {}, timeoutAt: DEADLINE, createdAt: T0, settledAt: T0 + 7 });
    expect(await storedPromise(store, "p1", T0 + 7)).toEqual(record);
    expect((await store.snapshot(T0 + 7)).timers.promises).toEqual([]);
  });

  promiseClause("promise.settle: each client state (resolved, rejected, rejected_canceled) is stored as given", async () => {
    const store = await ctx.store();
    for (const state of ["resolved", "rejected", "rejected_canceled"] as const) {
      await createPromise(store, state);
      expect((await settle(store, state, state, undefined, T0 + 1)).state).toBe(state);
      expect((await storedPromise(store, state, T0 + 1))?.state).toBe(state);
    }
  });

  promiseClause("promise.settle: an unknown promise answers 404 and writes nothing", async () => {
    const store = await ctx.store();
    await createPromise(store, "p1");
    await expectUnchanged(store, () => refused(store, { kind: "promise.settle", id: "ghost", state: "resolved" }, 404));
  });

  promiseClause("promise.settle: write-once — a repeat with another state or value answers the stored record and writes nothing", async () => {
    const store = await ctx.store();
    await createPromise(store, "p1");
    const first = await settle(store, "p1", "resolved", { data: "Zmlyc3Q=" }, T0 + 1);
    await expectUnchanged(
      store,
      async () => {
        expect(await settle(store, "p1", "rejected", { data: "c2Vjb25k" }, T0 + 2)).toEqual(first);
        expect(await settle(store, "p1", "resolved", { data: "Zmlyc3Q=" }, T0 + 3)).toEqual(first);
      },
      T0 + 3,
    );
  });

  promiseClause("promise.settle: at or after the deadline it answers the timed-out record (settledAt = deadline) and never overwrites it; one millisecond before it settles", async () => {
    const store = await ctx.store();
    await createPromise(store, "late");
    await createPromise(store, "early");
    expect(await settle(store, "late", "resolved", { data: "eA==" }, DEADLINE)).toMatchObject({ state: "rejected_timedout", value: {}, settledAt: DEADLINE });
    expect(await storedPromise(store, "late", DEADLINE)).toMatchObject({ state: "rejected_timedout", value: {} });
    expect(await settle(store, "early", "resolved", { data: "eA==" }, DEADLINE - 1)).toMatchObject({ state: "resolved", settledAt: DEADLINE - 1 });
  });

  promiseClause("promise.settle: settling a targeted promise fulfils its task: no timer, no execute, no pid or ttl", async () => {
    const store = await ctx.store();
    await createTargeted(store, "pending");
    await holdTask(store, "held");
    await settle(store, "pending", "resolved", undefined, T0 + 1);
    await settle(store, "held", "rejected_canceled", undefined, T0 + 1);
    expect(await storedTask(store, "pending", T0 + 1)).toEqual({ id: "pending", state: "fulfilled", version: 0, resumes: 0 });
    expect(await storedTask(store, "held", T0 + 1)).toEqual({ id: "held", state: "fulfilled", version: 1, resumes: 0 });
    expect((await store.snapshot(T0 + 1)).timers.tasks).toEqual([]);
    expect(await queued(store, T0 + 1)).toEqual([]);
  });

  promiseClause("promise.settle: after an outsider settles an acquired task's promise, the holder's fulfill answers 409 and the outsider's value stands", async () => {
    const store = await ctx.store();
    await holdTask(store, "p1");
    await settle(store, "p1", "rejected_canceled", undefined, T0 + 1);
    await refused(store, { kind: "task.fulfill", id: "p1", version: 1, action: { kind: "promise.settle", id: "p1", state: "resolved", value: { data: "eA==" } } }, 409, T0 + 2);
    expect(await storedPromise(store, "p1", T0 + 2)).toMatchObject({ state: "rejected_canceled", value: {} });
  });

  promiseClause("promise.settle: a suspended awaiter resumes — pending at the same version, resumes + 1, retry timer, execute at its version — and the callback is gone", async () => {
    const store = await ctx.store();
    const { retryTimeoutMs } = store.capabilities.settings;
    await parkedOn(store, "parent", "child");
    expect(await queued(store)).toEqual([]);
    await settle(store, "child", "resolved", { data: "eQ==" }, T0 + 10);
    expect(await getTask(store, "parent", T0 + 10)).toEqual({ id: "parent", state: "pending", version: 1, resumes: 1 });
    expect(await taskTimer(store, "parent", T0 + 10)).toBe(T0 + 10 + retryTimeoutMs);
    expect(await queued(store, T0 + 10)).toEqual([execute("parent", 1)]);
    expect((await store.snapshot(T0 + 10)).callbacks).toEqual([]);
  });

  promiseClause("promise.settle: an acquired awaiter gets a resume mark and stays acquired, with no execute", async () => {
    const store = await ctx.store();
    await holdTask(store, "parent");
    await fencedCreate(store, "parent", 1, createRequest("child"));
    await ok(store, { kind: "promise.register_callback", awaited: "child", awaiter: "parent" });
    await settle(store, "child", "resolved", undefined, T0 + 1);
    expect(await getTask(store, "parent", T0 + 1)).toEqual({ id: "parent", state: "acquired", version: 1, resumes: 1, pid: "w1", ttl: TTL });
    expect(await queued(store, T0 + 1)).toEqual([]);
  });

  promiseClause("promise.settle: every listener gets one unblock carrying the settled record, and the listeners are gone", async () => {
    const store = await ctx.store();
    await createPromise(store, "p1");
    await ok(store, { kind: "promise.register_listener", awaited: "p1", address: LISTENER });
    await ok(store, { kind: "promise.register_listener", awaited: "p1", address: "poll://uni@clients/c2" });
    const settled = await settle(store, "p1", "resolved", { data: "dg==" }, T0 + 1);
    expect(await queued(store, T0 + 1)).toEqual([unblock("p1"), unblock("p1", "poll://uni@clients/c2")]);
    expect((await store.snapshot(T0 + 1)).listeners).toEqual([]);
    const taken = await store.takeOutbox({ now: T0 + 1, max: 10, leaseMs: MINUTE });
    expect(taken.map((d) => d.message)).toEqual([
      { kind: "unblock", data: { promise: settled } },
      { kind: "unblock", data: { promise: settled } },
    ]);
  });

  promiseClause("promise.settle: settling a task's promise removes the task's own callbacks; the promises it awaited keep no edge to it", async () => {
    const store = await ctx.store();
    await parkedOn(store, "parent", "child");
    expect((await store.snapshot(T0)).callbacks).toEqual([{ awaited: "child", awaiter: "parent" }]);
    await settle(store, "parent", "rejected_canceled", undefined, T0 + 1);
    expect((await store.snapshot(T0 + 1)).callbacks).toEqual([]);
    // The child settling later wakes nothing.
    await settle(store, "child", "resolved", undefined, T0 + 2);
    expect(await storedTask(store, "parent", T0 + 2)).toMatchObject({ state: "fulfilled" });
    expect(await queued(store, T0 + 2)).toEqual([]);
  });

  promiseClause("promise.settle: a task suspended on two promises resumes on the first; the second, settling while it is acquired again, gives a resume mark", async () => {
    const store = await ctx.store();
    await holdTask(store, "parent");
    await fencedCreate(store, "parent", 1, createRequest("a"));
    await fencedCreate(store, "parent", 1, createRequest("b"));
    expect(await suspend(store, "parent", 1, ["a", "b"])).toEqual({ status: 200, data: {} });
    await settle(store, "a", "resolved", undefined, T0 + 1);
    expect(await getTask(store, "parent", T0 + 1)).toMatchObject({ state: "pending", version: 1, resumes: 1 });
    await acquire(store, "parent", { version: 1, now: T0 + 2 });
    await settle(store, "b", "resolved", undefined, T0 + 3);
    expect(await getTask(store, "parent", T0 + 3)).toMatchObject({ state: "acquired", version: 2, resumes: 1 });
    expect(await queued(store, T0 + 3)).toEqual([]);
  });

  promiseClause("promise.settle: several awaiters of one promise all resume in the same settlement", async () => {
    const store = await ctx.store();
    for (const parent of ["p1", "p2", "p3"]) await holdTask(store, parent);
    await createPromise(store, "shared");
    for (const parent of ["p1", "p2", "p3"]) expect((await suspend(store, parent, 1, ["shared"])).status).toBe(200);
    await settle(store, "shared", "resolved", undefined, T0 + 1);
    expect(await queued(store, T0 + 1)).toEqual([execute("p1", 1), execute("p2", 1), execute("p3", 1)]);
  });

  promiseClause(
    "promise.settle: an awaiter whose own deadline has passed is not dispatched again: it reads fulfilled and no execute is queued for it",
    async () => {
      const store = await ctx.store();
      await holdTask(store, "parent", { timeoutAt: T0 + 10 });
      await fencedCreate(store, "parent", 1, createRequest("child"));
      expect((await suspend(store, "parent", 1, ["child"])).status).toBe(200);
      await settle(store, "child", "resolved", undefined, T0 + 20);
      expect(await queued(store, T0 + 20)).toEqual([]);
      expect(await storedTask(store, "parent", T0 + 20)).toMatchObject({ state: "fulfilled" });
    },
  );
}
