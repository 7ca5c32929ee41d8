import { expect } from "vitest";
import { promiseClause } from "../clause.js";
import {
  T0, createPromise, createRequest, createTargeted, execute, expectUnchanged, fencedCreate, getTask, holdTask, ok, queued,
  refused, settle, storedTask, suspend, taskTimer,
} from "../fixtures.js";
import type { PromiseSuiteContext } from "../suite-context.js";

// task.halt and task.continue: an operator stops a task (it keeps its version, loses its timer
// and waiting execute) and lets it go on (pending again, dispatched at the same version).

export function haltClauses(ctx: PromiseSuiteContext): void {
  promiseClause("task.halt: a pending task is halted — same version, no timer, its waiting execute dropped", async () => {
    const store = await ctx.store();
    await createTargeted(store, "p1");
    expect(await ok(store, { kind: "task.halt", id: "p1" }, T0 + 1)).toEqual({});
    expect(await storedTask(store, "p1", T0 + 1)).toEqual({ id: "p1", state: "halted", version: 0, resumes: 0 });
    expect(await taskTimer(store, "p1", T0 + 1)).toBeUndefined();
    expect(await queued(store, T0 + 1)).toEqual([]);
  });

  promiseClause("task.halt: an acquired task is halted — lease, pid and ttl gone; the holder's writes then answer 409", async () => {
    const store = await ctx.store();
    await holdTask(store, "p1");
    await ok(store, { kind: "task.halt", id: "p1" }, T0 + 1);
    expect(await getTask(store, "p1", T0 + 1)).toEqual({ id: "p1", state: "halted", version: 1, resumes: 0 });
    await refused(store, { kind: "task.fulfill", id: "p1", version: 1, action: { kind: "promise.settle", id: "p1", state: "resolved" } }, 409, T0 + 2);
    await refused(store, { kind: "task.fence", id: "p1", version: 1, action: createRequest("p1:1") }, 409, T0 + 2);
  });

  promiseClause("task.halt: halting a halted task answers 200 and writes nothing; a fulfilled task answers 409; an unknown one 404", async () => {
    const store = await ctx.store();
    await createTargeted(store, "halted");
    await ok(store, { kind: "task.halt", id: "halted" });
    await createTargeted(store, "done");
    await settle(store, "done");
    await expectUnchanged(store, async () => {
      expect(await ok(store, { kind: "task.halt", id: "halted" }, T0 + 1)).toEqual({});
      await refused(store, { kind: "task.halt", id: "done" }, 409, T0 + 1);
      await refused(store, { kind: "task.halt", id: "ghost" }, 404, T0 + 1);
    });
  });

  promiseClause("task.halt: a task whose promise is past its deadline answers 409 (it reads fulfilled)", async () => {
    const store = await ctx.store();
    await createTargeted(store, "p1", { timeoutAt: T0 + 10 });
    await refused(store, { kind: "task.halt", id: "p1" }, 409, T0 + 10);
    expect(await storedTask(store, "p1", T0 + 10)).toMatchObject({ state: "fulfilled" });
  });

  promiseClause("task.continue: a halted task is pending again at the same version, with a retry timer and an execute queued now", async () => {
    const store = await ctx.store();
    const { retryTimeoutMs } = store.capabilities.settings;
    await holdTask(store, "p1");
    await ok(store, { kind: "task.halt", id: "p1" }, T0 + 1);
    expect(await ok(store, { kind: "task.continue", id: "p1" }, T0 + 2)).toEqual({});
    expect(await storedTask(store, "p1", T0 + 2)).toEqual({ id: "p1", state: "pending", version: 1, resumes: 0 });
    expect(await taskTimer(store, "p1", T0 + 2)).toBe(T0 + 2 + retryTimeoutMs);
    expect(await queued(store, T0 + 2)).toEqual([execute("p1", 1)]);
  });

  promiseClause("task.continue: a task that is not halted answers 409 and writes nothing; an unknown one 404", async () => {
    const store = await ctx.store();
    await createTargeted(store, "pending");
    await holdTask(store, "acquired");
    await expectUnchanged(store, async () => {
      await refused(store, { kind: "task.continue", id: "pending" }, 409);
      await refused(store, { kind: "task.continue", id: "acquired" }, 409);
      await refused(store, { kind: "task.continue", id: "ghost" }, 404);
    });
  });

  promiseClause("task.halt: a halted task whose awaited promise settles stays halted (a resume mark, no execute); continue dispatches it", async () => {
    const store = await ctx.store();
    await holdTask(store, "root");
    await fencedCreate(store, "root", 1, createRequest("root:1"));
    expect((await suspend(store, "root", 1, ["root:1"])).status).toBe(200);
    await ok(store, { kind: "task.halt", id: "root" }, T0 + 1);
    await settle(store, "root:1", "resolved", undefined, T0 + 2);
    expect(await storedTask(store, "root", T0 + 2)).toMatchObject({ state: "halted", resumes: 1 });
    expect(await queued(store, T0 + 2)).toEqual([]);
    await ok(store, { kind: "task.continue", id: "root" }, T0 + 3);
    expect(await queued(store, T0 + 3)).toEqual([execute("root", 1)]);
  });

  promiseClause("task.halt: the timeout scan never dispatches a halted task", async () => {
    const store = await ctx.store();
    await createTargeted(store, "p1");
    await createPromise(store, "p2");
    await ok(store, { kind: "task.halt", id: "p1" });
    expect(await store.expireTimers({ now: T0 + 10 * store.capabilities.settings.retryTimeoutMs, max: 10 })).toEqual({ promisesTimedOut: 0, tasksRetried: 0, leasesExpired: 0, more: false });
    expect(await queued(store, T0 + 1)).toEqual([]);
  });
}
