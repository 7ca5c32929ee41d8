import type { TaskFulfillRequest } from "@belay/contract";
import { expect } from "vitest";
import { promiseClause } from "../clause.js";
import {
  LISTENER, T0, TTL, createPromise, createRequest, createTargeted, execute, expectUnchanged, fencedCreate, holdTask, ok, queued,
  refused, storedPromise, storedTask, suspend, taskTimer, unblock,
} from "../fixtures.js";
import type { PromiseSuiteContext } from "../suite-context.js";

// task.fulfill: the holder settles its own promise and completes the task in one step.

function fulfill(id: string, version: number, state: TaskFulfillRequest["action"]["state"] = "resolved", data = "ZG9uZQ=="): TaskFulfillRequest {
  return { kind: "task.fulfill", id, version, action: { kind: "promise.settle", id, state, value: { data } } };
}

export function fulfillClauses(ctx: PromiseSuiteContext): void {
  promiseClause("task.fulfill: settles the promise and completes the task together — value, settledAt = now, task fulfilled, no timer, no message", async () => {
    const store = await ctx.store();
    await holdTask(store, "p1");
    const answer = await ok(store, fulfill("p1", 1), T0 + 9);
    expect(answer.promise).toMatchObject({ id: "p1", state: "resolved", value: { data: "ZG9uZQ==" }, settledAt: T0 + 9 });
    const snapshot = await store.snapshot(T0 + 9);
    expect(snapshot.promises).toEqual([answer.promise]);
    expect(snapshot.tasks).toEqual([{ id: "p1", state: "fulfilled", version: 1, resumes: 0 }]);
    expect(snapshot.timers).toEqual({ promises: [], tasks: [] });
    expect(snapshot.outbox).toEqual([]);
  });

  promiseClause("task.fulfill: a rejection is stored as rejected with its value", async () => {
    const store = await ctx.store();
    await holdTask(store, "p1");
    expect((await ok(store, fulfill("p1", 1, "rejected", "ZXJy"), T0 + 1)).promise).toMatchObject({ state: "rejected", value: { data: "ZXJy" } });
  });

  promiseClause("task.fulfill: a stale version answers 409 and writes nothing (the promise stays pending)", async () => {
    const store = await ctx.store();
    await holdTask(store, "p1");
    await expectUnchanged(store, async () => {
      await refused(store, fulfill("p1", 0), 409);
      await refused(store, fulfill("p1", 2), 409);
    });
    expect(await storedPromise(store, "p1")).toMatchObject({ state: "pending" });
  });

  promiseClause("task.fulfill: a task that is not acquired answers 409 and writes nothing; an unknown task 404", async () => {
    const store = await ctx.store();
    await createTargeted(store, "pending");
    await holdTask(store, "done");
    await ok(store, fulfill("done", 1));
    await expectUnchanged(store, async () => {
      await refused(store, fulfill("pending", 0), 409);
      await refused(store, fulfill("done", 1, "rejected"), 409);
      await refused(store, fulfill("ghost", 1), 404);
    });
    expect(await storedPromise(store, "done")).toMatchObject({ state: "resolved" });
  });

  promiseClause("task.fulfill: after the promise's deadline it answers 409 and the promise stays timed out", async () => {
    const store = await ctx.store();
    await holdTask(store, "p1", { timeoutAt: T0 + 100 });
    await refused(store, fulfill("p1", 1), 409, T0 + 100);
    expect(await storedPromise(store, "p1", T0 + 100)).toMatchObject({ state: "rejected_timedout", settledAt: T0 + 100 });
  });

  promiseClause("task.fulfill: the settlement chain commits with it — the suspended parent resumes, listeners are unblocked, the fulfilled task's own callbacks go", async () => {
    const store = await ctx.store();
    await holdTask(store, "root");
    await fencedCreate(store, "root", 1, createRequest("root:1", { tags: { "resonate:target": "poll://any@workers" } }));
    expect((await suspend(store, "root", 1, ["root:1"])).status).toBe(200);
    await ok(store, { kind: "task.acquire", id: "root:1", version: 0, pid: "w2", ttl: TTL }, T0 + 1);
    await createPromise(store, "root:1.1");
    await ok(store, { kind: "promise.register_callback", awaited: "root:1.1", awaiter: "root:1" }, T0 + 1);
    await ok(store, { kind: "promise.register_listener", awaited: "root:1", address: LISTENER }, T0 + 1);
    await ok(store, fulfill("root:1", 1), T0 + 2);
    const snapshot = await store.snapshot(T0 + 2);
    expect(snapshot.callbacks).toEqual([]);
    expect(snapshot.listeners).toEqual([]);
    expect(await queued(store, T0 + 2)).toEqual([execute("root", 1), unblock("root:1")]);
    expect(await storedTask(store, "root", T0 + 2)).toEqual({ id: "root", state: "pending", version: 1, resumes: 1 });
    expect(await storedTask(store, "root:1", T0 + 2)).toMatchObject({ state: "fulfilled" });
    expect(await taskTimer(store, "root:1", T0 + 2)).toBeUndefined();
  });
}
