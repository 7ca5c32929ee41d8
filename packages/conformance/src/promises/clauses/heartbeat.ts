import { expect } from "vitest";
import { machineDefectClause, promiseClause } from "../clause.js";
import { T0, TTL, acquire, createPromise, createTargeted, expectUnchanged, holdTask, ok, storedTask, taskTimer } from "../fixtures.js";
import type { PromiseSuiteContext } from "../suite-context.js";

// task.heartbeat: one request renews every lease a process holds (the SDK sends all of a
// worker's tasks at once, of any origin). It always answers 200; what it cannot renew it leaves
// alone, silently — the worker learns of a lost task on its next fenced write.

export function heartbeatClauses(ctx: PromiseSuiteContext): void {
  promiseClause("task.heartbeat: renews each lease the pid holds at the given version to now + its stored ttl, and answers 200 {}", async () => {
    const store = await ctx.store();
    await createTargeted(store, "a");
    await acquire(store, "a", { ttl: TTL });
    await createTargeted(store, "b");
    await acquire(store, "b", { ttl: 3 * TTL });
    expect(await ok(store, { kind: "task.heartbeat", pid: "w1", tasks: [{ id: "a", version: 1 }, { id: "b", version: 1 }] }, T0 + 30_000)).toEqual({});
    expect(await taskTimer(store, "a", T0 + 30_000)).toBe(T0 + 30_000 + TTL);
    expect(await taskTimer(store, "b", T0 + 30_000)).toBe(T0 + 30_000 + 3 * TTL);
  });

  promiseClause("task.heartbeat: tasks of several origins in one heartbeat are all renewed", async () => {
    const store = await ctx.store();
    for (const id of ["alpha", "alpha:1", "beta:2.1", "gamma"]) await holdTask(store, id);
    await ok(store, { kind: "task.heartbeat", pid: "w1", tasks: ["alpha", "alpha:1", "beta:2.1", "gamma"].map((id) => ({ id, version: 1 })) }, T0 + 10);
    for (const id of ["alpha", "alpha:1", "beta:2.1", "gamma"]) expect(await taskTimer(store, id, T0 + 10), id).toBe(T0 + 10 + TTL);
  });

  promiseClause("task.heartbeat: a stale version is silently not renewed and nothing is written", async () => {
    const store = await ctx.store();
    await holdTask(store, "a");
    await expectUnchanged(store, async () => {
      expect(await ok(store, { kind: "task.heartbeat", pid: "w1", tasks: [{ id: "a", version: 0 }, { id: "a", version: 2 }] }, T0 + 10)).toEqual({});
    });
    expect(await taskTimer(store, "a")).toBe(T0 + TTL);
  });

  promiseClause("task.heartbeat: another pid renews nothing", async () => {
    const store = await ctx.store();
    await holdTask(store, "a");
    await expectUnchanged(store, () => ok(store, { kind: "task.heartbeat", pid: "w2", tasks: [{ id: "a", version: 1 }] }, T0 + 10));
  });

  promiseClause("task.heartbeat: unknown, untargeted, pending, suspended and fulfilled tasks are ignored; the live ones in the same request are renewed", async () => {
    const store = await ctx.store();
    await holdTask(store, "live");
    await createTargeted(store, "pending");
    await createPromise(store, "plain");
    await holdTask(store, "done");
    await ok(store, { kind: "task.fulfill", id: "done", version: 1, action: { kind: "promise.settle", id: "done", state: "resolved" } });
    await ok(store, {
      kind: "task.heartbeat",
      pid: "w1",
      tasks: [{ id: "ghost", version: 1 }, { id: "pending", version: 0 }, { id: "plain", version: 0 }, { id: "done", version: 1 }, { id: "live", version: 1 }],
    }, T0 + 10);
    expect(await taskTimer(store, "live", T0 + 10)).toBe(T0 + 10 + TTL);
    expect(await storedTask(store, "pending", T0 + 10)).toMatchObject({ state: "pending", version: 0 });
    expect(await storedTask(store, "done", T0 + 10)).toMatchObject({ state: "fulfilled" });
  });

  promiseClause("task.heartbeat: an empty heartbeat answers 200 and writes nothing", async () => {
    const store = await ctx.store();
    await holdTask(store, "a");
    await expectUnchanged(store, async () => expect(await ok(store, { kind: "task.heartbeat", pid: "w1", tasks: [] })).toEqual({}));
  });

  promiseClause("task.heartbeat: a renewed lease outlives its old end in the timeout scan", async () => {
    const store = await ctx.store();
    await holdTask(store, "a");
    await ok(store, { kind: "task.heartbeat", pid: "w1", tasks: [{ id: "a", version: 1 }] }, T0 + TTL - 1);
    expect(await store.expireTimers({ now: T0 + TTL, max: 10 })).toMatchObject({ leasesExpired: 0 });
    expect(await storedTask(store, "a", T0 + TTL)).toMatchObject({ state: "acquired", pid: "w1" });
    expect(await store.expireTimers({ now: T0 + 2 * TTL - 1, max: 10 })).toMatchObject({ leasesExpired: 1 });
  });

  promiseClause(
    "task.heartbeat: a lease is over at exactly its end — a heartbeat then renews nothing: the task is pending again at its version, dispatched, whenever the scan runs",
    async () => {
      const store = await ctx.store();
      await holdTask(store, "a");
      await ok(store, { kind: "task.heartbeat", pid: "w1", tasks: [{ id: "a", version: 1 }] }, T0 + TTL);
      const task = await storedTask(store, "a", T0 + TTL);
      expect(task).toMatchObject({ state: "pending", version: 1 });
      expect(task).not.toHaveProperty("pid");
      expect((await store.snapshot(T0 + TTL)).outbox).toMatchObject([{ kind: "execute", id: "a", version: 1 }]);
      // Nothing is left for the scan: the lease ended when it was touched.
      expect(await store.expireTimers({ now: T0 + TTL + 1, max: 10 })).toMatchObject({ leasesExpired: 0 });
    },
  );
}
