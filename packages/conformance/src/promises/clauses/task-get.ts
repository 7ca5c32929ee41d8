import { expect } from "vitest";
import { promiseClause } from "../clause.js";
import { T0, TTL, createPromise, createTargeted, expectUnchanged, getTask, holdTask, refused, storedPromise } from "../fixtures.js";
import type { PromiseSuiteContext } from "../suite-context.js";

// task.get: a task as a client sees it at now. `resumes` is a number; `pid` and `ttl` appear only
// while acquired; a task whose promise reads settled reads fulfilled.

export function taskGetClauses(ctx: PromiseSuiteContext): void {
  promiseClause("task.get: a pending task has exactly id, state, version and resumes (a number); an acquired one adds pid and ttl", async () => {
    const store = await ctx.store();
    await createTargeted(store, "pending");
    const pending = await getTask(store, "pending");
    expect(pending).toEqual({ id: "pending", state: "pending", version: 0, resumes: 0 });
    expect(typeof pending.resumes).toBe("number");
    expect("pid" in pending || "ttl" in pending).toBe(false);
    await holdTask(store, "held");
    expect(await getTask(store, "held")).toEqual({ id: "held", state: "acquired", version: 1, resumes: 0, pid: "w1", ttl: TTL });
  });

  promiseClause("task.get: an unknown id, or a promise without a target, answers 404 and writes nothing", async () => {
    const store = await ctx.store();
    await createPromise(store, "plain");
    await expectUnchanged(store, async () => {
      await refused(store, { kind: "task.get", id: "ghost" }, 404);
      await refused(store, { kind: "task.get", id: "plain" }, 404);
    });
  });

  promiseClause("task.get: a task whose promise is past its deadline reads fulfilled, and the timeout is made permanent", async () => {
    const store = await ctx.store();
    await holdTask(store, "p1", { timeoutAt: T0 + 10 });
    expect(await getTask(store, "p1", T0 + 10)).toEqual({ id: "p1", state: "fulfilled", version: 1, resumes: 0 });
    expect(await storedPromise(store, "p1", T0 + 10)).toMatchObject({ state: "rejected_timedout", settledAt: T0 + 10 });
  });
}
