import { expect } from "vitest";
import { promiseClause } from "../clause.js";
import {
  LISTENER, MINUTE, SECOND, T0, TARGET, TTL, acquire, createPromise, createTargeted, expectInvalid, holdTask, ok, settle,
} from "../fixtures.js";
import type { PromiseSuiteContext } from "../suite-context.js";

// The outbox: keyed messages (one execute per task, one unblock per promise and address), taken
// under a lease and acknowledged with the token of the take, so a late acknowledgement never
// deletes a newer message.

const LEASE = 10 * SECOND;

/** Resolves once `condition` holds (a listener may run after the write resolved), failing after 30 s. */
async function waitFor(condition: () => boolean): Promise<void> {
  for (const started = Date.now(); !condition(); ) {
    if (Date.now() - started > 30_000) throw new Error("condition not met within 30 s");
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

export function outboxClauses(ctx: PromiseSuiteContext): void {
  promiseClause("takeOutbox: messages available at now, oldest first, at most max; each names its key, address, token and message", async () => {
    const store = await ctx.store();
    await createTargeted(store, "b", {}, T0);
    await createTargeted(store, "a", {}, T0 + 1);
    await createTargeted(store, "c", {}, T0 + 2);
    const taken = await store.takeOutbox({ now: T0 + 2, max: 2, leaseMs: LEASE });
    expect(taken.map((d) => d.key)).toEqual(["execute:b", "execute:a"]);
    expect(taken[0]).toMatchObject({ key: "execute:b", address: TARGET, message: { kind: "execute", data: { task: { id: "b", version: 0 } } } });
    expect(Number.isSafeInteger(taken[0]!.token)).toBe(true);
    expect((await store.takeOutbox({ now: T0 + 2, max: 10, leaseMs: LEASE })).map((d) => d.key)).toEqual(["execute:c"]);
  });

  promiseClause("takeOutbox: an unblock carries the promise record as of the take, addressed to the listener", async () => {
    const store = await ctx.store();
    await createPromise(store, "p1");
    await ok(store, { kind: "promise.register_listener", awaited: "p1", address: LISTENER });
    const settled = await settle(store, "p1", "resolved", { data: "eA==" }, T0 + 1);
    const [delivery] = await store.takeOutbox({ now: T0 + 1, max: 10, leaseMs: LEASE });
    expect(delivery).toMatchObject({ key: "unblock:p1", address: LISTENER, message: { kind: "unblock", data: { promise: settled } } });
  });

  promiseClause("takeOutbox: a taken message is invisible until now + leaseMs, then taken again with a new token", async () => {
    const store = await ctx.store();
    await createTargeted(store, "p1");
    const [first] = await store.takeOutbox({ now: T0, max: 10, leaseMs: LEASE });
    expect(await store.takeOutbox({ now: T0 + LEASE - 1, max: 10, leaseMs: LEASE })).toEqual([]);
    const [again] = await store.takeOutbox({ now: T0 + LEASE, max: 10, leaseMs: LEASE });
    expect(again).toMatchObject({ key: first!.key, address: first!.address, message: first!.message });
    expect(again!.token).not.toBe(first!.token);
  });

  promiseClause("acknowledgeOutbox: the token of the current take deletes the message; an older take's token does not", async () => {
    const store = await ctx.store();
    await createTargeted(store, "p1");
    const [first] = await store.takeOutbox({ now: T0, max: 10, leaseMs: LEASE });
    const [second] = await store.takeOutbox({ now: T0 + LEASE, max: 10, leaseMs: LEASE });
    await store.acknowledgeOutbox({ deliveries: [first!] });
    expect((await store.snapshot(T0 + LEASE)).outbox).toHaveLength(1);
    await store.acknowledgeOutbox({ deliveries: [second!] });
    expect((await store.snapshot(T0 + LEASE)).outbox).toEqual([]);
    expect(await store.takeOutbox({ now: T0 + 10 * LEASE, max: 10, leaseMs: LEASE })).toEqual([]);
  });

  promiseClause("acknowledgeOutbox: an execute rewritten after its take (a newer version) survives the old take's acknowledgement", async () => {
    const store = await ctx.store();
    await createTargeted(store, "p1");
    const [v0] = await store.takeOutbox({ now: T0, max: 10, leaseMs: LEASE });
    await acquire(store, "p1", { now: T0 + 1 });
    await store.expireTimers({ now: T0 + 1 + TTL, max: 10 });
    await store.acknowledgeOutbox({ deliveries: [v0!] });
    const [v1] = await store.takeOutbox({ now: T0 + 1 + TTL, max: 10, leaseMs: LEASE });
    expect(v1).toMatchObject({ key: "execute:p1", message: { kind: "execute", data: { task: { id: "p1", version: 1 } } } });
  });

  promiseClause("outbox: one execute per task — a re-dispatch replaces the waiting one, at the task's current version", async () => {
    const store = await ctx.store();
    const { retryTimeoutMs } = store.capabilities.settings;
    await createTargeted(store, "p1");
    await holdTask(store, "p2");
    await ok(store, { kind: "task.release", id: "p2", version: 1 }, T0 + 1);
    await store.expireTimers({ now: T0 + retryTimeoutMs, max: 10 });
    await store.expireTimers({ now: T0 + 2 * retryTimeoutMs, max: 10 });
    const now = T0 + 2 * retryTimeoutMs;
    expect((await store.snapshot(now)).outbox).toEqual([
      { kind: "execute", id: "p1", address: TARGET, version: 0, availableAt: now },
      { kind: "execute", id: "p2", address: TARGET, version: 1, availableAt: now },
    ]);
  });

  promiseClause("outbox: an acquired, halted or fulfilled task has no waiting execute", async () => {
    const store = await ctx.store();
    for (const id of ["acquired", "halted", "fulfilled"]) await createTargeted(store, id);
    await acquire(store, "acquired");
    await ok(store, { kind: "task.halt", id: "halted" });
    await settle(store, "fulfilled");
    expect(await store.takeOutbox({ now: T0 + MINUTE, max: 10, leaseMs: LEASE })).toEqual([]);
  });

  promiseClause("outbox: concurrent takers never get the same message", async () => {
    const store = await ctx.store();
    const peer = await ctx.peer(store);
    for (let i = 0; i < 20; i++) await createTargeted(store, `p${String(i).padStart(2, "0")}`);
    const [one, two] = await Promise.all([
      store.takeOutbox({ now: T0, max: 15, leaseMs: LEASE }),
      peer.takeOutbox({ now: T0, max: 15, leaseMs: LEASE }),
    ]);
    const keys = [...one!, ...two!].map((d) => d.key);
    expect(new Set(keys).size).toBe(keys.length);
    expect(keys.length).toBe(20);
  });

  promiseClause("acknowledgeOutbox: acknowledging unknown or already deleted messages is harmless; a key not from takeOutbox is refused naming the field", async () => {
    const store = await ctx.store();
    await createTargeted(store, "p1");
    const taken = await store.takeOutbox({ now: T0, max: 10, leaseMs: LEASE });
    await store.acknowledgeOutbox({ deliveries: taken });
    await store.acknowledgeOutbox({ deliveries: taken });
    await store.acknowledgeOutbox({ deliveries: [{ key: "execute:ghost", address: TARGET, token: 1 }] });
    await store.acknowledgeOutbox({ deliveries: [] });
    await expectInvalid(() => store.acknowledgeOutbox({ deliveries: [{ key: "bogus", address: TARGET, token: 1 }] }), "deliveries[0].key");
    await expectInvalid(() => store.acknowledgeOutbox({ deliveries: [{ key: "execute:p1", address: TARGET, token: -1 }] }), "deliveries[0].token");
    await expectInvalid(() => store.takeOutbox({ now: T0, max: 10, leaseMs: 0 }), "leaseMs");
    await expectInvalid(() => store.takeOutbox({ now: T0, max: 0, leaseMs: LEASE }), "max");
  });

  promiseClause("takeOutbox: a filter takes only the messages whose address it lists or prefixes, leaving the others available", async () => {
    const store = await ctx.store();
    await createTargeted(store, "a", { tags: { "resonate:target": "poll://any@alpha" } });
    await createTargeted(store, "b", { tags: { "resonate:target": "poll://any@beta/w1" } });
    await createTargeted(store, "c", { tags: { "resonate:target": "https://hooks.example/belay" } });
    await createTargeted(store, "d", { tags: { "resonate:target": "poll://any@alphabet" } });
    const filter = { addresses: ["poll://any@alpha"], prefixes: ["poll://any@alpha/", "https://"] };
    expect((await store.takeOutbox({ now: T0, max: 10, leaseMs: LEASE, filter })).map((d) => d.key).sort()).toEqual(["execute:a", "execute:c"]);
    expect((await store.takeOutbox({ now: T0, max: 10, leaseMs: LEASE })).map((d) => d.key).sort()).toEqual(["execute:b", "execute:d"]);
  });

  promiseClause("takeOutbox: each delivery says when its message was written and how often it has been taken", async () => {
    const store = await ctx.store();
    await createTargeted(store, "p1", {}, T0 + 3);
    const [first] = await store.takeOutbox({ now: T0 + 5, max: 10, leaseMs: LEASE });
    expect(first).toMatchObject({ createdAt: T0 + 3, takes: 1 });
    const [second] = await store.takeOutbox({ now: T0 + 5 + LEASE, max: 10, leaseMs: LEASE });
    expect(second).toMatchObject({ createdAt: T0 + 3, takes: 2 });
  });

  promiseClause("releaseOutbox: a taken message handed back is available again at once, to the next taker, with a new token", async () => {
    const store = await ctx.store();
    await createTargeted(store, "p1");
    const [taken] = await store.takeOutbox({ now: T0, max: 10, leaseMs: LEASE });
    await store.releaseOutbox({ deliveries: [taken!], now: T0 + 1 });
    const [again] = await store.takeOutbox({ now: T0 + 1, max: 10, leaseMs: LEASE });
    expect(again).toMatchObject({ key: "execute:p1", takes: 2 });
    expect(again!.token).not.toBe(taken!.token);
    // The first take's token no longer touches the message.
    await store.releaseOutbox({ deliveries: [taken!], now: T0 + 2 });
    await store.acknowledgeOutbox({ deliveries: [taken!] });
    expect(await store.takeOutbox({ now: T0 + 2, max: 10, leaseMs: LEASE })).toEqual([]);
    expect((await store.snapshot(T0 + 2)).outbox).toHaveLength(1);
  });

  promiseClause("subscribeOutbox: a commit that writes outbox messages calls the listener; one that writes none does not; unsubscribe stops it", async () => {
    const store = await ctx.store();
    let calls = 0;
    const unsubscribe = store.subscribeOutbox(() => void calls++);
    await createPromise(store, "quiet");
    await ok(store, { kind: "promise.get", id: "quiet" });
    const quietCalls = calls;
    await createTargeted(store, "loud");
    await waitFor(() => calls > quietCalls);
    unsubscribe();
    const seen = calls;
    await createTargeted(store, "after");
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(calls).toBe(seen);
    expect(quietCalls).toBe(0);
  });

  promiseClause("ping: a working store answers", async () => {
    const store = await ctx.store();
    await expect(store.ping()).resolves.toBeUndefined();
  });
}
