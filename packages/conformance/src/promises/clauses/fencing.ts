import { type PromiseRequest, type PromiseResponse, type PromiseStore, isBelayError } from "@belay/contract";
import { expect } from "vitest";
import { promiseClause } from "../clause.js";
import {
  MINUTE, T0, TARGET_TAGS, TTL, acquire, createPromise, createRequest, createTargeted, expectUnchanged, fencedCreate, getTask,
  holdTask, ok, refused, settle, storedPromise, suspend, taskTimer,
} from "../fixtures.js";
import type { PromiseSuiteContext } from "../suite-context.js";

// The version is the fencing token: it rises only on acquire, every worker write carries it and
// succeeds only while the task is acquired at it, and at most one claim is valid at a time —
// also when two store handles on one database race.

/** A request retried on retriable conflicts (which commit nothing), as a server would. */
async function handleRetrying<R extends PromiseRequest>(store: PromiseStore, request: R, now: number): Promise<PromiseResponse<R>> {
  for (let tries = 1; ; tries++) {
    try {
      return await store.handle(request, now);
    } catch (error) {
      if (tries >= 20 || !isBelayError(error, "BELAY_TRANSIENT_STORE")) throw error;
    }
  }
}

async function retrying<T>(work: () => Promise<T>): Promise<T> {
  for (let tries = 1; ; tries++) {
    try {
      return await work();
    } catch (error) {
      if (tries >= 20 || !isBelayError(error, "BELAY_TRANSIENT_STORE")) throw error;
    }
  }
}

export function fencingClauses(ctx: PromiseSuiteContext): void {
  promiseClause("fencing: after a lapse and a new acquire, every write under the old version answers 409 and writes nothing (acquire, release, fulfill, suspend, fence); its heartbeat renews nothing", async () => {
    const store = await ctx.store();
    await holdTask(store, "root");
    await createPromise(store, "root:1");
    await store.expireTimers({ now: T0 + TTL, max: 10 });
    await acquire(store, "root", { version: 1, pid: "w2", now: T0 + TTL + 1 });
    const now = T0 + TTL + 2;
    await expectUnchanged(
      store,
      async () => {
        await refused(store, { kind: "task.acquire", id: "root", version: 1, pid: "w1", ttl: TTL }, 409, now);
        await refused(store, { kind: "task.release", id: "root", version: 1 }, 409, now);
        await refused(store, { kind: "task.fulfill", id: "root", version: 1, action: { kind: "promise.settle", id: "root", state: "resolved" } }, 409, now);
        await refused(store, { kind: "task.suspend", id: "root", version: 1, actions: [{ kind: "promise.register_callback", awaited: "root:1", awaiter: "root" }] }, 409, now);
        await refused(store, { kind: "task.fence", id: "root", version: 1, action: createRequest("root:2") }, 409, now);
        await refused(store, { kind: "task.fence", id: "root", version: 1, action: { kind: "promise.settle", id: "root:1", state: "resolved" } }, 409, now);
        expect(await ok(store, { kind: "task.heartbeat", pid: "w1", tasks: [{ id: "root", version: 1 }] }, now)).toEqual({});
        expect(await ok(store, { kind: "task.heartbeat", pid: "w2", tasks: [{ id: "root", version: 1 }] }, now)).toEqual({});
      },
      now,
    );
    expect(await taskTimer(store, "root", now)).toBe(T0 + TTL + 1 + TTL);
    expect(await storedPromise(store, "root:1", now)).toMatchObject({ state: "pending" });
  });

  promiseClause("fencing: the version rises only on acquire — release, lease expiry, resume, halt and continue keep it", async () => {
    const store = await ctx.store();
    await holdTask(store, "root");
    await ok(store, { kind: "task.release", id: "root", version: 1 }, T0 + 1);
    expect((await getTask(store, "root", T0 + 1)).version).toBe(1);
    await acquire(store, "root", { version: 1, now: T0 + 2 });
    await store.expireTimers({ now: T0 + 2 + TTL, max: 10 });
    expect((await getTask(store, "root", T0 + 2 + TTL)).version).toBe(2);
    const now = T0 + 3 + TTL;
    await acquire(store, "root", { version: 2, now });
    await fencedCreate(store, "root", 3, createRequest("root:1"), now);
    expect((await suspend(store, "root", 3, ["root:1"], now)).status).toBe(200);
    await settle(store, "root:1", "resolved", undefined, now + 1);
    expect((await getTask(store, "root", now + 1)).version).toBe(3);
    await ok(store, { kind: "task.halt", id: "root" }, now + 2);
    await ok(store, { kind: "task.continue", id: "root" }, now + 3);
    expect(await getTask(store, "root", now + 3)).toMatchObject({ state: "pending", version: 3 });
  });

  promiseClause("fencing: two concurrent acquires of one task at one version — exactly one wins, the other answers 409", async () => {
    for (let round = 0; round < 5; round++) {
      const store = await ctx.store();
      const peer = await ctx.peer(store);
      await createTargeted(store, "p1");
      const request = (pid: string) => ({ kind: "task.acquire" as const, id: "p1", version: 0, pid, ttl: TTL });
      const answers = await Promise.all([handleRetrying(store, request("w1"), T0 + 1), handleRetrying(peer, request("w2"), T0 + 1)]);
      expect(answers.map((a) => a.status).sort()).toEqual([200, 409]);
      const winner = answers.findIndex((a) => a.status === 200) === 0 ? "w1" : "w2";
      expect(await getTask(store, "p1", T0 + 1)).toMatchObject({ state: "acquired", version: 1, pid: winner });
    }
  });

  promiseClause("fencing: concurrent task.create of one new id — one caller holds the task, the other answers 409", async () => {
    const store = await ctx.store();
    const peer = await ctx.peer(store);
    const request = (pid: string) => ({ kind: "task.create" as const, pid, ttl: TTL, action: createRequest("root", { tags: TARGET_TAGS }) });
    const answers = await Promise.all([handleRetrying(store, request("w1"), T0), handleRetrying(peer, request("w2"), T0)]);
    expect(answers.map((a) => a.status).sort()).toEqual([200, 409]);
    expect(await getTask(store, "root")).toMatchObject({ state: "acquired", version: 1 });
  });

  promiseClause("fencing: concurrent creates of one id make one promise and one task, and both answer the same record", async () => {
    const store = await ctx.store();
    const peer = await ctx.peer(store);
    const answers = await Promise.all([
      handleRetrying(store, createRequest("p1", { tags: TARGET_TAGS, param: { data: "MQ==" } }), T0),
      handleRetrying(peer, createRequest("p1", { tags: TARGET_TAGS, param: { data: "Mg==" } }), T0),
    ]);
    expect(answers.map((a) => a.status)).toEqual([200, 200]);
    expect((answers[0] as { data: unknown }).data).toEqual((answers[1] as { data: unknown }).data);
    const snapshot = await store.snapshot(T0);
    expect(snapshot.promises).toHaveLength(1);
    expect(snapshot.tasks).toHaveLength(1);
    expect(snapshot.outbox).toHaveLength(1);
  });

  promiseClause("fencing: concurrent settles of one promise — one value is stored and both answer it (write-once)", async () => {
    const store = await ctx.store();
    const peer = await ctx.peer(store);
    await createPromise(store, "p1");
    const answers = await Promise.all([
      handleRetrying(store, { kind: "promise.settle", id: "p1", state: "resolved", value: { data: "MQ==" } }, T0 + 1),
      handleRetrying(peer, { kind: "promise.settle", id: "p1", state: "rejected", value: { data: "Mg==" } }, T0 + 1),
    ]);
    const records = answers.map((a) => (a as { data: { promise: unknown } }).data.promise);
    expect(records[0]).toEqual(records[1]);
    expect(await storedPromise(store, "p1", T0 + 1)).toEqual(records[0]);
  });

  promiseClause("fencing: concurrent timeout scans settle each deadline exactly once", async () => {
    const store = await ctx.store();
    const peer = await ctx.peer(store);
    for (let i = 0; i < 10; i++) await createTargeted(store, `p${i}`, { timeoutAt: T0 + 10 });
    const results = await Promise.all([
      retrying(() => store.expireTimers({ now: T0 + 10, max: 100 })),
      retrying(() => peer.expireTimers({ now: T0 + 10, max: 100 })),
    ]);
    expect(results[0]!.promisesTimedOut + results[1]!.promisesTimedOut).toBe(10);
    expect((await store.snapshot(T0 + 10)).promises.every((p) => p.state === "rejected_timedout")).toBe(true);
  });

  promiseClause("fencing: concurrent firings of one planned occurrence — exactly one fires, the other is stale", async () => {
    const store = await ctx.store();
    const peer = await ctx.peer(store);
    const first = T0 + MINUTE;
    await ok(store, { kind: "schedule.create", id: "s1", cron: "* * * * *", promiseId: "{{.id}}.{{.timestamp}}", promiseTimeout: MINUTE, promiseTags: TARGET_TAGS, nextRunAt: first });
    const firing = { firings: [{ id: "s1", expectedNextRunAt: first, nextRunAt: first + MINUTE }], now: first };
    const results = await Promise.all([retrying(() => store.fireSchedules(firing)), retrying(() => peer.fireSchedules(firing))]);
    expect(results.map((r) => r[0]!.status).sort()).toEqual(["fired", "stale"]);
    expect((await store.snapshot(first)).promises.map((p) => p.id)).toEqual([`s1.${first}`]);
  });
}
