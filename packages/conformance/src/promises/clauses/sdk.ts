import { expect } from "vitest";
import { promiseClause } from "../clause.js";
import {
  DEADLINE, MINUTE, SECOND, T0, TARGET, TARGET_TAGS, TTL, acquire, createPromise, createRequest, execute, fencedCreate, getTask,
  holdTask, ok, queued, refused, storedPromise, storedTask, suspend, unblock,
} from "../fixtures.js";
import type { PromiseSuiteContext } from "../suite-context.js";

// What @resonatehq/sdk 0.11.5 relies on (resonate.md §5), as whole stories: ids of its grammar,
// ctx.sleep (timer + target), latent global promises, rpc against a busy task, preloads.

const ROOT_TAGS = { ...TARGET_TAGS, "resonate:origin": "root", "resonate:branch": "root", "resonate:parent": "root", "resonate:scope": "global" };
/** The lineage tags the SDK gives a child of `root`, plus `extra`. */
const lineage = (extra: Record<string, string> = {}) => ({ "resonate:origin": "root", "resonate:branch": "root", "resonate:parent": "root", ...extra });

export function sdkClauses(ctx: PromiseSuiteContext): void {
  promiseClause("sdk: ctx.sleep — a timer promise that also names a target resolves at its deadline in the scan and wakes the suspended parent", async () => {
    const store = await ctx.store();
    await ok(store, { kind: "task.create", pid: "w1", ttl: TTL, action: { kind: "promise.create", id: "root", timeoutAt: DEADLINE, tags: ROOT_TAGS } });
    const wake = T0 + 30 * SECOND;
    const timerTags = lineage({ "resonate:timer": "true", "resonate:target": TARGET, "resonate:scope": "global" });
    await fencedCreate(store, "root", 1, { kind: "promise.create", id: "root:0", timeoutAt: wake, tags: timerTags });
    expect((await suspend(store, "root", 1, ["root:0"])).status).toBe(200);
    expect((await store.expireTimers({ now: wake, max: 100 })).promisesTimedOut).toBe(1);
    expect(await storedPromise(store, "root:0", wake)).toMatchObject({ state: "resolved", settledAt: wake });
    expect(await storedTask(store, "root:0", wake)).toMatchObject({ state: "fulfilled" });
    expect(await getTask(store, "root", wake)).toMatchObject({ state: "pending", version: 1, resumes: 1 });
    expect(await queued(store, wake)).toEqual([execute("root", 1)]);
  });

  promiseClause("sdk: the sleep timer's own task, acquired and left to lapse by the worker, is dispatched again at the same version until the deadline resolves it", async () => {
    const store = await ctx.store();
    const wake = T0 + 5 * MINUTE;
    await createPromise(store, "root:0", { timeoutAt: wake, tags: { ...TARGET_TAGS, "resonate:timer": "true" } });
    await acquire(store, "root:0", { ttl: MINUTE });
    await store.expireTimers({ now: T0 + MINUTE, max: 10 });
    expect(await storedTask(store, "root:0", T0 + MINUTE)).toEqual({ id: "root:0", state: "pending", version: 1, resumes: 0 });
    expect(await queued(store, T0 + MINUTE)).toEqual([execute("root:0", 1)]);
    await store.expireTimers({ now: wake, max: 10 });
    expect(await storedPromise(store, "root:0", wake)).toMatchObject({ state: "resolved" });
    expect(await queued(store, wake)).toEqual([]);
  });

  promiseClause("sdk: a latent ctx.promise (resonate:scope global, no target) awaited through suspend times out in the scan and wakes the awaiter", async () => {
    const store = await ctx.store();
    await holdTask(store, "root");
    const latentTags = lineage({ "resonate:scope": "global" });
    await fencedCreate(store, "root", 1, { kind: "promise.create", id: "root:1", timeoutAt: T0 + MINUTE, tags: latentTags });
    expect((await suspend(store, "root", 1, ["root:1"])).status).toBe(200);
    expect((await store.expireTimers({ now: T0 + MINUTE, max: 10 })).promisesTimedOut).toBe(1);
    expect(await storedPromise(store, "root:1", T0 + MINUTE)).toMatchObject({ state: "rejected_timedout", settledAt: T0 + MINUTE });
    expect(await queued(store, T0 + MINUTE)).toEqual([execute("root", 1)]);
  });

  promiseClause("sdk: a latent promise settled by an outside client wakes the awaiter, which replays with the branch preloaded", async () => {
    const store = await ctx.store();
    await ok(store, { kind: "task.create", pid: "w1", ttl: TTL, action: { kind: "promise.create", id: "root", timeoutAt: DEADLINE, tags: ROOT_TAGS } });
    const latentTags = lineage({ "resonate:scope": "global" });
    await fencedCreate(store, "root", 1, { kind: "promise.create", id: "root:1", timeoutAt: DEADLINE, tags: latentTags });
    expect((await suspend(store, "root", 1, ["root:1"])).status).toBe(200);
    await ok(store, { kind: "promise.settle", id: "root:1", state: "resolved", value: { data: "YXBwcm92ZWQ=" } }, T0 + 1);
    const { task, preload } = await acquire(store, "root", { version: 1, pid: "w2", now: T0 + 2 });
    expect(task).toMatchObject({ version: 2, pid: "w2" });
    expect(preload).toMatchObject([{ id: "root:1", state: "resolved", value: { data: "YXBwcm92ZWQ=" } }]);
  });

  promiseClause("sdk: rpc against a busy task — task.create answers 409, the caller listens and is unblocked when the holder fulfills", async () => {
    const store = await ctx.store();
    const rpc = (pid: string) => ({ kind: "task.create" as const, pid, ttl: TTL, action: { kind: "promise.create" as const, id: "job", timeoutAt: DEADLINE, tags: TARGET_TAGS } });
    await ok(store, rpc("w1"));
    await refused(store, rpc("w2"), 409, T0 + 1);
    const listener = "poll://uni@workers/w2";
    expect((await ok(store, { kind: "promise.register_listener", awaited: "job", address: listener }, T0 + 1)).promise.state).toBe("pending");
    await ok(store, { kind: "task.fulfill", id: "job", version: 1, action: { kind: "promise.settle", id: "job", state: "resolved", value: { data: "NDI=" } } }, T0 + 2);
    expect(await queued(store, T0 + 2)).toEqual([unblock("job", listener)]);
    const [delivery] = await store.takeOutbox({ now: T0 + 2, max: 10, leaseMs: MINUTE });
    expect(delivery).toMatchObject({ address: listener, message: { kind: "unblock", data: { promise: { id: "job", state: "resolved", value: { data: "NDI=" } } } } });
    // Once fulfilled, the same rpc answers the result (200), without a lease.
    expect((await ok(store, rpc("w2"), T0 + 3)).task).toEqual({ id: "job", state: "fulfilled", version: 1, resumes: 0 });
  });

  promiseClause("sdk: a child settled between the fence and the suspend makes the suspend answer 300 with the branch preload, and the worker carries on", async () => {
    const store = await ctx.store();
    await ok(store, { kind: "task.create", pid: "w1", ttl: TTL, action: { kind: "promise.create", id: "root", timeoutAt: DEADLINE, tags: ROOT_TAGS } });
    const childTags = lineage({ "resonate:target": TARGET });
    await fencedCreate(store, "root", 1, { kind: "promise.create", id: "root:0", timeoutAt: DEADLINE, tags: childTags });
    await acquire(store, "root:0", { pid: "w2", now: T0 + 1 });
    await ok(store, { kind: "task.fulfill", id: "root:0", version: 1, action: { kind: "promise.settle", id: "root:0", state: "resolved", value: { data: "MA==" } } }, T0 + 2);
    const answer = await suspend(store, "root", 1, ["root:0"], T0 + 3);
    expect(answer).toMatchObject({ status: 300, data: { preload: [{ id: "root:0", state: "resolved", value: { data: "MA==" } }] } });
    expect(await ok(store, { kind: "task.fulfill", id: "root", version: 1, action: { kind: "promise.settle", id: "root", state: "resolved" } }, T0 + 4)).toMatchObject({ promise: { state: "resolved" } });
  });

  promiseClause("sdk: answers carry no null anywhere — optional fields are omitted (settledAt, pid, ttl, cursor)", async () => {
    const store = await ctx.store();
    const answers: unknown[] = [];
    answers.push(await ok(store, createRequest("root:0")));
    answers.push(await ok(store, { kind: "task.create", pid: "w1", ttl: TTL, action: createRequest("root", { tags: ROOT_TAGS }) }));
    answers.push(await ok(store, { kind: "task.release", id: "root", version: 1 }, T0 + 1));
    answers.push(await ok(store, { kind: "task.get", id: "root" }, T0 + 1));
    answers.push(await ok(store, { kind: "promise.search" }, T0 + 1));
    answers.push(await ok(store, { kind: "task.search" }, T0 + 1));
    answers.push(await ok(store, { kind: "schedule.create", id: "s", cron: "* * * * *", promiseId: "{{.id}}", promiseTimeout: MINUTE, promiseTags: TARGET_TAGS, nextRunAt: T0 + MINUTE }, T0 + 1));
    answers.push(await store.snapshot(T0 + 1));
    const text = JSON.stringify(answers);
    expect(text).not.toContain("null");
    expect(text).not.toContain("settledAt");
    expect(text).not.toContain("lastRunAt");
    // Only the task.create answer (index 1) holds a lease; after the release nothing shows pid or ttl.
    const afterRelease = JSON.stringify(answers.slice(2));
    expect(afterRelease).not.toContain('"pid"');
    expect(afterRelease).not.toContain('"ttl"');
    expect(afterRelease).not.toContain('"cursor"');
  });

  promiseClause("sdk: the ids of a run (root, root:0, root:0.1, root:10) stay distinct through create, fence, search and preload", async () => {
    const store = await ctx.store();
    await ok(store, { kind: "task.create", pid: "w1", ttl: TTL, action: { kind: "promise.create", id: "root", timeoutAt: DEADLINE, tags: ROOT_TAGS } });
    for (const id of ["root:0", "root:0.1", "root:10", "root:1"]) {
      const tags = lineage();
      await fencedCreate(store, "root", 1, { kind: "promise.create", id, timeoutAt: DEADLINE, tags });
    }
    expect((await ok(store, { kind: "promise.search", tags: { "resonate:origin": "root" } })).promises.map((p) => p.id)).toEqual(["root", "root:0", "root:0.1", "root:1", "root:10"]);
    await ok(store, { kind: "task.release", id: "root", version: 1 }, T0 + 1);
    expect((await acquire(store, "root", { version: 1, now: T0 + 2 })).preload.map((p) => p.id)).toEqual(["root:0", "root:0.1", "root:1", "root:10"]);
  });
}
