import type { PromiseRecord } from "@belay/contract";
import { expect } from "vitest";
import { machineDefectClause, promiseClause } from "../clause.js";
import {
  T0, TTL, acquire, createPromise, createRequest, execute, expectInvalid, expectUnchanged, fencedCreate, getTask, holdTask, ok,
  queued, refused, settle, storedTask, suspend, taskTimer,
} from "../fixtures.js";
import type { PromiseSuiteContext } from "../suite-context.js";

// task.suspend: one check-and-park. Every awaited promise pending: callbacks stored, the task
// suspended, its lease dropped (200). Any awaited already settled: nothing parked, the worker
// carries on with the preload (300).

export function suspendClauses(ctx: PromiseSuiteContext): void {
  promiseClause("task.suspend: every awaited promise pending — 200 {}, callbacks stored, task suspended at its version, lease dropped, nothing queued", async () => {
    const store = await ctx.store();
    await holdTask(store, "root");
    await fencedCreate(store, "root", 1, createRequest("root:1"));
    await fencedCreate(store, "root", 1, createRequest("root:2"));
    expect(await suspend(store, "root", 1, ["root:1", "root:2"], T0 + 1)).toEqual({ status: 200, data: {} });
    expect(await getTask(store, "root", T0 + 1)).toEqual({ id: "root", state: "suspended", version: 1, resumes: 0 });
    expect(await taskTimer(store, "root", T0 + 1)).toBeUndefined();
    expect((await store.snapshot(T0 + 1)).callbacks).toEqual([
      { awaited: "root:1", awaiter: "root" },
      { awaited: "root:2", awaiter: "root" },
    ]);
    expect(await queued(store, T0 + 1)).toEqual([]);
  });

  promiseClause("task.suspend: any awaited promise already settled — 300 with the preload; nothing parked, the task stays acquired with its lease", async () => {
    const store = await ctx.store();
    const branch = { "resonate:branch": "root" };
    await holdTask(store, "root", { tags: branch });
    await fencedCreate(store, "root", 1, createRequest("root:1", { tags: branch }));
    await fencedCreate(store, "root", 1, createRequest("root:2", { tags: branch }));
    await settle(store, "root:2", "resolved", { data: "Mg==" }, T0 + 1);
    const answer = await suspend(store, "root", 1, ["root:1", "root:2"], T0 + 2);
    expect(answer.status).toBe(300);
    const preload = (answer as { data: { preload: readonly PromiseRecord[] } }).data.preload;
    expect(preload.map((p) => [p.id, p.state])).toEqual([
      ["root:1", "pending"],
      ["root:2", "resolved"],
    ]);
    expect(await getTask(store, "root", T0 + 2)).toEqual({ id: "root", state: "acquired", version: 1, resumes: 0, pid: "w1", ttl: TTL });
    expect(await taskTimer(store, "root", T0 + 2)).toBe(T0 + TTL);
    expect((await store.snapshot(T0 + 2)).callbacks).toEqual([]);
  });

  promiseClause("task.suspend: an awaited promise past its deadline counts as settled (300), and its timeout is made permanent", async () => {
    const store = await ctx.store();
    await holdTask(store, "root");
    await fencedCreate(store, "root", 1, createRequest("root:1", { timeoutAt: T0 + 10 }));
    expect((await suspend(store, "root", 1, ["root:1"], T0 + 10)).status).toBe(300);
    expect((await store.snapshot(T0 + 10)).promises.find((p) => p.id === "root:1")).toMatchObject({ state: "rejected_timedout" });
  });

  promiseClause("task.suspend: a missing awaited promise answers 422 and writes nothing (no callback for the others either)", async () => {
    const store = await ctx.store();
    await holdTask(store, "root");
    await createPromise(store, "root:1");
    await expectUnchanged(store, () => refused(store, { kind: "task.suspend", id: "root", version: 1, actions: [
      { kind: "promise.register_callback", awaited: "root:1", awaiter: "root" },
      { kind: "promise.register_callback", awaited: "root:9", awaiter: "root" },
    ] }, 422));
  });

  promiseClause("task.suspend: a stale version or a task not acquired answers 409 and writes nothing; an unknown task 404", async () => {
    const store = await ctx.store();
    await holdTask(store, "root");
    await createPromise(store, "root:1");
    await expectUnchanged(store, async () => {
      await refused(store, { kind: "task.suspend", id: "root", version: 0, actions: [{ kind: "promise.register_callback", awaited: "root:1", awaiter: "root" }] }, 409);
      await refused(store, { kind: "task.suspend", id: "root", version: 2, actions: [{ kind: "promise.register_callback", awaited: "root:1", awaiter: "root" }] }, 409);
      await refused(store, { kind: "task.suspend", id: "ghost", version: 1, actions: [{ kind: "promise.register_callback", awaited: "root:1", awaiter: "ghost" }] }, 404);
    });
    expect((await suspend(store, "root", 1, ["root:1"])).status).toBe(200);
    await refused(store, { kind: "task.suspend", id: "root", version: 1, actions: [{ kind: "promise.register_callback", awaited: "root:1", awaiter: "root" }] }, 409);
  });

  promiseClause("task.suspend: a task whose own promise is past its deadline answers 409 and reads fulfilled", async () => {
    const store = await ctx.store();
    await holdTask(store, "root", { timeoutAt: T0 + 50 });
    await createPromise(store, "root:1");
    await refused(store, { kind: "task.suspend", id: "root", version: 1, actions: [{ kind: "promise.register_callback", awaited: "root:1", awaiter: "root" }] }, 409, T0 + 50);
    expect(await storedTask(store, "root", T0 + 50)).toMatchObject({ state: "fulfilled" });
    expect((await store.snapshot(T0 + 50)).callbacks).toEqual([]);
  });

  promiseClause("task.suspend: the resumed task is acquired at the version it suspended with, and the acquire raises it", async () => {
    const store = await ctx.store();
    await holdTask(store, "root");
    await fencedCreate(store, "root", 1, createRequest("root:1"));
    expect((await suspend(store, "root", 1, ["root:1"])).status).toBe(200);
    await settle(store, "root:1", "resolved", undefined, T0 + 1);
    expect(await queued(store, T0 + 1)).toEqual([execute("root", 1)]);
    const { task } = await acquire(store, "root", { version: 1, pid: "w2", now: T0 + 2 });
    expect(task).toEqual({ id: "root", state: "acquired", version: 2, resumes: 0, pid: "w2", ttl: TTL });
    expect(await queued(store, T0 + 2)).toEqual([]);
  });

  promiseClause("task.suspend: malformed suspends are refused naming the field — no actions, an action of another awaiter, the task awaiting itself, another kind", async () => {
    const store = await ctx.store();
    await holdTask(store, "root");
    await createPromise(store, "root:1");
    const base = { kind: "task.suspend", id: "root", version: 1 } as const;
    await expectUnchanged(store, async () => {
      await expectInvalid(() => store.handle({ ...base, actions: [] }, T0), "actions");
      await expectInvalid(() => store.handle({ ...base, actions: [{ kind: "promise.register_callback", awaited: "root:1", awaiter: "other" }] }, T0), "actions[0].awaiter");
      await expectInvalid(() => store.handle({ ...base, actions: [{ kind: "promise.register_callback", awaited: "root", awaiter: "root" }] }, T0), "actions[0].awaited");
      await expectInvalid(
        () => store.handle({ ...base, actions: [{ kind: "promise.register_callback", awaited: "root:1", awaiter: "root" }, { kind: "promise.register_listener", awaited: "root:1", address: "poll://uni@c/1" } as never] }, T0),
        "actions[1].kind",
      );
    });
  });

  // Belay does not partition by origin: SDK 0.11.5 gives a child created with an explicit id a
  // lineage of its own, and its parent still awaits it, so a callback may cross origins.
  promiseClause("task.suspend: an awaited promise of another origin (a child with an explicit id) is awaited like any other", async () => {
    const store = await ctx.store();
    await holdTask(store, "root");
    await createPromise(store, "other:1");
    expect((await suspend(store, "root", 1, ["other:1"])).status).toBe(200);
    expect((await store.snapshot(T0)).callbacks).toEqual([{ awaited: "other:1", awaiter: "root" }]);
  });
}
