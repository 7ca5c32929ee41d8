import type { Instant, ObserverDelivery } from "@belay/contract";
import { expect } from "vitest";
import { clause, clauseNeeding } from "../clause.js";
import { MINUTE, SECOND, T0, claimJobs, enqueueJobs, leaseJob, newJob, report, retryTransient as retrying } from "../fixtures.js";
import { parkAt, settlesWithin } from "../interleaving.js";
import {
  DEAD, OBSERVER_LEASE, acquire, claimFor, deliver, finishJob, lastPosition, oneSuccessObserved, positionOf, register, summary,
} from "../observer-fixtures.js";
import type { SuiteContext } from "../suite-context.js";

export function observerClauses(ctx: SuiteContext): void {
  clause("observers: an unknown observer reads null, claims notFound and reports stale", async () => {
    const store = await ctx.store();
    await finishJob(store, "a");
    expect(await store.getObserver("ghost")).toBeNull();
    expect(await claimFor(store, "ghost", "w1", T0)).toEqual({ status: "notFound" });
    const reported = await store.reportObserverDeliveries({
      observerId: "ghost",
      workerId: "w1",
      outcomes: [{ position: await positionOf(store, "a", "succeeded"), outcome: "delivered" }],
      now: T0,
    });
    expect(reported).toEqual({ status: "stale" });
    expect(await store.getObserver("ghost")).toBeNull();
    expect(await store.listObservers()).toEqual([]);
  });

  clause("observers: a new observer starts at the end by default and sees only later transitions", async () => {
    const store = await ctx.store();
    await finishJob(store, "before", { type: "succeeded" }, {}, T0);
    const registered = await register(store, "o", ["succeeded"], { now: T0 + SECOND });
    expect(registered.status).toBe("created");
    expect(await store.getObserver("o")).toMatchObject({ cursor: registered.cursor, pending: 0, oldestPendingAt: null });
    await finishJob(store, "after", { type: "succeeded" }, {}, T0 + 2 * SECOND);
    const deliveries = await acquire(store, "o", "w1", T0 + 3 * SECOND);
    expect(summary(deliveries)).toEqual(["after:succeeded"]);
  });

  clause("observers: an observer started at the beginning is delivered the whole log in position order", async () => {
    const store = await ctx.store();
    await finishJob(store, "a", { type: "succeeded" }, {}, T0);
    await finishJob(store, "b", DEAD, {}, T0 + SECOND);
    const registered = await register(store, "o", ["scheduled", "leased", "succeeded", "deadLettered"], {
      startAt: "beginning",
      now: T0 + 2 * SECOND,
    });
    expect(registered.status).toBe("created");
    await finishJob(store, "c", { type: "succeeded" }, {}, T0 + 3 * SECOND);

    const expected = [];
    for (const id of ["a", "b", "c"]) expected.push(...(await store.getJobHistory(id)));
    expected.sort((x, y) => x.position - y.position);
    expect(expected).toHaveLength(9);
    const deliveries = await acquire(store, "o", "w1", T0 + 4 * SECOND);
    expect(deliveries.map((d) => [d.position, d.jobId, d.state])).toEqual(expected.map((t) => [t.position, t.jobId, t.state]));
  });

  clause("observers: transitions a history dropped beyond bounds.transitionsPerJob are neither delivered nor pending", async () => {
    const store = await ctx.store({ bounds: { transitionsPerJob: 2 } });
    // scheduled, leased, succeeded: the first has been dropped from the job's history.
    await finishJob(store, "a", { type: "succeeded" }, {}, T0);
    const kept = await store.getJobHistory("a");
    expect(kept.map((t) => t.state)).toEqual(["leased", "succeeded"]);
    await register(store, "o", ["scheduled", "leased", "succeeded"], { startAt: "beginning", now: T0 + SECOND });
    expect(await store.getObserver("o")).toMatchObject({ pending: 2 });
    const deliveries = await acquire(store, "o", "w1", T0 + 2 * SECOND);
    expect(deliveries.map((d) => [d.position, d.state])).toEqual(kept.map((t) => [t.position, t.state]));
  });

  clause("observers: a re-registration keeps the cursor and changes only the subscription", async () => {
    const store = await ctx.store();
    await finishJob(store, "dead1", DEAD, {}, T0);
    await finishJob(store, "ok1", { type: "succeeded" }, {}, T0 + SECOND);
    await register(store, "o", ["succeeded"], { startAt: "beginning", now: T0 + 2 * SECOND });
    const first = await acquire(store, "o", "w1", T0 + 3 * SECOND);
    expect(summary(first)).toEqual(["ok1:succeeded"]);
    const cursor = await deliver(store, "o", "w1", first, T0 + 3 * SECOND);
    expect(cursor).toBe(await positionOf(store, "ok1", "succeeded"));

    // startAt is ignored for an existing observer: the cursor stays where it was.
    const again = await register(store, "o", ["succeeded", "deadLettered"], { startAt: "beginning", now: T0 + 4 * SECOND });
    expect(again).toEqual({ status: "updated", cursor });
    const status = await store.getObserver("o");
    expect(status).toMatchObject({ cursor, subscription: { observerId: "o" } });
    expect([...status!.subscription.states].sort()).toEqual(["deadLettered", "succeeded"]);

    await finishJob(store, "dead2", DEAD, {}, T0 + 5 * SECOND);
    const next = await acquire(store, "o", "w1", T0 + 6 * SECOND);
    expect(summary(next), "dead1 lies before the kept cursor and is not delivered").toEqual(["dead2:deadLettered"]);
  });

  clause("observers: every matching transition is delivered once in position order, then the cursor reads caught up", async () => {
    const store = await ctx.store();
    await register(store, "o", ["succeeded", "deadLettered"], { startAt: "beginning" });
    await finishJob(store, "a", { type: "succeeded" }, {}, T0 + SECOND);
    await finishJob(store, "b", DEAD, {}, T0 + 2 * SECOND);
    await finishJob(store, "c", { type: "succeeded" }, { jobName: "other.job", queue: "q2" }, T0 + 3 * SECOND);

    const deliveries = await acquire(store, "o", "w1", T0 + 10 * SECOND);
    expect(deliveries).toEqual([
      {
        position: await positionOf(store, "a", "succeeded"),
        jobId: "a",
        jobName: "test.job",
        queue: "default",
        state: "succeeded",
        attempt: 1,
        at: T0 + SECOND,
        failureDetail: null,
        deliveryAttempt: 1,
      },
      {
        position: await positionOf(store, "b", "deadLettered"),
        jobId: "b",
        jobName: "test.job",
        queue: "default",
        state: "deadLettered",
        attempt: 1,
        at: T0 + 2 * SECOND,
        failureDetail: null,
        deliveryAttempt: 1,
      },
      {
        position: await positionOf(store, "c", "succeeded"),
        jobId: "c",
        jobName: "other.job",
        queue: "q2",
        state: "succeeded",
        attempt: 1,
        at: T0 + 3 * SECOND,
        failureDetail: null,
        deliveryAttempt: 1,
      },
    ]);
    const last = await lastPosition(store, ["a", "b", "c"]);
    expect(await deliver(store, "o", "w1", deliveries, T0 + 11 * SECOND)).toBe(last);
    expect(await store.getObserver("o")).toMatchObject({ cursor: last, pending: 0, oldestPendingAt: null, deadLetters: 0 });
    expect(await acquire(store, "o", "w1", T0 + 12 * SECOND), "nothing is delivered twice").toEqual([]);
  });

  clause("observers: a live delivery lease excludes a second worker, who reads busy with the owner", async () => {
    const store = await ctx.store();
    await oneSuccessObserved(store);
    const claimed = await claimFor(store, "o", "w1", T0 + SECOND);
    expect(claimed).toMatchObject({ status: "acquired", leaseExpiresAt: T0 + SECOND + OBSERVER_LEASE });
    expect(await store.getObserver("o")).toMatchObject({ leaseOwner: "w1", leaseExpiresAt: T0 + SECOND + OBSERVER_LEASE });

    expect(await claimFor(store, "o", "w2", T0 + 30 * SECOND)).toEqual({ status: "busy", leaseOwner: "w1" });
    const intruder = await store.reportObserverDeliveries({
      observerId: "o",
      workerId: "w2",
      outcomes: [{ position: await positionOf(store, "a", "succeeded"), outcome: "delivered" }],
      now: T0 + 30 * SECOND,
    });
    expect(intruder, "a worker without the lease reports stale").toEqual({ status: "stale" });
    expect(await store.getObserver("o")).toMatchObject({ leaseOwner: "w1", pending: 1 });

    const deliveries = claimed.status === "acquired" ? claimed.deliveries : [];
    expect(summary(deliveries)).toEqual(["a:succeeded"]);
    await deliver(store, "o", "w1", deliveries, T0 + 30 * SECOND);
    expect(await store.getObserver("o")).toMatchObject({ pending: 0 });
  });

  clause("observers: the owner re-claiming renews its delivery lease", async () => {
    const store = await ctx.store();
    await oneSuccessObserved(store);
    expect(await claimFor(store, "o", "w1", T0)).toMatchObject({ status: "acquired", leaseExpiresAt: T0 + OBSERVER_LEASE });
    expect(await claimFor(store, "o", "w1", T0 + 30 * SECOND)).toMatchObject({
      status: "acquired",
      leaseExpiresAt: T0 + 30 * SECOND + OBSERVER_LEASE,
    });
    expect(await claimFor(store, "o", "w2", T0 + OBSERVER_LEASE), "the first lease's expiry no longer frees it").toEqual({
      status: "busy",
      leaseOwner: "w1",
    });
  });

  clause("observers: after the delivery lease lapses another worker is handed the same transitions, deliveryAttempt + 1", async () => {
    const store = await ctx.store();
    await register(store, "o", ["succeeded"], { startAt: "beginning" });
    await finishJob(store, "a", { type: "succeeded" }, {}, T0);
    await finishJob(store, "b", { type: "succeeded" }, {}, T0 + SECOND);
    const first = await acquire(store, "o", "w1", T0 + 2 * SECOND);
    expect(first.map((d) => [d.jobId, d.deliveryAttempt])).toEqual([
      ["a", 1],
      ["b", 1],
    ]);
    const second = await acquire(store, "o", "w2", T0 + 2 * SECOND + OBSERVER_LEASE);
    expect(second.map((d) => [d.position, d.jobId, d.deliveryAttempt])).toEqual(first.map((d) => [d.position, d.jobId, 2]));
    expect(await store.getObserver("o")).toMatchObject({ leaseOwner: "w2", pending: 2 });
  });

  clause("observers: a deliverer whose lease lapsed and was taken over cannot move the cursor", async () => {
    const store = await ctx.store();
    await oneSuccessObserved(store);
    const mine = await acquire(store, "o", "w1", T0 + SECOND);
    const theirs = await acquire(store, "o", "w2", T0 + SECOND + OBSERVER_LEASE);
    const { cursor: start } = (await store.getObserver("o"))!;
    expect(start).toBeLessThan(await positionOf(store, "a", "succeeded"));
    const late = await store.reportObserverDeliveries({
      observerId: "o",
      workerId: "w1",
      outcomes: mine.map((d) => ({ position: d.position, outcome: "delivered" as const })),
      now: T0 + SECOND + OBSERVER_LEASE + 1,
    });
    expect(late).toEqual({ status: "stale" });
    expect(await store.getObserver("o")).toMatchObject({ cursor: start, pending: 1, leaseOwner: "w2" });

    expect(await deliver(store, "o", "w2", theirs, T0 + SECOND + OBSERVER_LEASE + 2)).toBe(await positionOf(store, "a", "succeeded"));
  });

  clause("observers: a delivery lease is dead at exactly its expiry instant", async () => {
    const store = await ctx.store();
    await oneSuccessObserved(store);
    const claimed = await claimFor(store, "o", "w1", T0 + SECOND);
    expect(claimed).toMatchObject({ status: "acquired" });
    const { cursor: start } = (await store.getObserver("o"))!;
    expect(start).toBeLessThan(await positionOf(store, "a", "succeeded"));
    const expiry = T0 + SECOND + OBSERVER_LEASE;
    const mine = claimed.status === "acquired" ? claimed.deliveries : [];
    const reportAt = (now: Instant) =>
      store.reportObserverDeliveries({
        observerId: "o",
        workerId: "w1",
        outcomes: mine.map((d) => ({ position: d.position, outcome: "delivered" as const })),
        now,
      });

    expect(await reportAt(expiry), "the owner's own report at expiry").toEqual({ status: "stale" });
    expect(await store.getObserver("o")).toMatchObject({ cursor: start, pending: 1 });
    expect(await claimFor(store, "o", "w2", expiry - 1)).toEqual({ status: "busy", leaseOwner: "w1" });
    const taken = await acquire(store, "o", "w2", expiry);
    expect(taken.map((d) => [d.jobId, d.deliveryAttempt])).toEqual([["a", 2]]);
    expect(await reportAt(expiry), "the old owner after the takeover").toEqual({ status: "stale" });
    expect(await store.getObserver("o")).toMatchObject({ cursor: start, leaseOwner: "w2", leaseExpiresAt: expiry + OBSERVER_LEASE });
  });

  clause("observers: a retry holds the head of the line until its retryAt, then is redelivered first", async () => {
    const store = await ctx.store();
    const { cursor: start } = await register(store, "o", ["succeeded"], { startAt: "beginning" });
    await finishJob(store, "a", { type: "succeeded" }, {}, T0);
    await finishJob(store, "b", { type: "succeeded" }, {}, T0 + SECOND);
    await finishJob(store, "c", { type: "succeeded" }, {}, T0 + 2 * SECOND);
    const retryAt = T0 + 40 * SECOND;

    const head = await acquire(store, "o", "w1", T0 + 10 * SECOND, 1);
    expect(summary(head)).toEqual(["a:succeeded"]);
    const retried = await store.reportObserverDeliveries({
      observerId: "o",
      workerId: "w1",
      outcomes: [{ position: head[0]!.position, outcome: "retry", retryAt, error: "callback timed out" }],
      now: T0 + 10 * SECOND,
    });
    // The cursor may pass a's non-matching transitions, never a's retried one.
    expect(retried).toMatchObject({ status: "applied" });
    const held = retried.status === "applied" ? retried.cursor : NaN;
    expect(held).toBeGreaterThanOrEqual(start);
    expect(held).toBeLessThan(head[0]!.position);
    expect(await store.getObserver("o")).toMatchObject({ cursor: held, pending: 3 });

    expect(await acquire(store, "o", "w1", T0 + 20 * SECOND), "nothing passes a retry not yet due").toEqual([]);
    expect(await acquire(store, "o", "w1", retryAt - 1)).toEqual([]);
    const after = await acquire(store, "o", "w1", retryAt);
    expect(after.map((d) => [d.jobId, d.deliveryAttempt])).toEqual([
      ["a", 2],
      ["b", 1],
      ["c", 1],
    ]);
    expect(await deliver(store, "o", "w1", after, retryAt)).toBe(await positionOf(store, "c", "succeeded"));
  });

  clause("observers: a dead-lettered delivery is recorded with its facts and the cursor moves past it", async () => {
    const store = await ctx.store();
    await register(store, "o", ["succeeded", "deadLettered"], { startAt: "beginning" });
    await finishJob(store, "a", DEAD, {}, T0);
    await finishJob(store, "b", { type: "succeeded" }, {}, T0 + SECOND);
    const aPosition = await positionOf(store, "a", "deadLettered");
    const bPosition = await positionOf(store, "b", "succeeded");

    const first = await acquire(store, "o", "w1", T0 + 10 * SECOND);
    expect(summary(first)).toEqual(["a:deadLettered", "b:succeeded"]);
    await store.reportObserverDeliveries({
      observerId: "o",
      workerId: "w1",
      outcomes: [
        { position: aPosition, outcome: "retry", retryAt: T0 + 20 * SECOND },
        { position: bPosition, outcome: "delivered" },
      ],
      now: T0 + 10 * SECOND,
    });
    const second = await acquire(store, "o", "w1", T0 + 20 * SECOND);
    expect(second.map((d) => [d.jobId, d.deliveryAttempt]), "b is resolved and not handed out again").toEqual([["a", 2]]);
    const result = await store.reportObserverDeliveries({
      observerId: "o",
      workerId: "w1",
      outcomes: [{ position: aPosition, outcome: "deadLettered", error: "handler exploded" }],
      now: T0 + 21 * SECOND,
    });
    expect(result).toEqual({ status: "applied", cursor: bPosition });
    expect(await store.listObserverDeadLetters("o")).toEqual([
      {
        observerId: "o",
        position: aPosition,
        jobId: "a",
        state: "deadLettered",
        attempt: 1,
        at: T0,
        deliveryAttempts: 2,
        deadLetteredAt: T0 + 21 * SECOND,
        error: "handler exploded",
      },
    ]);
    expect(await store.getObserver("o")).toMatchObject({ cursor: bPosition, pending: 0, oldestPendingAt: null, deadLetters: 1 });
    expect(await acquire(store, "o", "w1", T0 + 22 * SECOND), "a dead letter is not redelivered").toEqual([]);
  });

  clause("observers: a dead letter is kept after its job is purged", async () => {
    const store = await ctx.store();
    await oneSuccessObserved(store);
    const [delivery] = await acquire(store, "o", "w1", T0 + SECOND);
    await store.reportObserverDeliveries({
      observerId: "o",
      workerId: "w1",
      outcomes: [{ position: delivery!.position, outcome: "deadLettered", error: "gave up" }],
      now: T0 + SECOND,
    });
    expect(await store.purgeTerminal({ retentionClass: "succeededOrCancelled", before: T0 + MINUTE, max: 10 })).toEqual({ purged: 1 });
    expect(await store.getJob("a")).toBeNull();
    expect(await store.listObserverDeadLetters("o")).toEqual([
      expect.objectContaining({ observerId: "o", position: delivery!.position, jobId: "a", state: "succeeded", error: "gave up" }),
    ]);
  });

  clause("observers: subscriptions filter by state, job name and queue; non-matching transitions neither block the cursor nor count as lag", async () => {
    const store = await ctx.store();
    await register(store, "o", ["succeeded"], { jobNames: ["email.send"], queues: ["mail"], startAt: "beginning" });
    await finishJob(store, "match", { type: "succeeded" }, { jobName: "email.send", queue: "mail" }, T0 + SECOND);
    await finishJob(store, "wrongName", { type: "succeeded" }, { jobName: "sms.send", queue: "mail" }, T0 + 2 * SECOND);
    await finishJob(store, "wrongQueue", { type: "succeeded" }, { jobName: "email.send", queue: "other" }, T0 + 3 * SECOND);
    await finishJob(store, "wrongState", DEAD, { jobName: "email.send", queue: "mail" }, T0 + 4 * SECOND);

    expect(await store.getObserver("o")).toMatchObject({ pending: 1, oldestPendingAt: T0 + SECOND });
    const deliveries = await acquire(store, "o", "w1", T0 + 10 * SECOND);
    expect(summary(deliveries)).toEqual(["match:succeeded"]);
    const last = await lastPosition(store, ["match", "wrongName", "wrongQueue", "wrongState"]);
    expect(await deliver(store, "o", "w1", deliveries, T0 + 10 * SECOND), "the cursor passes the trailing non-matching transitions").toBe(last);
    expect(await store.getObserver("o")).toMatchObject({ cursor: last, pending: 0, oldestPendingAt: null });
  });

  clause("observers: one observer's claims and reports never touch another observer's cursor or deliveries", async () => {
    const store = await ctx.store();
    const { cursor: startB } = await register(store, "B", ["succeeded"], { startAt: "beginning" });
    await register(store, "A", ["succeeded"], { startAt: "beginning" });
    await finishJob(store, "a", { type: "succeeded" }, {}, T0);
    await finishJob(store, "b", { type: "succeeded" }, {}, T0 + SECOND);

    const forA = await acquire(store, "A", "w1", T0 + 10 * SECOND);
    const cursorA = await deliver(store, "A", "w1", forA, T0 + 10 * SECOND);
    expect(await store.getObserver("B")).toMatchObject({ cursor: startB, pending: 2, leaseOwner: null, oldestPendingAt: T0 });

    const forB = await acquire(store, "B", "w2", T0 + 11 * SECOND);
    expect(forB.map((d) => [d.jobId, d.deliveryAttempt]), "A's lease does not make B busy").toEqual([
      ["a", 1],
      ["b", 1],
    ]);
    expect(await store.getObserver("A")).toMatchObject({ cursor: cursorA, pending: 0, leaseOwner: "w1" });
    expect(await acquire(store, "A", "w1", T0 + 12 * SECOND)).toEqual([]);
  });

  clause("observers: lag counts the matching backlog and its oldest instant, then reads zero once delivered", async () => {
    const store = await ctx.store();
    await register(store, "o", ["succeeded"], { startAt: "beginning" });
    expect(await store.getObserver("o")).toMatchObject({ pending: 0, oldestPendingAt: null });
    await finishJob(store, "a", { type: "succeeded" }, {}, T0 + SECOND);
    await finishJob(store, "b", { type: "succeeded" }, {}, T0 + 5 * SECOND);
    await finishJob(store, "c", DEAD, {}, T0 + 7 * SECOND);
    expect(await store.getObserver("o")).toMatchObject({ pending: 2, oldestPendingAt: T0 + SECOND });

    const first = await acquire(store, "o", "w1", T0 + 10 * SECOND, 1);
    expect(await store.getObserver("o"), "handed out but not reported is still pending").toMatchObject({ pending: 2 });
    await deliver(store, "o", "w1", first, T0 + 10 * SECOND);
    expect(await store.getObserver("o")).toMatchObject({ pending: 1, oldestPendingAt: T0 + 5 * SECOND });
    const rest = await acquire(store, "o", "w1", T0 + 11 * SECOND);
    await deliver(store, "o", "w1", rest, T0 + 11 * SECOND);
    expect(await store.getObserver("o")).toMatchObject({ pending: 0, oldestPendingAt: null });
  });

  clause("observers: a failed attempt's transition is delivered with its failure detail", async () => {
    const store = await ctx.store();
    await register(store, "o", ["scheduled", "deadLettered"], { startAt: "beginning" });
    const first = await leaseJob(store, "a");
    await report(store, first, { type: "failed", retryAt: T0 + SECOND, failureDetail: "Error: first try\n    at handler" });
    const [second] = await claimJobs(store, { now: T0 + SECOND });
    await report(store, second!, { type: "failed", retryAt: null, failureDetail: "Error: second try" }, T0 + SECOND);

    const deliveries = await acquire(store, "o", "w1", T0 + 2 * SECOND);
    expect(deliveries.map((d) => [d.state, d.attempt, d.failureDetail])).toEqual([
      ["scheduled", 0, null],
      ["scheduled", 1, "Error: first try\n    at handler"],
      ["deadLettered", 2, "Error: second try"],
    ]);
  });

  clause("observers: with history off there is nothing to observe", async () => {
    const store = await ctx.store({ historyPolicy: "off" });
    await register(store, "o", ["scheduled", "leased", "succeeded", "deadLettered"], { startAt: "beginning" });
    await finishJob(store, "a", { type: "succeeded" }, {}, T0);
    await finishJob(store, "b", DEAD, {}, T0 + SECOND);
    expect(await store.getObserver("o")).toMatchObject({ pending: 0, oldestPendingAt: null });
    expect(await acquire(store, "o", "w1", T0 + 2 * SECOND)).toEqual([]);
  });

  clause("observers: a claim hands out at most max deliveries, clamped to bounds.claimBatch", async () => {
    const store = await ctx.store({ bounds: { claimBatch: 2 } });
    await register(store, "o", ["succeeded"], { startAt: "beginning" });
    for (const [i, id] of ["a", "b", "c"].entries()) await finishJob(store, id, { type: "succeeded" }, {}, T0 + i * SECOND);
    const first = await acquire(store, "o", "w1", T0 + 10 * SECOND, 100);
    expect(summary(first)).toEqual(["a:succeeded", "b:succeeded"]);
    await deliver(store, "o", "w1", first, T0 + 10 * SECOND);
    expect(summary(await acquire(store, "o", "w1", T0 + 11 * SECOND, 100))).toEqual(["c:succeeded"]);
  });

  clause("observers: removeObserver removes it; a second remove is notFound", async () => {
    const store = await ctx.store();
    await register(store, "o", ["succeeded"], { startAt: "beginning" });
    await register(store, "keep", ["succeeded"]);
    await finishJob(store, "a");
    expect(await store.removeObserver({ observerId: "o" })).toEqual({ status: "removed" });
    expect(await store.getObserver("o")).toBeNull();
    expect((await store.listObservers()).map((o) => o.subscription.observerId)).toEqual(["keep"]);
    expect(await claimFor(store, "o", "w1", T0 + SECOND)).toEqual({ status: "notFound" });
    expect(await store.removeObserver({ observerId: "o" })).toEqual({ status: "notFound" });
    expect((await register(store, "o", ["succeeded"], { now: T0 + 2 * SECOND })).status, "the id is free again").toBe("created");
  });

  clauseNeeding(ctx, "stepHook", "observers: a transition that commits late is never skipped", async () => {
    const store = await ctx.store();
    const peer = await ctx.peer(store);
    await register(store, "o", ["succeeded"]);
    await enqueueJobs(store, [newJob("a"), newJob("b")]);
    const claimed = await claimJobs(store);
    const a = claimed.find((j) => j.id === "a")!;
    const b = claimed.find((j) => j.id === "b")!;
    expect(a && b).toBeTruthy();

    // Park A's outcome inside its transaction, past its first internal step.
    let steps = 0;
    const parked = parkAt(ctx, store, (point) => point.operation === "reportOutcomes" && ++steps >= 2);
    const reportA = store.reportOutcomes({
      reports: [{ jobId: "a", workerId: "w1", attempt: a.attempt, outcome: { type: "succeeded" } }],
      now: T0 + SECOND,
    });
    // A deadline, not a speed: only a report that never gets there fails.
    expect(await settlesWithin(parked.reached, 30_000), "A's report reaches a step after its first").toBe(true);

    // Meanwhile B's outcome commits (or waits for A) and an observer cycle runs.
    const delivered: ObserverDelivery[] = [];
    const cycle = async (now: Instant): Promise<number> => {
      const result = await retrying(() => claimFor(peer, "o", "ow", now));
      expect(result.status).toBe("acquired");
      if (result.status !== "acquired" || result.deliveries.length === 0) return 0;
      delivered.push(...result.deliveries);
      const outcomes = result.deliveries.map((d) => ({ position: d.position, outcome: "delivered" as const }));
      const reported = await retrying(() => peer.reportObserverDeliveries({ observerId: "o", workerId: "ow", outcomes, now }));
      expect(reported.status).toBe("applied");
      return result.deliveries.length;
    };
    const meanwhile = (async () => {
      const [resultB] = await retrying(() =>
        peer.reportOutcomes({
          reports: [{ jobId: "b", workerId: "w1", attempt: b.attempt, outcome: { type: "succeeded" } }],
          now: T0 + 2 * SECOND,
        }),
      );
      expect(resultB).toMatchObject({ status: "applied" });
      await cycle(T0 + 3 * SECOND);
    })();
    await settlesWithin(meanwhile, 200);
    parked.release();
    expect(await reportA).toEqual([{ jobId: "a", attempt: expect.any(Number), status: "applied", state: "succeeded" }]);
    await meanwhile;
    ctx.setStepHook(store, null);

    // Drain: whatever order the writes committed in, each terminal transition arrives exactly once.
    for (let round = 0; round < 10 && (await cycle(T0 + 4 * SECOND)) > 0; round++);
    expect(delivered.map((d) => `${d.jobId}:${d.state}`).sort()).toEqual(["a:succeeded", "b:succeeded"]);
    const status = await store.getObserver("o");
    expect(status).toMatchObject({ pending: 0, oldestPendingAt: null });
    expect(status!.cursor).toBeGreaterThanOrEqual(await lastPosition(store, ["a", "b"]));
  });
}
