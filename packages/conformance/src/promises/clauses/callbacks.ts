import { expect } from "vitest";
import { machineDefectClause, promiseClause } from "../clause.js";
import {
  DEADLINE, LISTENER, T0, TTL, createPromise, createRequest, createTargeted, execute, expectInvalid, expectUnchanged,
  fencedCreate, getTask, holdTask, ok, queued, refused, settle, storedTask, suspend, unblock,
} from "../fixtures.js";
import type { PromiseSuiteContext } from "../suite-context.js";

// promise.register_callback (a task waits on a promise) and promise.register_listener (a client
// waits on a promise at an address).

export function callbackClauses(ctx: PromiseSuiteContext): void {
  promiseClause("register_callback: both pending — the edge is stored and the answer is the awaited promise", async () => {
    const store = await ctx.store();
    await holdTask(store, "root");
    const child = await createPromise(store, "root:1");
    const answer = await ok(store, { kind: "promise.register_callback", awaited: "root:1", awaiter: "root" });
    expect(answer.promise).toEqual(child);
    expect((await store.snapshot(T0)).callbacks).toEqual([{ awaited: "root:1", awaiter: "root" }]);
  });

  promiseClause("register_callback: a repeat stores no second edge, and the settlement resumes the awaiter once", async () => {
    const store = await ctx.store();
    await holdTask(store, "root");
    await createPromise(store, "root:1");
    for (let i = 0; i < 3; i++) await ok(store, { kind: "promise.register_callback", awaited: "root:1", awaiter: "root" });
    expect((await store.snapshot(T0)).callbacks).toHaveLength(1);
    await settle(store, "root:1", "resolved", undefined, T0 + 1);
    expect(await getTask(store, "root", T0 + 1)).toMatchObject({ resumes: 1 });
  });

  promiseClause("register_callback: a missing awaited promise answers 404 and writes nothing", async () => {
    const store = await ctx.store();
    await holdTask(store, "root");
    await expectUnchanged(store, () => refused(store, { kind: "promise.register_callback", awaited: "root:9", awaiter: "root" }, 404));
  });

  promiseClause("register_callback: a missing awaiter, or an awaiter without a task, answers 422 and writes nothing", async () => {
    const store = await ctx.store();
    await createPromise(store, "root:1");
    await createPromise(store, "root");
    await expectUnchanged(store, async () => {
      await refused(store, { kind: "promise.register_callback", awaited: "root:1", awaiter: "ghost" }, 422);
      await refused(store, { kind: "promise.register_callback", awaited: "root:1", awaiter: "root" }, 422);
    });
  });

  promiseClause("register_callback: an awaited promise already settled wakes a suspended awaiter at once, answers the settled record and stores no edge", async () => {
    const store = await ctx.store();
    await holdTask(store, "root");
    await fencedCreate(store, "root", 1, createRequest("root:1"));
    await fencedCreate(store, "root", 1, createRequest("root:2"));
    expect((await suspend(store, "root", 1, ["root:1"])).status).toBe(200);
    await settle(store, "root:2", "resolved", undefined, T0 + 1);
    const answer = await ok(store, { kind: "promise.register_callback", awaited: "root:2", awaiter: "root" }, T0 + 2);
    expect(answer.promise).toMatchObject({ id: "root:2", state: "resolved" });
    expect(await getTask(store, "root", T0 + 2)).toMatchObject({ state: "pending", version: 1, resumes: 1 });
    expect(await queued(store, T0 + 2)).toEqual([execute("root", 1)]);
    expect((await store.snapshot(T0 + 2)).callbacks).toEqual([{ awaited: "root:1", awaiter: "root" }]);
  });

  promiseClause("register_callback: an awaited promise already settled is answered settled; an acquired awaiter gets no mark, even when repeated", async () => {
    const store = await ctx.store();
    await holdTask(store, "root");
    await createPromise(store, "root:1");
    await settle(store, "root:1", "rejected", undefined, T0 + 1);
    for (const now of [T0 + 2, T0 + 3]) {
      const answer = await ok(store, { kind: "promise.register_callback", awaited: "root:1", awaiter: "root" }, now);
      expect(answer.promise).toMatchObject({ state: "rejected" });
    }
    expect(await getTask(store, "root", T0 + 3)).toEqual({ id: "root", state: "acquired", version: 1, resumes: 0, pid: "w1", ttl: TTL });
    expect((await store.snapshot(T0 + 3)).callbacks).toEqual([]);
  });

  promiseClause("register_callback: an awaited promise past its deadline is timed out by the registration (answered settled, no edge)", async () => {
    const store = await ctx.store();
    await holdTask(store, "root");
    await createPromise(store, "root:1", { timeoutAt: T0 + 10 });
    const answer = await ok(store, { kind: "promise.register_callback", awaited: "root:1", awaiter: "root" }, T0 + 10);
    expect(answer.promise).toMatchObject({ state: "rejected_timedout", settledAt: T0 + 10 });
    expect((await store.snapshot(T0 + 10)).callbacks).toEqual([]);
    expect(await getTask(store, "root", T0 + 10)).toMatchObject({ state: "acquired", resumes: 0 });
  });

  promiseClause("register_callback: an awaiter already settled gains no edge", async () => {
    const store = await ctx.store();
    await createTargeted(store, "root");
    await settle(store, "root", "resolved", undefined, T0 + 1);
    await createPromise(store, "root:1");
    await ok(store, { kind: "promise.register_callback", awaited: "root:1", awaiter: "root" }, T0 + 2);
    expect((await store.snapshot(T0 + 2)).callbacks).toEqual([]);
  });

  promiseClause("register_callback: a promise cannot await itself (InvalidInputError naming awaiter)", async () => {
    const store = await ctx.store();
    await holdTask(store, "root");
    await expectUnchanged(store, () => expectInvalid(() => store.handle({ kind: "promise.register_callback", awaited: "root", awaiter: "root" }, T0), "awaiter"));
  });

  // Not partitioned by origin (see the suspend clause): a callback across origins is stored.
  promiseClause("register_callback: awaited and awaiter of different origins (text before the first ':') are joined like any other", async () => {
    const store = await ctx.store();
    await holdTask(store, "root");
    await createPromise(store, "other:1");
    expect((await store.handle({ kind: "promise.register_callback", awaited: "other:1", awaiter: "root" }, T0)).status).toBe(200);
    expect((await store.snapshot(T0)).callbacks).toEqual([{ awaited: "other:1", awaiter: "root" }]);
  });

  promiseClause("register_listener: on a pending promise the listener is stored and the answer is the promise", async () => {
    const store = await ctx.store();
    const created = await createPromise(store, "p1");
    expect((await ok(store, { kind: "promise.register_listener", awaited: "p1", address: LISTENER })).promise).toEqual(created);
    expect((await store.snapshot(T0)).listeners).toEqual([{ promiseId: "p1", address: LISTENER }]);
  });

  promiseClause("register_listener: an unknown promise answers 404 and writes nothing", async () => {
    const store = await ctx.store();
    await expectUnchanged(store, () => refused(store, { kind: "promise.register_listener", awaited: "ghost", address: LISTENER }, 404));
  });

  promiseClause("register_listener: a settled promise gains no listener; the answer is the settled record and no unblock is queued", async () => {
    const store = await ctx.store();
    await createPromise(store, "p1");
    await settle(store, "p1", "resolved", { data: "eA==" }, T0 + 1);
    await expectUnchanged(
      store,
      async () => {
        const answer = await ok(store, { kind: "promise.register_listener", awaited: "p1", address: LISTENER }, T0 + 2);
        expect(answer.promise).toMatchObject({ state: "resolved", value: { data: "eA==" } });
      },
      T0 + 2,
    );
  });

  promiseClause("register_listener: the same address twice is one listener and one unblock", async () => {
    const store = await ctx.store();
    await createPromise(store, "p1");
    await ok(store, { kind: "promise.register_listener", awaited: "p1", address: LISTENER });
    await ok(store, { kind: "promise.register_listener", awaited: "p1", address: LISTENER }, T0 + 1);
    expect((await store.snapshot(T0 + 1)).listeners).toHaveLength(1);
    await settle(store, "p1", "resolved", undefined, T0 + 2);
    expect(await queued(store, T0 + 2)).toEqual([unblock("p1")]);
  });

  promiseClause("register_listener: on a promise past its deadline it answers the timed-out record, stores nothing and unblocks the earlier listeners", async () => {
    const store = await ctx.store();
    await createPromise(store, "p1");
    await ok(store, { kind: "promise.register_listener", awaited: "p1", address: LISTENER });
    const answer = await ok(store, { kind: "promise.register_listener", awaited: "p1", address: "poll://uni@clients/late" }, DEADLINE);
    expect(answer.promise).toMatchObject({ state: "rejected_timedout", settledAt: DEADLINE });
    const snapshot = await store.snapshot(DEADLINE);
    expect(snapshot.listeners).toEqual([]);
    expect(await queued(store, DEADLINE)).toEqual([unblock("p1")]);
  });

  promiseClause("register_listener: a listener on a targeted promise is unblocked when its task is fulfilled", async () => {
    const store = await ctx.store();
    await holdTask(store, "p1");
    await ok(store, { kind: "promise.register_listener", awaited: "p1", address: LISTENER });
    await ok(store, { kind: "task.fulfill", id: "p1", version: 1, action: { kind: "promise.settle", id: "p1", state: "resolved" } }, T0 + 1);
    expect(await queued(store, T0 + 1)).toEqual([unblock("p1")]);
    expect(await storedTask(store, "p1", T0 + 1)).toMatchObject({ state: "fulfilled" });
  });
}
