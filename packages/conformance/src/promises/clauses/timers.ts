import { expect } from "vitest";
import { promiseClause } from "../clause.js";
import {
  DEADLINE, LISTENER, MINUTE, SECOND, T0, TTL, createPromise, createRequest, createTargeted, execute, expectInvalid,
  fencedCreate, holdTask, ok, queued, storedPromise, storedTask, suspend, taskTimer, unblock,
} from "../fixtures.js";
import type { PromiseSuiteContext } from "../suite-context.js";

// expireTimers: the timeout scan. Deadlines settle pending promises (with their chains) without
// anyone reading them; retry timers dispatch unclaimed tasks again; lapsed leases return tasks to
// pending. Each firing is re-checked, and each call handles a bounded batch.

const NONE = { promisesTimedOut: 0, tasksRetried: 0, leasesExpired: 0, more: false };

export function timerClauses(ctx: PromiseSuiteContext): void {
  promiseClause("expireTimers: a deadline fires without a read — rejected_timedout, settledAt = deadline, its task fulfilled; one millisecond before, nothing", async () => {
    const store = await ctx.store();
    await holdTask(store, "p1", { timeoutAt: T0 + 10 * SECOND });
    expect(await store.expireTimers({ now: T0 + 10 * SECOND - 1, max: 10 })).toEqual(NONE);
    expect(await store.expireTimers({ now: T0 + 10 * SECOND + 500, max: 10 })).toEqual({ promisesTimedOut: 1, tasksRetried: 0, leasesExpired: 0, more: false });
    expect(await storedPromise(store, "p1", T0 + 11 * SECOND)).toMatchObject({ state: "rejected_timedout", value: {}, settledAt: T0 + 10 * SECOND });
    expect(await storedTask(store, "p1", T0 + 11 * SECOND)).toEqual({ id: "p1", state: "fulfilled", version: 1, resumes: 0 });
    expect((await store.snapshot(T0 + 11 * SECOND)).timers).toEqual({ promises: [], tasks: [] });
  });

  promiseClause("expireTimers: an untargeted promise's deadline fires too, and unblocks its listeners", async () => {
    const store = await ctx.store();
    await createPromise(store, "p1", { timeoutAt: T0 + 10 });
    await ok(store, { kind: "promise.register_listener", awaited: "p1", address: LISTENER });
    expect((await store.expireTimers({ now: T0 + 10, max: 10 })).promisesTimedOut).toBe(1);
    expect(await storedPromise(store, "p1", T0 + 10)).toMatchObject({ state: "rejected_timedout" });
    expect(await queued(store, T0 + 10)).toEqual([unblock("p1")]);
  });

  promiseClause("expireTimers: an untargeted timer resolves at its deadline", async () => {
    const store = await ctx.store();
    await createPromise(store, "sleep", { timeoutAt: T0 + 10, tags: { "resonate:timer": "true" } });
    await store.expireTimers({ now: T0 + 10, max: 10 });
    expect(await storedPromise(store, "sleep", T0 + 10)).toMatchObject({ state: "resolved", value: {}, settledAt: T0 + 10 });
  });

  promiseClause("expireTimers: a pending task nobody acquires is dispatched again every retryTimeoutMs at the same version, its timer re-armed", async () => {
    const store = await ctx.store();
    const { retryTimeoutMs } = store.capabilities.settings;
    await createTargeted(store, "p1");
    const first = await store.takeOutbox({ now: T0, max: 10, leaseMs: 10 * retryTimeoutMs });
    expect(first.map((d) => d.message)).toEqual([{ kind: "execute", data: { task: { id: "p1", version: 0 } } }]);
    expect(await store.expireTimers({ now: T0 + retryTimeoutMs - 1, max: 10 })).toEqual(NONE);
    expect(await store.expireTimers({ now: T0 + retryTimeoutMs, max: 10 })).toEqual({ promisesTimedOut: 0, tasksRetried: 1, leasesExpired: 0, more: false });
    expect(await taskTimer(store, "p1", T0 + retryTimeoutMs)).toBe(T0 + 2 * retryTimeoutMs);
    const again = await store.takeOutbox({ now: T0 + retryTimeoutMs, max: 10, leaseMs: MINUTE });
    expect(again.map((d) => d.message)).toEqual([{ kind: "execute", data: { task: { id: "p1", version: 0 } } }]);
    expect(await storedTask(store, "p1", T0 + retryTimeoutMs)).toEqual({ id: "p1", state: "pending", version: 0, resumes: 0 });
  });

  promiseClause("expireTimers: the retry interval is the store's retryTimeoutMs setting", async () => {
    const store = await ctx.store({ settings: { retryTimeoutMs: 5 * SECOND } });
    expect(store.capabilities.settings.retryTimeoutMs).toBe(5 * SECOND);
    await createTargeted(store, "p1");
    expect(await taskTimer(store, "p1")).toBe(T0 + 5 * SECOND);
    expect((await store.expireTimers({ now: T0 + 5 * SECOND, max: 10 })).tasksRetried).toBe(1);
  });

  promiseClause("expireTimers: a lease lapses at exactly now + ttl — pending at the same version, no pid or ttl, retry timer, execute at that version; one millisecond before it holds", async () => {
    const store = await ctx.store();
    const { retryTimeoutMs } = store.capabilities.settings;
    await holdTask(store, "p1");
    expect(await store.expireTimers({ now: T0 + TTL - 1, max: 10 })).toEqual(NONE);
    expect(await store.expireTimers({ now: T0 + TTL, max: 10 })).toEqual({ promisesTimedOut: 0, tasksRetried: 0, leasesExpired: 1, more: false });
    expect(await storedTask(store, "p1", T0 + TTL)).toEqual({ id: "p1", state: "pending", version: 1, resumes: 0 });
    expect(await taskTimer(store, "p1", T0 + TTL)).toBe(T0 + TTL + retryTimeoutMs);
    expect(await queued(store, T0 + TTL)).toEqual([execute("p1", 1)]);
    // The lapsed holder's version no longer writes; the next acquire is at version 1.
    await expect(store.handle({ kind: "task.fulfill", id: "p1", version: 1, action: { kind: "promise.settle", id: "p1", state: "resolved" } }, T0 + TTL + 1)).resolves.toMatchObject({ status: 409 });
  });

  promiseClause("expireTimers: a second scan at the same instant finds nothing to do (every firing re-checked)", async () => {
    const store = await ctx.store();
    await createTargeted(store, "p1", { timeoutAt: T0 + 10 });
    await holdTask(store, "p2");
    await createTargeted(store, "p3");
    const now = T0 + Math.max(TTL, store.capabilities.settings.retryTimeoutMs);
    const first = await store.expireTimers({ now, max: 10 });
    expect(first).toEqual({ promisesTimedOut: 1, tasksRetried: 1, leasesExpired: 1, more: false });
    const after = await store.snapshot(now);
    expect(await store.expireTimers({ now, max: 10 })).toEqual(NONE);
    expect(await store.snapshot(now)).toEqual(after);
  });

  promiseClause("expireTimers: at most max deadlines per call, earliest first; repeated calls drain the rest", async () => {
    const store = await ctx.store();
    for (const [id, at] of [["c", 30], ["a", 10], ["e", 50], ["b", 20], ["d", 40]] as const) await createPromise(store, id, { timeoutAt: T0 + at });
    const now = T0 + 100;
    expect((await store.expireTimers({ now, max: 2 })).promisesTimedOut).toBe(2);
    expect((await store.snapshot(now)).timers.promises.map((t) => t.id)).toEqual(["c", "d", "e"]);
    expect((await store.expireTimers({ now, max: 2 })).promisesTimedOut).toBe(2);
    expect((await store.expireTimers({ now, max: 2 })).promisesTimedOut).toBe(1);
    expect((await store.expireTimers({ now, max: 2 })).promisesTimedOut).toBe(0);
    expect((await store.snapshot(now)).promises.every((p) => p.state === "rejected_timedout")).toBe(true);
  });

  promiseClause("expireTimers: at most max task timers per call, earliest first; repeated calls drain the rest", async () => {
    const store = await ctx.store();
    for (const [id, ttl] of [["c", 3], ["a", 1], ["b", 2]] as const) {
      await createTargeted(store, id);
      await ok(store, { kind: "task.acquire", id, version: 0, pid: "w1", ttl: ttl * SECOND });
    }
    const now = T0 + 10 * SECOND;
    expect((await store.expireTimers({ now, max: 2 })).leasesExpired).toBe(2);
    expect(await storedTask(store, "c", now)).toMatchObject({ state: "acquired" });
    expect((await store.expireTimers({ now, max: 2 })).leasesExpired).toBe(1);
    expect(await storedTask(store, "c", now)).toMatchObject({ state: "pending", version: 1 });
  });

  promiseClause("expireTimers: a deadline's chain runs in the scan — a suspended awaiter resumes and is dispatched", async () => {
    const store = await ctx.store();
    await holdTask(store, "root");
    await fencedCreate(store, "root", 1, createRequest("root:1", { timeoutAt: T0 + MINUTE }));
    expect((await suspend(store, "root", 1, ["root:1"])).status).toBe(200);
    expect((await store.expireTimers({ now: T0 + MINUTE, max: 10 })).promisesTimedOut).toBe(1);
    expect(await storedTask(store, "root", T0 + MINUTE)).toEqual({ id: "root", state: "pending", version: 1, resumes: 1 });
    expect(await queued(store, T0 + MINUTE)).toEqual([execute("root", 1)]);
  });

  promiseClause("expireTimers: suspended tasks have no timer, so the scan never dispatches them", async () => {
    const store = await ctx.store();
    await holdTask(store, "root");
    await createPromise(store, "root:1");
    expect((await suspend(store, "root", 1, ["root:1"])).status).toBe(200);
    expect(await store.expireTimers({ now: DEADLINE - 1, max: 10 })).toEqual(NONE);
    expect(await storedTask(store, "root", DEADLINE - 1)).toMatchObject({ state: "suspended" });
  });

  promiseClause("delay: a task delayed by resonate:delay is not dispatched before it (no execute, nothing for the scan) and is dispatched at it", async () => {
    const store = await ctx.store();
    const delay = T0 + 10 * MINUTE;
    await createTargeted(store, "later", { tags: { "resonate:delay": String(delay) } });
    expect(await queued(store)).toEqual([]);
    expect(await taskTimer(store, "later")).toBe(delay);
    expect(await store.expireTimers({ now: delay - 1, max: 10 })).toEqual(NONE);
    expect(await store.takeOutbox({ now: delay - 1, max: 10, leaseMs: MINUTE })).toEqual([]);
    expect((await store.expireTimers({ now: delay, max: 10 })).tasksRetried).toBe(1);
    expect(await queued(store, delay)).toEqual([execute("later", 0)]);
  });

  promiseClause("delay: a delay already past at creation dispatches at once", async () => {
    const store = await ctx.store();
    await createTargeted(store, "now", { tags: { "resonate:delay": String(T0 - 1) } });
    expect(await queued(store)).toEqual([execute("now", 0)]);
  });

  promiseClause("expireTimers: now and max are checked (InvalidInputError naming the field)", async () => {
    const store = await ctx.store();
    await expectInvalid(() => store.expireTimers({ now: -1, max: 10 }), "now");
    await expectInvalid(() => store.expireTimers({ now: T0, max: 0 }), "max");
    await expectInvalid(() => store.expireTimers({ now: T0, max: 1.5 }), "max");
  });

  promiseClause("expireTimers: a scan that finds max due timers of a kind says more may be due; the last one says none are left", async () => {
    const store = await ctx.store();
    for (const id of ["a", "b", "c"]) await createPromise(store, id, { timeoutAt: T0 + 10 });
    const first = await store.expireTimers({ now: T0 + 10, max: 2 });
    expect(first).toMatchObject({ promisesTimedOut: 2, more: true });
    const second = await store.expireTimers({ now: T0 + 10, max: 2 });
    expect(second).toMatchObject({ promisesTimedOut: 1, more: false });
  });
}
