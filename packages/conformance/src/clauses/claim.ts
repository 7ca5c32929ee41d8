import { type ClaimRequest, type ClaimResult, type Instant, type JobStore, isBelayError } from "@belay/contract";
import { expect } from "vitest";
import { clause, clauseNeeding } from "../clause.js";
import {
  DEFAULT_RETRY, LEASE, MINUTE, SECOND, T0, claimJobs, enqueueJobs, expectBelayError, leaseJob, newJob, report, stateOf,
} from "../fixtures.js";
import { parkAt, settlesWithin } from "../interleaving.js";
import type { SuiteContext } from "../suite-context.js";

/** A full claim (jobs and nextDueAt) with the suite's defaults. */
function claimAt(store: JobStore, request: Partial<ClaimRequest> = {}): Promise<ClaimResult> {
  return store.claim({ workerId: "w1", queues: ["default"], max: 32, leaseMs: LEASE, now: T0, ...request });
}

/** A claim retried on retriable conflicts (which commit nothing), as a worker would. */
async function claimRetrying(store: JobStore, request: ClaimRequest): Promise<ClaimResult> {
  for (let tries = 1; ; tries++) {
    try {
      return await store.claim(request);
    } catch (error) {
      if (tries >= 20 || !isBelayError(error, "BELAY_TRANSIENT_STORE")) throw error;
    }
  }
}

/** Ids of the jobs of `queue` currently leased. */
async function leasedIds(store: JobStore, queue = "default"): Promise<string[]> {
  const page = await store.listJobs({ states: ["leased"], queues: [queue] });
  return page.jobs.map((j) => j.id);
}

/** The ids of claimed jobs, sorted: for clauses about which jobs a claim takes (its order has a clause of its own). */
function ids(result: ClaimResult | readonly { readonly id: string }[]): string[] {
  const jobs = "jobs" in result ? result.jobs : result;
  return jobs.map((j) => j.id).sort();
}

async function limitQueue(store: JobStore, queue: string, limit: number | null, now: Instant = T0): Promise<void> {
  expect(await store.setConcurrencyLimit({ queue, limit, actor: "ops", now })).toEqual({ status: "applied" });
}

export function claimClauses(ctx: SuiteContext): void {
  clause("claim: only due jobs of the given queues are taken; due exactly at now is claimable, 1 ms later is not", async () => {
    const store = await ctx.store();
    await enqueueJobs(store, [
      newJob("now", { dueAt: T0 }),
      newJob("later", { dueAt: T0 + 1 }),
      newJob("past", { dueAt: T0 - SECOND }),
      newJob("other", { queue: "other", dueAt: T0 - SECOND }),
    ]);
    const claimed = await claimJobs(store, { now: T0 });
    expect(ids(claimed)).toEqual(["now", "past"]);
    expect(await stateOf(store, "later")).toBe("scheduled");
    expect(await stateOf(store, "other")).toBe("scheduled");
    expect(ids(await claimJobs(store, { now: T0 + 1 }))).toEqual(["later"]);
  });

  clause("claim: oldest due first, ties broken by enqueue order", async () => {
    const store = await ctx.store();
    // Enqueue order: zeta, mid, alpha, early — ids deliberately not in either order.
    await enqueueJobs(store, [
      newJob("zeta", { dueAt: T0 + 2 }),
      newJob("mid", { dueAt: T0 + 1 }),
      newJob("alpha", { dueAt: T0 + 2 }),
      newJob("early", { dueAt: T0 }),
    ]);
    const order: string[] = [];
    for (let i = 0; i < 4; i++) order.push(...ids(await claimJobs(store, { max: 1, now: T0 + 10 })));
    expect(order).toEqual(["early", "mid", "zeta", "alpha"]);
  });

  clause("claim: the result lists the jobs in claim order: queues as given, oldest due first within a queue, ties in enqueue order", async () => {
    const store = await ctx.store();
    // Enqueue order (seq) unlike due order, due order unlike queue order, ids unlike any of them.
    await enqueueJobs(store, [
      newJob("m", { queue: "second", dueAt: T0 - 3 * SECOND }),
      newJob("k", { queue: "first", dueAt: T0 }),
      newJob("z", { queue: "first", dueAt: T0 - 2 * SECOND }),
      newJob("b", { queue: "second", dueAt: T0 - 3 * SECOND }),
      newJob("a", { queue: "first", dueAt: T0 }),
      newJob("q", { queue: "second", dueAt: T0 - 5 * SECOND }),
    ]);
    const result = await claimAt(store, { queues: ["first", "second"], max: 5 });
    expect(result.jobs.map((j) => j.id)).toEqual(["z", "k", "a", "q", "m"]);
    const rest = await claimAt(store, { queues: ["second", "first"], max: 5 });
    expect(rest.jobs.map((j) => j.id)).toEqual(["b"]);
  });

  clause("claim: at most max jobs are claimed", async () => {
    const store = await ctx.store();
    await enqueueJobs(store, ["a", "b", "c", "d", "e"].map((id) => newJob(id)));
    expect(ids(await claimJobs(store, { max: 2 }))).toEqual(["a", "b"]);
    expect(await leasedIds(store)).toHaveLength(2);
    expect(ids(await claimJobs(store, { max: 1 }))).toEqual(["c"]);
    expect(await leasedIds(store)).toHaveLength(3);
  });

  clause("claim: max is clamped to bounds.claimBatch, not refused", async () => {
    const store = await ctx.store({ bounds: { claimBatch: 3 } });
    await enqueueJobs(store, ["a", "b", "c", "d", "e"].map((id) => newJob(id)));
    const first = await claimJobs(store, { max: 100 });
    expect(ids(first)).toEqual(["a", "b", "c"]);
    expect(await leasedIds(store)).toHaveLength(3);
    expect(ids(await claimJobs(store, { max: 100 }))).toEqual(["d", "e"]);
  });

  clause("claim: queues are drained in the given order, never re-sorted", async () => {
    const store = await ctx.store();
    await enqueueJobs(store, [
      // "aa" sorts first by name and holds the oldest work; the request still serves "zz" first.
      newJob("aa1", { queue: "aa", dueAt: T0 - 2 * SECOND }),
      newJob("aa2", { queue: "aa", dueAt: T0 - 2 * SECOND }),
      newJob("zz1", { queue: "zz", dueAt: T0 }),
      newJob("zz2", { queue: "zz", dueAt: T0 }),
    ]);
    const first = await claimJobs(store, { queues: ["zz", "aa"], max: 3 });
    expect(ids(first)).toEqual(["aa1", "zz1", "zz2"]);
    expect(await stateOf(store, "aa2")).toBe("scheduled");

    const other = await ctx.store();
    await enqueueJobs(other, [newJob("zz1", { queue: "zz", dueAt: T0 - SECOND }), newJob("aa1", { queue: "aa", dueAt: T0 })]);
    expect(ids(await claimJobs(other, { queues: ["aa", "zz"], max: 1 }))).toEqual(["aa1"]);
  });

  clause("claim: a claimed job becomes leased: attempt + 1, owner, lease to now + leaseMs, one transition", async () => {
    const store = await ctx.store();
    await enqueueJobs(store, [newJob("j1")]);
    const historyBefore = await store.getJobHistory("j1");
    const [claimed] = await claimJobs(store, { workerId: "w7", leaseMs: 45 * SECOND, now: T0 + 5 });
    expect(claimed).toMatchObject({ id: "j1", attempt: 1, leaseExpiresAt: T0 + 5 + 45 * SECOND });
    expect(await store.getJob("j1")).toMatchObject({
      state: "leased",
      attempt: 1,
      leaseOwner: "w7",
      leaseExpiresAt: T0 + 5 + 45 * SECOND,
      cancelRequested: false,
      terminalAt: null,
    });
    const history = await store.getJobHistory("j1");
    expect(history).toHaveLength(historyBefore.length + 1);
    expect(history.at(-1)).toMatchObject({ jobId: "j1", state: "leased", attempt: 1, at: T0 + 5 });
  });

  clause("claim: every claim raises the attempt by one and adds exactly one transition", async () => {
    const store = await ctx.store();
    const first = await leaseJob(store, "j1");
    expect(first.attempt).toBe(1);
    expect(await report(store, first, { type: "failed", retryAt: T0 + SECOND })).toMatchObject({ status: "applied", state: "scheduled" });
    const before = await store.getJobHistory("j1");
    const [second] = await claimJobs(store, { workerId: "w2", now: T0 + SECOND });
    expect(second).toMatchObject({ id: "j1", attempt: 2, leaseExpiresAt: T0 + SECOND + LEASE });
    expect(await store.getJob("j1")).toMatchObject({ state: "leased", attempt: 2, leaseOwner: "w2" });
    const after = await store.getJobHistory("j1");
    expect(after).toHaveLength(before.length + 1);
    expect(after.at(-1)).toMatchObject({ state: "leased", attempt: 2, at: T0 + SECOND });
  });

  clause("claim: the claimed record carries payload, tags, parents, dependency mode, trace context and releases", async () => {
    const store = await ctx.store();
    const parent = await leaseJob(store, "p");
    await report(store, parent, { type: "succeeded" });
    const tags = [{ key: "", value: "urgent" }, { key: "tenant", value: "acme" }];
    await enqueueJobs(
      store,
      [
        newJob("c", {
          jobName: "email.send",
          queue: "mail",
          payload: '{"to":"a@b.c", "n": 1.50}',
          dueAt: T0 + 3,
          parentIds: ["p"],
          dependencyMode: "onAnyTerminal",
          tags,
          traceContext: "00-abc-01",
        }),
      ],
      T0 + 2,
    );
    const [first] = await claimJobs(store, { queues: ["mail"], now: T0 + 3 });
    expect(first).toMatchObject({ id: "c", releases: 0, attempt: 1 });
    expect(await store.release({ workerId: "w1", leases: [{ jobId: "c", attempt: 1 }], now: T0 + 4 })).toEqual([
      { jobId: "c", status: "released" },
    ]);
    const stored = await store.getJob("c");
    const [claimed] = await claimJobs(store, { queues: ["mail"], now: T0 + 5 });
    expect(claimed).toMatchObject({
      id: "c",
      seq: stored!.seq,
      jobName: "email.send",
      queue: "mail",
      payload: '{"to":"a@b.c", "n": 1.50}',
      attempt: 2,
      releases: 1,
      dueAt: stored!.dueAt,
      enqueuedAt: T0 + 2,
      leaseExpiresAt: T0 + 5 + LEASE,
      tags,
      parentIds: ["p"],
      dependencyMode: "onAnyTerminal",
      traceContext: "00-abc-01",
      scheduleId: null,
      workflowId: null,
    });
  });

  clause("claim: a job awaiting its parents is never claimed", async () => {
    const store = await ctx.store();
    await enqueueJobs(store, [newJob("p", { dueAt: T0 + SECOND }), newJob("c", { parentIds: ["p"], dueAt: T0 })]);
    expect(await stateOf(store, "c")).toBe("awaitingParents");
    expect(await claimJobs(store, { now: T0 })).toEqual([]);
    expect(ids(await claimJobs(store, { now: T0 + SECOND }))).toEqual(["p"]);
    // The parent is leased, not terminal: the child still waits.
    expect(await claimJobs(store, { now: T0 + 2 * SECOND })).toEqual([]);
    expect(await stateOf(store, "c")).toBe("awaitingParents");
  });

  clause("claim: a paused queue yields nothing, its leased jobs are left alone, and resume restores it", async () => {
    const store = await ctx.store();
    await enqueueJobs(store, [newJob("held"), newJob("j1"), newJob("j2"), newJob("o1", { queue: "other" })]);
    expect(ids(await claimJobs(store, { max: 1 }))).toEqual(["held"]);
    await store.pauseQueue({ queue: "default", actor: "ops", now: T0 });
    expect(await store.getJob("held")).toMatchObject({ state: "leased", leaseOwner: "w1", leaseExpiresAt: T0 + LEASE });
    expect(ids(await claimJobs(store, { queues: ["default", "other"], now: T0 + 1 }))).toEqual(["o1"]);
    expect(await stateOf(store, "j1")).toBe("scheduled");
    await store.resumeQueue({ queue: "default", actor: "ops", now: T0 + 2 });
    expect(ids(await claimJobs(store, { now: T0 + 3 }))).toEqual(["j1", "j2"]);
  });

  clause("claim: a concurrency limit caps the queue's leased jobs across several claims", async () => {
    const store = await ctx.store();
    await enqueueJobs(store, ["a", "b", "c", "d", "e"].map((id) => newJob(id)).concat([newJob("o1", { queue: "other" })]));
    await limitQueue(store, "default", 2);
    expect(ids(await claimJobs(store, { max: 1, workerId: "w1" }))).toEqual(["a"]);
    expect(ids(await claimJobs(store, { max: 10, workerId: "w2" }))).toEqual(["b"]);
    // The limit is per queue: other queues in the same claim are still served.
    expect(ids(await claimJobs(store, { queues: ["default", "other"], max: 10, workerId: "w3" }))).toEqual(["o1"]);
    expect(await claimJobs(store, { max: 10, workerId: "w4", now: T0 + 1 })).toEqual([]);
    expect((await leasedIds(store)).sort()).toEqual(["a", "b"]);
  });

  clause("claim: a terminal outcome frees a concurrency slot", async () => {
    const store = await ctx.store();
    await enqueueJobs(store, [newJob("a"), newJob("b")]);
    await limitQueue(store, "default", 1);
    const [a] = await claimJobs(store);
    expect(a!.id).toBe("a");
    expect(await claimJobs(store, { workerId: "w2" })).toEqual([]);
    expect(await report(store, a!, { type: "succeeded" }, T0 + 1)).toMatchObject({ status: "applied" });
    expect(ids(await claimJobs(store, { workerId: "w2", now: T0 + 1 }))).toEqual(["b"]);
  });

  clause("claim: lease expiry (expireLeases) frees a concurrency slot", async () => {
    const store = await ctx.store();
    await enqueueJobs(store, [newJob("a"), newJob("b")]);
    await limitQueue(store, "default", 1);
    expect(ids(await claimJobs(store))).toEqual(["a"]);
    expect(await claimJobs(store, { workerId: "w2", now: T0 + 1 })).toEqual([]);
    const { expired } = await store.expireLeases({ now: T0 + LEASE, max: 10, retry: DEFAULT_RETRY });
    expect(expired).toEqual([{ jobId: "a", state: "scheduled" }]);
    expect(ids(await claimJobs(store, { workerId: "w2", now: T0 + LEASE }))).toEqual(["b"]);
  });

  clause("claim: a limit set mid-life is honoured on the next claim, and removing it lifts the cap", async () => {
    const store = await ctx.store();
    await enqueueJobs(store, ["a", "b", "c", "d", "e", "f"].map((id) => newJob(id)));
    const first = await claimJobs(store, { max: 3 });
    expect(first).toHaveLength(3);
    await limitQueue(store, "default", 2, T0 + 1);
    expect(await claimJobs(store, { workerId: "w2", now: T0 + 2 })).toEqual([]);
    // Two of the three finish: usage 1 of 2 leaves exactly one slot.
    await report(store, first[0]!, { type: "succeeded" }, T0 + 3);
    await report(store, first[1]!, { type: "cancelled" }, T0 + 3);
    expect(ids(await claimJobs(store, { workerId: "w2", now: T0 + 4 }))).toEqual(["d"]);
    expect(await claimJobs(store, { workerId: "w2", now: T0 + 4 })).toEqual([]);
    await limitQueue(store, "default", null, T0 + 5);
    expect(ids(await claimJobs(store, { workerId: "w3", now: T0 + 6 }))).toEqual(["e", "f"]);
  });

  clause("claim: concurrent claimers never receive the same job and together claim each exactly once", async () => {
    const store = await ctx.store();
    const peer = await ctx.peer(store);
    const all = Array.from({ length: 24 }, (_, i) => `j${String(i).padStart(2, "0")}`);
    await enqueueJobs(store, all.map((id) => newJob(id)));
    const claimers = Array.from({ length: 8 }, (_, i) =>
      claimRetrying(i % 2 === 0 ? store : peer, { workerId: `w${i}`, queues: ["default"], max: 3, leaseMs: LEASE, now: T0 }),
    );
    const results = await Promise.all(claimers);
    const taken = results.flatMap((r, i) => r.jobs.map((j) => ({ id: j.id, workerId: `w${i}` })));
    expect(taken.map((t) => t.id).sort()).toEqual(all);
    for (const { id, workerId } of taken) {
      expect(await store.getJob(id), id).toMatchObject({ state: "leased", leaseOwner: workerId, attempt: 1 });
    }
    expect(await claimJobs(store, { workerId: "late" })).toEqual([]);
  });

  clause("claim: nextDueAt is null when nothing is known", async () => {
    const store = await ctx.store();
    expect(await claimAt(store)).toEqual({ jobs: [], nextDueAt: null });
    // Work in queues not served, leased or finished work, and jobs awaiting parents are not due work.
    await enqueueJobs(store, [newJob("elsewhere", { queue: "other" }), newJob("p"), newJob("c", { parentIds: ["p"] })]);
    const { jobs } = await claimAt(store, { max: 1 });
    expect(ids(jobs)).toEqual(["p"]);
    expect(await claimAt(store, { now: T0 + 1 })).toEqual({ jobs: [], nextDueAt: null });
  });

  clause("claim: nextDueAt is the earliest future due time in the served queues", async () => {
    const store = await ctx.store();
    await enqueueJobs(store, [
      newJob("a7", { queue: "a", dueAt: T0 + 7 * SECOND }),
      newJob("b3", { queue: "b", dueAt: T0 + 3 * SECOND }),
      newJob("b9", { queue: "b", dueAt: T0 + 9 * SECOND }),
      newJob("c1", { queue: "c", dueAt: T0 + SECOND }),
    ]);
    expect(await claimAt(store, { queues: ["a", "b"] })).toEqual({ jobs: [], nextDueAt: T0 + 3 * SECOND });
    expect(await claimAt(store, { queues: ["a"] })).toEqual({ jobs: [], nextDueAt: T0 + 7 * SECOND });
    // After taking everything due, the answer is the next future due time.
    const result = await claimAt(store, { queues: ["b"], now: T0 + 3 * SECOND });
    expect(ids(result)).toEqual(["b3"]);
    expect(result.nextDueAt).toBe(T0 + 9 * SECOND);
  });

  clause("claim: nextDueAt is now when due work was withheld by the batch cap", async () => {
    const store = await ctx.store({ bounds: { claimBatch: 2 } });
    await enqueueJobs(store, [newJob("a"), newJob("b"), newJob("c"), newJob("d", { dueAt: T0 + MINUTE })]);
    const now = T0 + 10;
    const capped = await claimAt(store, { max: 1, now });
    expect(ids(capped)).toEqual(["a"]);
    expect(capped.nextDueAt).toBe(now);
    const clamped = await claimAt(store, { max: 50, now });
    expect(ids(clamped)).toEqual(["b", "c"]);
    // The bound withheld nothing here: only the future job is left.
    expect(clamped.nextDueAt).toBe(T0 + MINUTE);
  });

  clause("claim: nextDueAt is now when due work was withheld by a concurrency limit", async () => {
    const store = await ctx.store();
    await enqueueJobs(store, [newJob("a"), newJob("b"), newJob("f", { queue: "free", dueAt: T0 + MINUTE })]);
    await limitQueue(store, "default", 1);
    const now = T0 + 10;
    const first = await claimAt(store, { queues: ["default", "free"], now });
    expect(ids(first)).toEqual(["a"]);
    expect(first.nextDueAt).toBe(now);
    const second = await claimAt(store, { queues: ["default", "free"], now: now + 1, workerId: "w2" });
    expect(second).toEqual({ jobs: [], nextDueAt: now + 1 });
  });

  clause("claim: nextDueAt ignores paused queues", async () => {
    const store = await ctx.store();
    await enqueueJobs(store, [
      newJob("p1", { queue: "paused", dueAt: T0 - SECOND }),
      newJob("p2", { queue: "paused", dueAt: T0 + SECOND }),
      newJob("o", { queue: "open", dueAt: T0 + 5 * SECOND }),
    ]);
    await store.pauseQueue({ queue: "paused", actor: "ops", now: T0 });
    expect(await claimAt(store, { queues: ["paused", "open"] })).toEqual({ jobs: [], nextDueAt: T0 + 5 * SECOND });
    expect(await claimAt(store, { queues: ["paused"] })).toEqual({ jobs: [], nextDueAt: null });
    await store.resumeQueue({ queue: "paused", actor: "ops", now: T0 });
    expect((await claimAt(store, { queues: ["open"], now: T0 + 1 })).nextDueAt).toBe(T0 + 5 * SECOND);
  });

  clause("claim: nextDueAt never exceeds the true next due time as due times change", async () => {
    const store = await ctx.store();
    await enqueueJobs(store, [newJob("late", { dueAt: T0 + 10 * SECOND }), newJob("r")]);
    const first = await claimAt(store, { max: 1 });
    expect(ids(first)).toEqual(["r"]);
    expect(first.nextDueAt).not.toBeNull();
    expect(first.nextDueAt!).toBeLessThanOrEqual(T0 + 10 * SECOND);
    // A retry moves "r" to T0 + 2 s, earlier than "late": the advice must follow.
    await report(store, first.jobs[0]!, { type: "failed", retryAt: T0 + 2 * SECOND }, T0 + 1);
    const second = await claimAt(store, { now: T0 + 1 });
    expect(second.jobs).toEqual([]);
    expect(second.nextDueAt).not.toBeNull();
    expect(second.nextDueAt!).toBeLessThanOrEqual(T0 + 2 * SECOND);
    expect(second.nextDueAt!).toBeGreaterThanOrEqual(T0 + 1);
    // Claiming "r" leaves "late" as the next due time; the advice never points past it.
    const third = await claimAt(store, { now: T0 + 2 * SECOND });
    expect(ids(third)).toEqual(["r"]);
    expect(third.nextDueAt).not.toBeNull();
    expect(third.nextDueAt!).toBeLessThanOrEqual(T0 + 10 * SECOND);
  });

  clause("claim: a malformed request throws InvalidInputError naming the field and claims nothing", async () => {
    const store = await ctx.store();
    await enqueueJobs(store, [newJob("j1")]);
    const cases: [Partial<Record<keyof ClaimRequest, unknown>>, string][] = [
      [{ workerId: "" }, "workerId"],
      [{ workerId: 7 }, "workerId"],
      [{ queues: "default" }, "queues"],
      [{ queues: [""] }, "queues[0]"],
      [{ max: 0 }, "max"],
      [{ max: 1.5 }, "max"],
      [{ leaseMs: 0 }, "leaseMs"],
      [{ leaseMs: -5 }, "leaseMs"],
      [{ now: 1.5 }, "now"],
      [{ now: "soon" }, "now"],
    ];
    for (const [fields, field] of cases) {
      await expectBelayError(() => claimAt(store, fields as Partial<ClaimRequest>), "BELAY_INVALID_INPUT", { field });
    }
    expect(await store.getJob("j1")).toMatchObject({ state: "scheduled", attempt: 0, leaseOwner: null });
    expect(await store.getJobHistory("j1")).toHaveLength(1);
  });

  clauseNeeding(ctx, "stepHook", "claim: a pause committed while a claim is parked mid-flight is serialized with it", async () => {
    const store = await ctx.store();
    await enqueueJobs(store, [newJob("a"), newJob("b"), newJob("c")]);
    const parked = parkAt(ctx, store, (point) => point.operation === "claim");
    const claimA = claimAt(store, { workerId: "wa", max: 10, now: T0 + 1 });
    await parked.reached;
    const pause = store.pauseQueue({ queue: "default", actor: "ops", now: T0 + 1 });
    const pauseFirst = await settlesWithin(pause, 200);
    parked.release();
    const a = await claimA;
    await pause;
    ctx.setStepHook(store, null);

    // Serial outcomes only: the claim took all three (it ran first) or none (the pause ran first).
    if (pauseFirst) expect(a.jobs, "the pause committed first, so the claim must see it").toEqual([]);
    else expect(ids(a), "the pause waited, so the claim ran first").toEqual(["a", "b", "c"]);
    for (const id of ["a", "b", "c"]) {
      const job = await store.getJob(id);
      if (a.jobs.length > 0) expect(job, id).toMatchObject({ state: "leased", leaseOwner: "wa" });
      else expect(job, id).toMatchObject({ state: "scheduled", attempt: 0 });
    }
    expect(await store.listQueueSettings()).toContainEqual({ queue: "default", paused: true, concurrencyLimit: null });
    await enqueueJobs(store, [newJob("d")], T0 + 2);
    expect(await claimJobs(store, { workerId: "wb", now: T0 + 2 })).toEqual([]);
  });

  clauseNeeding(ctx, "stepHook", "claim: a first concurrency limit set while a claim is parked never lets another claim over-claim", async () => {
    const store = await ctx.store();
    const peer = await ctx.peer(store);
    await enqueueJobs(store, ["a", "b", "c", "d", "e", "f", "g", "h"].map((id) => newJob(id)));
    const parked = parkAt(ctx, store, (point) => point.operation === "claim");
    const claimA = claimAt(store, { workerId: "wa", max: 5, now: T0 + 1 });
    await parked.reached;
    const setLimit = limitQueue(store, "default", 3, T0 + 1);
    const limitFirst = await settlesWithin(setLimit, 200);
    if (limitFirst) {
      // The limit is committed; B runs while A is still parked, then A resumes.
      const claimB = claimAt(peer, { workerId: "wb", max: 5, now: T0 + 1 });
      await settlesWithin(claimB, 200);
      parked.release();
      const [a, b] = await Promise.all([claimA, claimB]);
      ctx.setStepHook(store, null);
      const leased = await leasedIds(store);
      expect(leased.length, "leased jobs under a limit of 3").toBeLessThanOrEqual(3);
      expect(leased.sort()).toEqual([...ids(a), ...ids(b)].sort());
    } else {
      // The limit waited for A: A claimed without a limit, then B must respect it.
      parked.release();
      const a = await claimA;
      await setLimit;
      ctx.setStepHook(store, null);
      const b = await claimAt(peer, { workerId: "wb", max: 5, now: T0 + 1 });
      expect(b.jobs.length).toBeLessThanOrEqual(Math.max(0, 3 - a.jobs.length));
      expect((await leasedIds(store)).sort()).toEqual([...ids(a), ...ids(b)].sort());
    }
  });
}
