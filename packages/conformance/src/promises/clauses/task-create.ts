import type { TaskCreateRequest } from "@belay/contract";
import { expect } from "vitest";
import { promiseClause } from "../clause.js";
import {
  DEADLINE, MINUTE, T0, TARGET, TARGET_TAGS, TTL, acquire, createPromise, createTargeted, expectUnchanged, ok, queued, refused,
  settle, storedPromise, storedTask, suspend, taskTimer,
} from "../fixtures.js";
import type { PromiseSuiteContext } from "../suite-context.js";

// task.create: a worker creates a promise and holds its task in one step (the SDK's rpc/run);
// a repeat of a finished one answers it, a busy one answers 409 (the SDK then listens).

function taskCreate(id: string, fields: { pid?: string; ttl?: number; timeoutAt?: number; tags?: Record<string, string>; param?: { data?: string } } = {}): TaskCreateRequest {
  return {
    kind: "task.create",
    pid: fields.pid ?? "w1",
    ttl: fields.ttl ?? TTL,
    action: { kind: "promise.create", id, timeoutAt: fields.timeoutAt ?? DEADLINE, tags: { ...TARGET_TAGS, ...fields.tags }, ...(fields.param ? { param: fields.param } : {}) },
  };
}

export function taskCreateClauses(ctx: PromiseSuiteContext): void {
  promiseClause("task.create: a new id makes a pending promise and its task acquired at version 1 by pid, lease until now + ttl, with no execute", async () => {
    const store = await ctx.store();
    const answer = await ok(store, taskCreate("root", { param: { data: "YXJncw==" } }), T0 + 3);
    expect(answer.task).toEqual({ id: "root", state: "acquired", version: 1, resumes: 0, pid: "w1", ttl: TTL });
    expect(answer.promise).toEqual({ id: "root", state: "pending", param: { data: "YXJncw==" }, value: {}, tags: TARGET_TAGS, timeoutAt: DEADLINE, createdAt: T0 + 3 });
    expect(answer.preload).toEqual([]);
    expect(await taskTimer(store, "root", T0 + 3)).toBe(T0 + 3 + TTL);
    expect(await queued(store, T0 + 3)).toEqual([]);
  });

  promiseClause("task.create: a repeat on a fulfilled task answers the stored task and promise unchanged; the repeat's fields are ignored and nothing is written", async () => {
    const store = await ctx.store();
    await ok(store, taskCreate("root"));
    await ok(store, { kind: "task.fulfill", id: "root", version: 1, action: { kind: "promise.settle", id: "root", state: "resolved", value: { data: "b3V0" } } }, T0 + 1);
    await expectUnchanged(
      store,
      async () => {
        const repeat = await ok(store, taskCreate("root", { pid: "w2", ttl: 5, timeoutAt: DEADLINE + MINUTE, param: { data: "bmV3" } }), T0 + 2);
        expect(repeat.task).toEqual({ id: "root", state: "fulfilled", version: 1, resumes: 0 });
        expect(repeat.promise).toMatchObject({ state: "resolved", value: { data: "b3V0" }, param: {}, timeoutAt: DEADLINE, settledAt: T0 + 1 });
      },
      T0 + 2,
    );
  });

  promiseClause("task.create: on a busy task (acquired) it answers 409 and writes nothing", async () => {
    const store = await ctx.store();
    await ok(store, taskCreate("root"));
    await expectUnchanged(store, () => refused(store, taskCreate("root", { pid: "w2" }), 409, T0 + 1), T0 + 1);
    // The holder itself retrying is busy too: the version is the fence, not the pid.
    await refused(store, taskCreate("root"), 409, T0 + 1);
  });

  promiseClause("task.create: on a suspended or halted task it answers 409", async () => {
    const store = await ctx.store();
    await ok(store, taskCreate("root"));
    await createPromise(store, "root:1");
    expect((await suspend(store, "root", 1, ["root:1"])).status).toBe(200);
    await refused(store, taskCreate("root", { pid: "w2" }), 409, T0 + 1);
    await ok(store, taskCreate("halted"));
    await ok(store, { kind: "task.halt", id: "halted" });
    await refused(store, taskCreate("halted", { pid: "w2" }), 409, T0 + 1);
  });

  promiseClause("task.create: on a pending task it acquires it for the caller at version + 1 and drops its waiting execute", async () => {
    const store = await ctx.store();
    await createTargeted(store, "root");
    const answer = await ok(store, taskCreate("root", { pid: "w2", ttl: 2 * TTL, param: { data: "aWdub3JlZA==" } }), T0 + 1);
    expect(answer.task).toEqual({ id: "root", state: "acquired", version: 1, resumes: 0, pid: "w2", ttl: 2 * TTL });
    expect(answer.promise).toMatchObject({ param: {}, createdAt: T0 });
    expect(await queued(store, T0 + 1)).toEqual([]);
  });

  promiseClause("task.create: an existing promise without a task answers 422 and writes nothing", async () => {
    const store = await ctx.store();
    await createPromise(store, "plain");
    await expectUnchanged(store, () => refused(store, taskCreate("plain"), 422));
  });

  promiseClause("task.create: a new id at or past its deadline is born settled with a fulfilled task at version 0 and no lease", async () => {
    const store = await ctx.store();
    const answer = await ok(store, taskCreate("late", { timeoutAt: T0 }), T0);
    expect(answer.task).toEqual({ id: "late", state: "fulfilled", version: 0, resumes: 0 });
    expect(answer.promise).toMatchObject({ state: "rejected_timedout", createdAt: T0, settledAt: T0 });
    expect(await taskTimer(store, "late")).toBeUndefined();
    expect(await storedPromise(store, "late")).toMatchObject({ state: "rejected_timedout" });
  });

  promiseClause("task.create: the answer preloads the other promises of the new promise's branch", async () => {
    const store = await ctx.store();
    await createPromise(store, "root:1", { tags: { "resonate:branch": "root" } });
    await createPromise(store, "root:0", { tags: { "resonate:branch": "root" } });
    await settle(store, "root:0", "resolved", undefined, T0 + 1);
    await createPromise(store, "elsewhere:1", { tags: { "resonate:branch": "elsewhere" } });
    const answer = await ok(store, taskCreate("root", { tags: { "resonate:branch": "root" } }), T0 + 2);
    expect(answer.preload.map((p) => [p.id, p.state])).toEqual([
      ["root:0", "resolved"],
      ["root:1", "pending"],
    ]);
  });

  promiseClause("task.create: the created task is fenced like any other — the holder's version 1 works, version 0 does not", async () => {
    const store = await ctx.store();
    await ok(store, taskCreate("root"));
    await refused(store, { kind: "task.release", id: "root", version: 0 }, 409, T0 + 1);
    await ok(store, { kind: "task.release", id: "root", version: 1 }, T0 + 1);
    expect(await storedTask(store, "root", T0 + 1)).toEqual({ id: "root", state: "pending", version: 1, resumes: 0 });
    expect(await queued(store, T0 + 1)).toEqual([`execute:root@${TARGET}#1`]);
    expect((await acquire(store, "root", { version: 1, now: T0 + 2 })).task.version).toBe(2);
  });
}
