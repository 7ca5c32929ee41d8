import { expect } from "vitest";
import { promiseClause } from "../clause.js";
import {
  LISTENER, T0, TARGET_TAGS, createPromise, createRequest, createTargeted, execute, expectInvalid, expectUnchanged, holdTask, ok,
  queued, refused, storedPromise, storedTask, unblock,
} from "../fixtures.js";
import type { PromiseSuiteContext } from "../suite-context.js";

// task.fence: a write on another promise accepted only from the current holder. The answer nests
// the inner action's own envelope: { action: { kind, status, data | error }, preload }.

export function fenceClauses(ctx: PromiseSuiteContext): void {
  promiseClause("task.fence: a create from the holder runs and answers the nested envelope { action: { kind, status: 200, data: { promise } }, preload }", async () => {
    const store = await ctx.store();
    await holdTask(store, "root");
    const answer = await ok(store, { kind: "task.fence", id: "root", version: 1, action: createRequest("root:1", { param: { data: "YXJn" } }) }, T0 + 1);
    const child = await storedPromise(store, "root:1", T0 + 1);
    expect(child).toMatchObject({ state: "pending", param: { data: "YXJn" }, createdAt: T0 + 1 });
    expect(answer.action).toEqual({ kind: "promise.create", status: 200, data: { promise: child } });
    expect(Array.isArray(answer.preload)).toBe(true);
  });

  promiseClause("task.fence: a settle from the holder settles the other promise with its chain and answers it nested", async () => {
    const store = await ctx.store();
    await holdTask(store, "root");
    await createPromise(store, "root:1");
    await ok(store, { kind: "promise.register_listener", awaited: "root:1", address: LISTENER });
    const answer = await ok(store, { kind: "task.fence", id: "root", version: 1, action: { kind: "promise.settle", id: "root:1", state: "resolved", value: { data: "eQ==" } } }, T0 + 2);
    expect(answer.action).toMatchObject({ kind: "promise.settle", status: 200, data: { promise: { id: "root:1", state: "resolved", value: { data: "eQ==" }, settledAt: T0 + 2 } } });
    expect(await queued(store, T0 + 2)).toEqual([unblock("root:1")]);
  });

  promiseClause("task.fence: a stale version answers 409 and the inner action does not run", async () => {
    const store = await ctx.store();
    await holdTask(store, "root");
    await createPromise(store, "root:1");
    await expectUnchanged(store, async () => {
      await refused(store, { kind: "task.fence", id: "root", version: 0, action: createRequest("root:2") }, 409);
      await refused(store, { kind: "task.fence", id: "root", version: 2, action: { kind: "promise.settle", id: "root:1", state: "resolved" } }, 409);
    });
    expect(await storedPromise(store, "root:2")).toBeUndefined();
  });

  promiseClause("task.fence: a task not acquired answers 409 and an unknown task 404, the inner action not run", async () => {
    const store = await ctx.store();
    await createTargeted(store, "pending");
    await expectUnchanged(store, async () => {
      await refused(store, { kind: "task.fence", id: "pending", version: 0, action: createRequest("pending:1") }, 409);
      await refused(store, { kind: "task.fence", id: "ghost", version: 1, action: createRequest("ghost:1") }, 404);
    });
  });

  promiseClause("task.fence: the inner action's own failure is nested in a 200 (a settle of an unknown promise: inner 404)", async () => {
    const store = await ctx.store();
    await holdTask(store, "root");
    const answer = await ok(store, { kind: "task.fence", id: "root", version: 1, action: { kind: "promise.settle", id: "root:9", state: "resolved" } });
    expect(answer.action).toMatchObject({ kind: "promise.settle", status: 404 });
    expect(typeof (answer.action as { error?: unknown }).error).toBe("string");
  });

  promiseClause("task.fence: an inner create of an existing id answers the stored promise unchanged (idempotent replay of a fenced write)", async () => {
    const store = await ctx.store();
    await holdTask(store, "root");
    const first = (await ok(store, { kind: "task.fence", id: "root", version: 1, action: createRequest("root:1", { param: { data: "MQ==" } }) })).action;
    await expectUnchanged(store, async () => {
      const again = (await ok(store, { kind: "task.fence", id: "root", version: 1, action: createRequest("root:1", { param: { data: "Mg==" } }) }, T0 + 1)).action;
      expect(again).toEqual(first);
    }, T0 + 1);
  });

  promiseClause("task.fence: an inner create of a targeted child gives it a pending task and an execute, in the same step", async () => {
    const store = await ctx.store();
    await holdTask(store, "root");
    await ok(store, { kind: "task.fence", id: "root", version: 1, action: createRequest("root:1", { tags: TARGET_TAGS }) }, T0 + 1);
    expect(await storedTask(store, "root:1", T0 + 1)).toEqual({ id: "root:1", state: "pending", version: 0, resumes: 0 });
    expect(await queued(store, T0 + 1)).toEqual([execute("root:1", 0)]);
  });

  promiseClause("task.fence: an action on the task's own promise, or of another kind, is refused naming the field", async () => {
    const store = await ctx.store();
    await holdTask(store, "root");
    await expectUnchanged(store, async () => {
      await expectInvalid(() => store.handle({ kind: "task.fence", id: "root", version: 1, action: createRequest("root") }, T0), "action.id");
      await expectInvalid(() => store.handle({ kind: "task.fence", id: "root", version: 1, action: { kind: "promise.get", id: "root:1" } as never }, T0), "action.kind");
    });
  });
}
