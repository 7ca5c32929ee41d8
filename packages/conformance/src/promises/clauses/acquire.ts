import { expect } from "vitest";
import { promiseClause } from "../clause.js";
import {
  T0, TTL, acquire, createPromise, createTargeted, expectUnchanged, holdTask, ok, queued, refused, settle, storedPromise,
  storedTask, suspend, taskTimer,
} from "../fixtures.js";
import type { PromiseSuiteContext } from "../suite-context.js";

// task.acquire and task.release: a worker takes a pending task at the version it was sent (the
// version rises: the new fence) and may hand it back (same version, dispatched again).

export function acquireClauses(ctx: PromiseSuiteContext): void {
  promiseClause("task.acquire: a pending task at its version is acquired — version + 1, pid, ttl, lease until now + ttl, its execute dropped", async () => {
    const store = await ctx.store();
    const promise = await createTargeted(store, "p1", { param: { data: "YQ==" } });
    const answer = await acquire(store, "p1", { pid: "w7", ttl: 5 * TTL, now: T0 + 2 });
    expect(answer).toEqual({ task: { id: "p1", state: "acquired", version: 1, resumes: 0, pid: "w7", ttl: 5 * TTL }, promise, preload: [] });
    expect(await taskTimer(store, "p1", T0 + 2)).toBe(T0 + 2 + 5 * TTL);
    expect(await queued(store, T0 + 2)).toEqual([]);
  });

  promiseClause("task.acquire: a stale version answers 409 and writes nothing", async () => {
    const store = await ctx.store();
    await createTargeted(store, "p1");
    await expectUnchanged(store, async () => {
      await refused(store, { kind: "task.acquire", id: "p1", version: 1, pid: "w1", ttl: TTL }, 409);
      await refused(store, { kind: "task.acquire", id: "p1", version: 7, pid: "w1", ttl: TTL }, 409);
    });
  });

  promiseClause("task.acquire: a task that is not pending (acquired, suspended, halted, fulfilled) answers 409 and writes nothing", async () => {
    const store = await ctx.store();
    await holdTask(store, "acquired");
    await holdTask(store, "suspended");
    await createPromise(store, "dep");
    expect((await suspend(store, "suspended", 1, ["dep"])).status).toBe(200);
    await createTargeted(store, "halted");
    await ok(store, { kind: "task.halt", id: "halted" });
    await createTargeted(store, "fulfilled");
    await settle(store, "fulfilled");
    await expectUnchanged(store, async () => {
      for (const [id, version] of [["acquired", 1], ["suspended", 1], ["halted", 0], ["fulfilled", 0]] as const) {
        await refused(store, { kind: "task.acquire", id, version, pid: "w2", ttl: TTL }, 409);
      }
    });
  });

  promiseClause("task.acquire: an unknown task, or a promise without a task, answers 404", async () => {
    const store = await ctx.store();
    await createPromise(store, "plain");
    await refused(store, { kind: "task.acquire", id: "ghost", version: 0, pid: "w1", ttl: TTL }, 404);
    await refused(store, { kind: "task.acquire", id: "plain", version: 0, pid: "w1", ttl: TTL }, 404);
  });

  promiseClause("task.acquire: a task whose promise is past its deadline answers 409 and the timeout is made permanent (task fulfilled)", async () => {
    const store = await ctx.store();
    await createTargeted(store, "p1", { timeoutAt: T0 + 10 });
    await refused(store, { kind: "task.acquire", id: "p1", version: 0, pid: "w1", ttl: TTL }, 409, T0 + 10);
    expect(await storedPromise(store, "p1", T0 + 10)).toMatchObject({ state: "rejected_timedout", settledAt: T0 + 10 });
    expect(await storedTask(store, "p1", T0 + 10)).toMatchObject({ state: "fulfilled", version: 0 });
    expect(await queued(store, T0 + 10)).toEqual([]);
  });

  promiseClause("task.acquire: the preload is the other promises of the branch, by id, as of now (timed-out view), without other branches", async () => {
    const store = await ctx.store();
    const branch = { "resonate:branch": "root" };
    await createTargeted(store, "root", { tags: branch });
    await createPromise(store, "root:2", { tags: branch });
    await createPromise(store, "root:1", { tags: branch, timeoutAt: T0 + 5 });
    await createPromise(store, "root:3", { tags: branch });
    await settle(store, "root:3", "resolved", { data: "Mw==" }, T0 + 1);
    await createPromise(store, "other:1", { tags: { "resonate:branch": "other" } });
    const { preload } = await acquire(store, "root", { now: T0 + 6 });
    expect(preload.map((p) => [p.id, p.state])).toEqual([
      ["root:1", "rejected_timedout"],
      ["root:2", "pending"],
      ["root:3", "resolved"],
    ]);
    expect(preload[0]).toMatchObject({ settledAt: T0 + 5 });
    expect(preload[2]).toMatchObject({ value: { data: "Mw==" } });
  });

  promiseClause("task.acquire: the preload holds at most settings.preloadLimit promises", async () => {
    const store = await ctx.store({ settings: { preloadLimit: 2 } });
    expect(store.capabilities.settings.preloadLimit).toBe(2);
    const branch = { "resonate:branch": "root" };
    await createTargeted(store, "root", { tags: branch });
    for (const id of ["root:1", "root:2", "root:3"]) await createPromise(store, id, { tags: branch });
    expect((await acquire(store, "root")).preload.map((p) => p.id)).toEqual(["root:1", "root:2"]);
  });

  promiseClause("task.acquire: a promise without a branch tag preloads nothing", async () => {
    const store = await ctx.store();
    await createTargeted(store, "root");
    await createPromise(store, "root:1", { tags: { "resonate:branch": "root" } });
    expect((await acquire(store, "root")).preload).toEqual([]);
  });

  promiseClause("task.release: an acquired task at its version is pending again at the same version — no pid or ttl, retry timer, execute queued now", async () => {
    const store = await ctx.store();
    const { retryTimeoutMs } = store.capabilities.settings;
    await holdTask(store, "p1");
    expect(await ok(store, { kind: "task.release", id: "p1", version: 1 }, T0 + 5)).toEqual({});
    expect(await storedTask(store, "p1", T0 + 5)).toEqual({ id: "p1", state: "pending", version: 1, resumes: 0 });
    expect(await taskTimer(store, "p1", T0 + 5)).toBe(T0 + 5 + retryTimeoutMs);
    const snapshot = await store.snapshot(T0 + 5);
    expect(snapshot.outbox).toMatchObject([{ kind: "execute", id: "p1", version: 1, availableAt: T0 + 5 }]);
  });

  promiseClause("task.release: a stale version or a task not acquired answers 409 and writes nothing; an unknown task 404", async () => {
    const store = await ctx.store();
    await holdTask(store, "held");
    await createTargeted(store, "pending");
    await expectUnchanged(store, async () => {
      await refused(store, { kind: "task.release", id: "held", version: 0 }, 409);
      await refused(store, { kind: "task.release", id: "held", version: 2 }, 409);
      await refused(store, { kind: "task.release", id: "pending", version: 0 }, 409);
      await refused(store, { kind: "task.release", id: "ghost", version: 0 }, 404);
    });
  });

  promiseClause("task.release: a released task is acquired again at the same version, and that acquire raises it", async () => {
    const store = await ctx.store();
    await holdTask(store, "p1");
    await ok(store, { kind: "task.release", id: "p1", version: 1 }, T0 + 1);
    await refused(store, { kind: "task.acquire", id: "p1", version: 2, pid: "w2", ttl: TTL }, 409, T0 + 2);
    expect((await acquire(store, "p1", { version: 1, pid: "w2", now: T0 + 2 })).task).toMatchObject({ version: 2, pid: "w2" });
    // The first holder's version no longer writes.
    await refused(store, { kind: "task.release", id: "p1", version: 1 }, 409, T0 + 3);
  });

  promiseClause("task.release: release after the promise's deadline answers 409 and the task reads fulfilled", async () => {
    const store = await ctx.store();
    await holdTask(store, "p1", { timeoutAt: T0 + 100 });
    await refused(store, { kind: "task.release", id: "p1", version: 1 }, 409, T0 + 100);
    expect(await storedTask(store, "p1", T0 + 100)).toMatchObject({ state: "fulfilled" });
    expect(await queued(store, T0 + 100)).toEqual([]);
  });
}
