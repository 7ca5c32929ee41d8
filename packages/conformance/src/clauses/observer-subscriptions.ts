import type { Instant, JobStore, NewJob } from "@belay/contract";
import { expect } from "vitest";
import { clause } from "../clause.js";
import { SECOND, T0 } from "../fixtures.js";
import { acquire, deliver, finishJob, lastPosition, positionOf, register, summary } from "../observer-fixtures.js";
import type { SuiteContext } from "../suite-context.js";

/** Finishes one succeeded job per entry, one second apart from T0 + 1 s; returns the ids in order. */
async function finishAll(store: JobStore, jobs: readonly [string, Partial<NewJob>][]): Promise<string[]> {
  for (const [i, [id, fields]] of jobs.entries()) await finishJob(store, id, { type: "succeeded" }, fields, T0 + (i + 1) * SECOND);
  return jobs.map(([id]) => id);
}

/**
 * Proves one filtered subscription whose matching transitions are `matches` (in order) among
 * `all`: only they are pending and delivered; a retry of the first holds the others back until
 * it is due; then everything is delivered and the cursor passes the trailing non-matches.
 */
async function expectHeadOfLine(store: JobStore, observerId: string, all: readonly string[], matches: readonly string[]): Promise<void> {
  const firstAt = T0 + (all.indexOf(matches[0]!) + 1) * SECOND;
  expect(await store.getObserver(observerId)).toMatchObject({ pending: matches.length, oldestPendingAt: firstAt });
  const now: Instant = T0 + 60 * SECOND;
  const head = await acquire(store, observerId, "w1", now, 1);
  expect(summary(head)).toEqual([`${matches[0]}:succeeded`]);
  const retryAt = now + 30 * SECOND;
  const retried = await store.reportObserverDeliveries({
    observerId,
    workerId: "w1",
    outcomes: [{ position: head[0]!.position, outcome: "retry", retryAt }],
    now,
  });
  expect(retried).toMatchObject({ status: "applied" });
  expect(retried.status === "applied" ? retried.cursor : NaN).toBeLessThan(head[0]!.position);
  expect(await acquire(store, observerId, "w1", retryAt - 1), "the retry holds the head of the line").toEqual([]);
  const after = await acquire(store, observerId, "w1", retryAt);
  expect(after.map((d) => [d.jobId, d.deliveryAttempt])).toEqual(matches.map((id, i) => [id, i === 0 ? 2 : 1]));
  expect(await deliver(store, observerId, "w1", after, retryAt)).toBe(await lastPosition(store, all));
  expect(await store.getObserver(observerId)).toMatchObject({ pending: 0, oldestPendingAt: null });
}

export function observerSubscriptionClauses(ctx: SuiteContext): void {
  clause("observers: a job-name subscription matches whole names: names sharing a prefix with it neither deliver nor hold the line; its own retry does", async () => {
    const store = await ctx.store();
    await register(store, "o", ["succeeded"], { jobNames: ["email.send", "a,b"], startAt: "beginning" });
    await register(store, "short", ["succeeded"], { jobNames: ["email"], startAt: "beginning" });
    const all = await finishAll(store, [
      ["n-email", { jobName: "email" }],
      ["n-sen", { jobName: "email.sen" }],
      ["m1", { jobName: "email.send" }],
      ["n-sendx", { jobName: "email.sendx" }],
      ["n-bulk", { jobName: "email.send.bulk" }],
      ["n-x", { jobName: "xemail.send" }],
      ["n-a", { jobName: "a" }],
      ["n-b", { jobName: "b" }],
      ["m2", { jobName: "a,b" }],
      ["m3", { jobName: "email.send" }],
      ["n-upper", { jobName: "Email.send" }],
    ]);
    await expectHeadOfLine(store, "o", all, ["m1", "m2", "m3"]);
    // A subscription that is a prefix of another's name gets only its own name.
    expect(summary(await acquire(store, "short", "w2", T0 + 60 * SECOND))).toEqual(["n-email:succeeded"]);
  });

  clause("observers: a queue subscription matches whole queue names: queues sharing a prefix with it neither deliver nor hold the line; its own retry does", async () => {
    const store = await ctx.store();
    await register(store, "o", ["succeeded"], { queues: ["mail", "x,y"], startAt: "beginning" });
    const all = await finishAll(store, [
      ["n-mai", { queue: "mai" }],
      ["m1", { queue: "mail" }],
      ["n-mailer", { queue: "mailer" }],
      ["n-eu", { queue: "mail.eu" }],
      ["n-xmail", { queue: "xmail" }],
      ["n-x", { queue: "x" }],
      ["m2", { queue: "x,y" }],
      ["n-y", { queue: "y" }],
      ["m3", { queue: "mail" }],
      ["n-upper", { queue: "Mail" }],
    ]);
    await expectHeadOfLine(store, "o", all, ["m1", "m2", "m3"]);
  });

  clause("observers: a registered observer that never claimed reports stale, and its cursor and deliveries are untouched", async () => {
    const store = await ctx.store();
    const { cursor } = await register(store, "o", ["succeeded"], { startAt: "beginning" });
    await finishJob(store, "a", { type: "succeeded" }, {}, T0 + SECOND);
    const position = await positionOf(store, "a", "succeeded");
    for (const outcomes of [[{ position, outcome: "delivered" as const }], [{ position, outcome: "deadLettered" as const, error: "x" }], []]) {
      expect(await store.reportObserverDeliveries({ observerId: "o", workerId: "w1", outcomes, now: T0 + 2 * SECOND })).toEqual({ status: "stale" });
    }
    expect(await store.getObserver("o")).toMatchObject({ cursor, pending: 1, leaseOwner: null, leaseExpiresAt: null, deadLetters: 0 });
    expect(await store.listObserverDeadLetters("o")).toEqual([]);
    const deliveries = await acquire(store, "o", "w1", T0 + 3 * SECOND);
    expect(deliveries.map((d) => [d.jobId, d.deliveryAttempt])).toEqual([["a", 1]]);
  });
}
