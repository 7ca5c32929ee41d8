import { type ClaimedJob, type JobStore, isBelayError } from "@belay/contract";
import { expect } from "vitest";
import { clause, clauseNeeding } from "../clause.js";
import { whileParked } from "../interleaving.js";
import { LEASE, SECOND, T0, auditOf, claimJobs, enqueueJobs, label, leaseJob, newJob, report, retryTransient, sortedTags, stateOf } from "../fixtures.js";
import type { StepPoint } from "@belay/contract";
import type { SuiteContext } from "../suite-context.js";

// Races on shared rows between handles on one database (`openPeer`; the store itself where the
// adapter grants none). Each clause starts its calls at once and accepts any serial order of
// them — and only those: every outcome it checks is what one order or the other would give.

/** Claims everything due in `queue` at T0 as `w1` and returns it by id. */
async function leaseAll(store: JobStore, queue = "default"): Promise<Map<string, ClaimedJob>> {
  return new Map((await claimJobs(store, { queues: [queue], max: 100 })).map((j) => [j.id, j]));
}

/**
 * Two handles on one fresh store with `count` jobs (`j0`…) enqueued and leased; `race` starts
 * each job's two calls at once (each retried while transient), for every job at once. The handles swap from job to job, so each
 * call runs on either handle. Answers each job's pair of results.
 */
async function raceOnLeased<A, B>(
  ctx: SuiteContext,
  count: number,
  race: (job: ClaimedJob, first: JobStore, second: JobStore) => readonly [() => Promise<A>, () => Promise<B>],
): Promise<{ store: JobStore; results: { id: string; first: A; second: B }[] }> {
  const store = await ctx.store();
  const peer = await ctx.peer(store);
  const ids = Array.from({ length: count }, (_, i) => `j${i}`);
  await enqueueJobs(store, ids.map((id) => newJob(id)));
  const jobs = await leaseAll(store);
  const results = await Promise.all(
    ids.map(async (id, i) => {
      const [first, second] = race(jobs.get(id)!, ...((i % 2 === 0 ? [store, peer] : [peer, store]) as [JobStore, JobStore]));
      const [a, b] = await Promise.all([retryTransient(first), retryTransient(second)]);
      return { id, first: a, second: b };
    }),
  );
  return { store, results };
}

/** Leases each of `ids`, each on a queue of its own name, and dead-letters it. */
async function deadLetterEach(store: JobStore, ids: readonly string[]): Promise<void> {
  for (const id of ids) {
    const job = await leaseJob(store, id, { queue: id }, { queues: [id] });
    await report(store, job, { type: "failed", retryAt: null });
  }
}

/**
 * For every one of `ids` at once, four calls of `write` at once — on the two handles in turn, as
 * actors `op0` to `op3` — each retried while transient. Answers each id's four results.
 */
function fourAtOnce<R>(
  handles: readonly [JobStore, JobStore],
  ids: readonly string[],
  write: (handle: JobStore, id: string, actor: string) => Promise<R>,
): Promise<R[][]> {
  const [a, b] = handles;
  return Promise.all(ids.map((id) => Promise.all([a, b, a, b].map((handle, k) => retryTransient(() => write(handle, id, `op${k}`))))));
}

/** Exactly one of `results` has status `won`; every other is `lost`. */
function expectOneWins<R extends { readonly status: string }>(results: readonly R[], won: R["status"], lost: R, id: string): void {
  expect(results.filter((r) => r.status === won), id).toHaveLength(1);
  for (const r of results) if (r.status !== won) expect(r, id).toEqual(lost);
}

/** The children of `ok` and `dead` that the parked-outcome clauses enqueue, one per dependency mode. */
const kidsOfOkAndDead = () => [
  newJob("kid", { queue: "kids", parentIds: ["dead"] }),
  newJob("anyKid", { queue: "kids", parentIds: ["dead"], dependencyMode: "onAnyTerminal" }),
  newJob("okKid", { queue: "kids", parentIds: ["ok"] }),
];

/** `ok` succeeds and `dead` fails for good, in one report. */
const endOkAndDead = (jobs: Map<string, ClaimedJob>) => [
  { jobId: "ok", workerId: "w1", attempt: jobs.get("ok")!.attempt, outcome: { type: "succeeded" } as const },
  { jobId: "dead", workerId: "w1", attempt: jobs.get("dead")!.attempt, outcome: { type: "failed", retryAt: null } as const },
];

/** Whatever the order, the children of `ok` and `dead` end as their dependency modes say. */
async function expectKidsResolved(store: JobStore): Promise<void> {
  expect(await stateOf(store, "kid")).toBe("cancelled");
  expect(await stateOf(store, "anyKid")).toBe("scheduled");
  expect(await stateOf(store, "okKid")).toBe("scheduled");
}

/** Ids of the jobs of `queue` currently leased. */
async function leased(store: JobStore, queue: string): Promise<string[]> {
  return (await store.listJobs({ states: ["leased"], queues: [queue] })).jobs.map((j) => j.id);
}

export function concurrencyClauses(ctx: SuiteContext): void {
  clause("concurrency: concurrent enqueues of one id with tags create it once; every other call reads duplicate and the tags are stored once", async () => {
    const store = await ctx.store();
    const peer = await ctx.peer(store);
    const tags = [label("urgent"), { key: "tenant", value: "acme" }, { key: "region", value: "eu" }];
    const ids = ["j0", "j1", "j2"];
    const calls = ids.flatMap((id) =>
      [store, peer, store, peer, store, peer].map((handle, k) =>
        retryTransient(() => handle.enqueue({ jobs: [newJob(id, { tags, payload: `{"k":${k}}` })], now: T0 })),
      ),
    );
    const results = (await Promise.all(calls)).map((r) => r[0]!);
    for (const [i, id] of ids.entries()) {
      const mine = results.slice(i * 6, i * 6 + 6);
      expect(mine.filter((r) => r.status === "created"), `${id} is created once`).toHaveLength(1);
      for (const r of mine) expect(["created", "duplicate"], id).toContain(r.status);
      const job = await store.getJob(id);
      expect(sortedTags(job!.tags), `${id} carries each tag once`).toEqual(sortedTags(tags));
      expect(await store.getJobHistory(id), `${id} has one first transition`).toHaveLength(1);
    }
    expect(await store.facetTags({ key: "tenant" })).toEqual([{ value: "acme", count: 3 }]);
    expect(await store.facetTags({ key: "" })).toEqual([{ value: "urgent", count: 3 }]);
    expect((await store.suggestTags({ prefix: "" })).suggestions).toEqual([
      { kind: "label", value: "urgent" },
      { kind: "key", key: "region" },
      { kind: "key", key: "tenant" },
    ]);
    expect((await store.listJobs({ tags: [{ key: "region", value: "eu" }] })).jobs.map((j) => j.id).sort()).toEqual(ids);
    expect(await store.countJobs()).toEqual([{ queue: "default", state: "scheduled", count: 3 }]);
  });

  clause("concurrency: parents' terminal outcomes racing their children's enqueues never deadlock, and no child is left waiting on ended parents", async () => {
    const store = await ctx.store();
    const peer = await ctx.peer(store);
    for (let round = 0; round < 6; round++) {
      const p = (name: string) => `r${round}-${name}`;
      const queue = `parents${round}`;
      // Enqueued d, c, b, a: row order is the reverse of id order, so two writers that each
      // lock in one of those orders would meet head on.
      await enqueueJobs(store, ["d", "c", "b", "a"].map((name) => newJob(p(name), { queue })), T0);
      const jobs = await leaseAll(store, queue);
      const row = (name: string, outcome: "ok" | "dead") => ({
        jobId: p(name),
        workerId: "w1",
        attempt: jobs.get(p(name))!.attempt,
        outcome: outcome === "ok" ? ({ type: "succeeded" } as const) : ({ type: "failed", retryAt: null } as const),
      });
      const now = T0 + SECOND;
      // Any call may fail only by a retriable conflict, and a deadlock is one: none is allowed here.
      const calls = await Promise.allSettled([
        // Each batch lists its jobs against row order, as a worker may.
        store.reportOutcomes({ reports: [row("b", "ok"), row("d", "ok")], now }),
        peer.reportOutcomes({ reports: [row("a", "ok"), row("c", "dead")], now }),
        peer.enqueue({ jobs: [newJob(p("x"), { queue: "kids", parentIds: [p("a"), p("b")] })], now }),
        store.enqueue({ jobs: [newJob(p("y"), { queue: "kids", parentIds: [p("d"), p("c")] })], now }),
        peer.enqueue({
          jobs: [newJob(p("z"), { queue: "kids", parentIds: [p("a"), p("b"), p("c"), p("d")], dependencyMode: "onAnyTerminal" })],
          now,
        }),
        store.enqueue({ jobs: [newJob(p("w"), { queue: "kids", parentIds: [p("b"), p("a")] }), newJob(p("v"), { queue: "kids", parentIds: [p("w"), p("c")] })], now }),
      ]);
      for (const [i, call] of calls.entries()) {
        const reason = call.status === "rejected" ? call.reason : undefined;
        expect(reason, `round ${round}, call ${i}: ${String(reason)}${isBelayError(reason) ? ` (${reason.code})` : ""}`).toBeUndefined();
      }
      expect(await stateOf(store, p("a"))).toBe("succeeded");
      expect(await stateOf(store, p("c"))).toBe("deadLettered");
      // Whichever committed first, each child reads as if its parents ended before or after it.
      expect(await stateOf(store, p("x")), "x: both parents succeeded").toBe("scheduled");
      expect(await stateOf(store, p("y")), "y: an onSuccess parent was dead-lettered").toBe("cancelled");
      expect(await stateOf(store, p("z")), "z: every parent ended, onAnyTerminal").toBe("scheduled");
      expect(await stateOf(store, p("w")), "w: both parents succeeded").toBe("scheduled");
      expect(await stateOf(store, p("v")), "v: its parent c was dead-lettered").toBe("cancelled");
      expect((await store.getDependencies(p("z")))!.parents.map((e) => e.gating)).toEqual([false, false, false, false]);
    }
  });

  clause("concurrency: concurrent claimers under a concurrency limit together never lease more than the limit, and leak no slot", async () => {
    const store = await ctx.store();
    const peer = await ctx.peer(store);
    await enqueueJobs(store, Array.from({ length: 12 }, (_, i) => newJob(`j${String(i).padStart(2, "0")}`, { queue: "limited" })));
    expect(await store.setConcurrencyLimit({ queue: "limited", limit: 3, actor: "ops", now: T0 })).toEqual({ status: "applied" });
    let now = T0;
    for (let round = 0; round < 3; round++) {
      const claimers = Array.from({ length: 8 }, (_, i) =>
        retryTransient(() => (i % 2 === 0 ? store : peer).claim({ workerId: `w${round}-${i}`, queues: ["limited"], max: 2, leaseMs: LEASE, now })),
      );
      const taken = (await Promise.all(claimers)).flatMap((r) => r.jobs);
      expect(taken.length, `round ${round}: claimed at once under a limit of 3`).toBeLessThanOrEqual(3);
      expect(new Set(taken.map((j) => j.id)).size).toBe(taken.length);
      // No slot was lost: a later claim fills the queue up to the limit exactly.
      const more = await claimJobs(store, { queues: ["limited"], workerId: `late${round}`, now });
      expect(taken.length + more.length, `round ${round}: the limit is reachable`).toBe(3);
      expect((await leased(store, "limited")).sort()).toEqual([...taken, ...more].map((j) => j.id).sort());
      // Finishing them frees every slot for the next round.
      now += SECOND;
      for (const job of [...taken, ...more]) {
        const owner = (await store.getJob(job.id))!.leaseOwner!;
        const [result] = await store.reportOutcomes({ reports: [{ jobId: job.id, workerId: owner, attempt: job.attempt, outcome: { type: "succeeded" } }], now });
        expect(result, job.id).toMatchObject({ status: "applied" });
      }
    }
    expect((await store.listJobs({ states: ["succeeded"], queues: ["limited"] })).jobs).toHaveLength(9);
  });

  clause("concurrency: a cancel racing a success report ends the job succeeded; the cancel is audited only when it took effect", async () => {
    const { store, results } = await raceOnLeased(ctx, 4, (job, first, second) => [
      () => first.cancelJob({ jobId: job.id, actor: "alice", now: T0 + SECOND }),
      () => report(second, job, { type: "succeeded", output: '"done"' }, T0 + SECOND),
    ]);
    for (const { id, first: cancel, second: outcome } of results) {
      expect(outcome, id).toMatchObject({ status: "applied", state: "succeeded" });
      // Cancel first: a request the report then overrides. Report first: the job was terminal.
      expect([{ status: "cancelRequested" }, { status: "notCancellable", state: "succeeded" }], id).toContainEqual(cancel);
      expect(await store.getJob(id), id).toMatchObject({ state: "succeeded", cancelRequested: false, leaseOwner: null });
      expect(await store.getJobOutput(id)).toBe('"done"');
      expect((await auditOf(store, id)).length, `${id}: audited only with an effect`).toBe(cancel.status === "cancelRequested" ? 1 : 0);
    }
  });

  clause("concurrency: a cancel racing a retryable failure report ends the job cancelled either way", async () => {
    const { store, results } = await raceOnLeased(ctx, 4, (job, first, second) => [
      () => first.cancelJob({ jobId: job.id, actor: "alice", now: T0 + SECOND }),
      () => report(second, job, { type: "failed", retryAt: T0 + LEASE }, T0 + SECOND),
    ]);
    for (const { id, first: cancel, second: outcome } of results) {
      // Cancel first: the retry becomes a cancel. Report first: the rescheduled job is cancelled at once.
      if (cancel.status === "cancelRequested") expect(outcome, id).toMatchObject({ status: "applied", state: "cancelled" });
      else {
        expect(cancel, id).toEqual({ status: "cancelled" });
        expect(outcome, id).toMatchObject({ status: "applied", state: "scheduled" });
      }
      expect(await store.getJob(id), id).toMatchObject({ state: "cancelled", cancelRequested: false, terminalAt: T0 + SECOND });
      expect((await auditOf(store, id)).length, id).toBe(1);
      expect((await store.getJobHistory(id)).filter((t) => t.state === "cancelled"), id).toHaveLength(1);
    }
    expect(await claimJobs(store, { now: T0 + 2 * LEASE })).toEqual([]);
  });

  clause("concurrency: two reports of one lease from two handles: exactly one applies, the other is stale", async () => {
    const { store, results } = await raceOnLeased(ctx, 4, (job, first, second) => [
      () => report(first, job, { type: "succeeded", output: '"from first"' }, T0 + SECOND),
      () => report(second, job, { type: "failed", retryAt: null, failureDetail: "from second" }, T0 + SECOND),
    ]);
    for (const { id, first, second } of results) {
      expect([first.status, second.status].sort(), id).toEqual(["applied", "stale"]);
      const state = first.status === "applied" ? "succeeded" : "deadLettered";
      expect(await stateOf(store, id), id).toBe(state);
      expect(await store.getJobOutput(id), id).toBe(state === "succeeded" ? '"from first"' : null);
      expect((await store.getJobHistory(id)).map((t) => t.state), id).toEqual(["scheduled", "leased", state]);
    }
  });

  clause("concurrency: a release racing an outcome report of the same lease: exactly one of them applies", async () => {
    const { store, results } = await raceOnLeased(ctx, 4, (job, first, second) => [
      () => first.release({ workerId: "w1", leases: [{ jobId: job.id, attempt: 1 }], now: T0 + SECOND }),
      () => report(second, job, { type: "succeeded" }, T0 + SECOND),
    ]);
    for (const { id, first: [released], second: outcome } of results) {
      expect([released!.status === "released", outcome.status === "applied"].filter(Boolean), id).toHaveLength(1);
      const job = await store.getJob(id);
      if (released!.status === "released") {
        expect(outcome, id).toMatchObject({ status: "stale" });
        expect(job, id).toMatchObject({ state: "scheduled", releases: 1, attempt: 1 });
      } else expect(job, id).toMatchObject({ state: "succeeded", releases: 0 });
    }
  });

  clause("concurrency: concurrent requeues of one dead-lettered job requeue it once: one audit record, one transition", async () => {
    const store = await ctx.store();
    const peer = await ctx.peer(store);
    const ids = ["j0", "j1", "j2"];
    await deadLetterEach(store, ids);
    const results = await fourAtOnce([store, peer], ids, (handle, jobId, actor) => handle.requeueJob({ jobId, actor, now: T0 + SECOND }));
    for (const [i, mine] of results.entries()) {
      const id = ids[i]!;
      expectOneWins(mine, "requeued", { status: "notRequeueable", state: "scheduled" }, id);
      expect(await store.getJob(id), id).toMatchObject({ state: "scheduled", attempt: 0, dueAt: T0 + SECOND });
      expect((await auditOf(store, id)).map((a) => a.action), id).toEqual(["requeue"]);
      expect((await store.getJobHistory(id)).map((t) => t.state), id).toEqual(["scheduled", "leased", "deadLettered", "scheduled"]);
    }
  });

  clause("concurrency: a requeue racing a cancel of a dead-lettered job gives one of the two serial outcomes", async () => {
    const store = await ctx.store();
    const peer = await ctx.peer(store);
    const ids = ["j0", "j1", "j2", "j3"];
    await deadLetterEach(store, ids);
    const results = await Promise.all(
      ids.map((id, i) =>
        Promise.all([
          retryTransient(() => (i % 2 === 0 ? store : peer).requeueJob({ jobId: id, actor: "alice", now: T0 + SECOND })),
          retryTransient(() => (i % 2 === 0 ? peer : store).cancelJob({ jobId: id, actor: "bob", now: T0 + SECOND })),
        ]),
      ),
    );
    for (const [i, [requeue, cancel]] of results.entries()) {
      const id = ids[i]!;
      expect(requeue, id).toEqual({ status: "requeued" });
      const audit = (await auditOf(store, id)).map((a) => a.action);
      if (cancel.status === "cancelled") {
        // The requeue ran first; the cancel then found a scheduled job.
        expect(await store.getJob(id), id).toMatchObject({ state: "cancelled", attempt: 0 });
        expect(audit, id).toEqual(["requeue", "cancel"]);
      } else {
        // The cancel ran first and found a terminal job: nothing changed, nothing audited.
        expect(cancel, id).toEqual({ status: "notCancellable", state: "deadLettered" });
        expect(await store.getJob(id), id).toMatchObject({ state: "scheduled", attempt: 0 });
        expect(audit, id).toEqual(["requeue"]);
      }
    }
  });

  clause("concurrency: concurrent cancels of one scheduled job cancel it once and audit it once", async () => {
    const store = await ctx.store();
    const peer = await ctx.peer(store);
    const ids = ["j0", "j1", "j2"];
    await enqueueJobs(store, ids.flatMap((id) => [newJob(id), newJob(`${id}-child`, { parentIds: [id] })]));
    const results = await fourAtOnce([store, peer], ids, (handle, jobId, actor) => handle.cancelJob({ jobId, actor, now: T0 + SECOND }));
    for (const [i, mine] of results.entries()) {
      const id = ids[i]!;
      expectOneWins(mine, "cancelled", { status: "notCancellable", state: "cancelled" }, id);
      expect((await auditOf(store, id)).map((a) => a.action), id).toEqual(["cancel"]);
      expect((await store.getJobHistory(id)).map((t) => t.state), id).toEqual(["scheduled", "cancelled"]);
      expect((await store.getJobHistory(`${id}-child`)).map((t) => t.state), `${id}-child`).toEqual(["awaitingParents", "cancelled"]);
    }
  });

  // The same races, interleaved at the one point that matters: the first write parked at its
  // commit, holding every row it wrote, while the second runs (or waits for it).

  const atCommit = (operation: string) => (point: StepPoint) => point.operation === operation && point.step === "commit";

  clauseNeeding(ctx, "stepHook", "concurrency: an enqueue of an id another handle holds uncommitted reads duplicate once that commits; the tags are stored once", async () => {
    const store = await ctx.store();
    const peer = await ctx.peer(store);
    const tags = [label("urgent"), { key: "tenant", value: "acme" }];
    const [[first], [second]] = await whileParked(
      ctx,
      store,
      atCommit("enqueue"),
      () => store.enqueue({ jobs: [newJob("j1", { tags, payload: '{"first":true}' })], now: T0 }),
      () => peer.enqueue({ jobs: [newJob("j1", { tags: [...tags, label("late")], payload: '{"second":true}' })], now: T0 + 1 }),
    );
    expect(first).toMatchObject({ status: "created" });
    expect(second).toEqual({ id: "j1", status: "duplicate", state: "scheduled" });
    const job = await store.getJob("j1");
    expect(job).toMatchObject({ payload: '{"first":true}', enqueuedAt: T0 });
    expect(sortedTags(job!.tags)).toEqual(sortedTags(tags));
    expect(await store.facetTags({ key: "" })).toEqual([{ value: "urgent", count: 1 }]);
    expect(await store.getJobHistory("j1")).toHaveLength(1);
  });

  clauseNeeding(ctx, "stepHook", "concurrency: a child enqueued while its parent's outcome is parked uncommitted is gated by that outcome", async () => {
    const store = await ctx.store();
    const peer = await ctx.peer(store);
    await enqueueJobs(store, [newJob("ok"), newJob("dead")]);
    const jobs = await leaseAll(store);
    const [results, [kid, anyKid, okKid]] = await whileParked(
      ctx,
      store,
      atCommit("reportOutcomes"),
      () =>
        store.reportOutcomes({
          reports: endOkAndDead(jobs),
          now: T0 + SECOND,
        }),
      () =>
        peer.enqueue({
          jobs: kidsOfOkAndDead(),
          now: T0 + SECOND,
        }),
    );
    expect(results.map((r) => r.status)).toEqual(["applied", "applied"]);
    expect([kid, anyKid, okKid].map((r) => r!.status)).toEqual(["created", "created", "created"]);
    await expectKidsResolved(store);
  });

  clauseNeeding(ctx, "stepHook", "concurrency: a parent's outcome reported while its child's enqueue is parked uncommitted resolves that child", async () => {
    const store = await ctx.store();
    const peer = await ctx.peer(store);
    await enqueueJobs(store, [newJob("ok"), newJob("dead")]);
    const jobs = await leaseAll(store);
    const [created, results] = await whileParked(
      ctx,
      store,
      atCommit("enqueue"),
      () =>
        store.enqueue({
          jobs: kidsOfOkAndDead(),
          now: T0 + SECOND,
        }),
      () =>
        peer.reportOutcomes({
          reports: endOkAndDead(jobs),
          now: T0 + SECOND,
        }),
    );
    expect(created.map((r) => r.status)).toEqual(["created", "created", "created"]);
    expect(results.map((r) => r.status)).toEqual(["applied", "applied"]);
    await expectKidsResolved(store);
  });

  clauseNeeding(ctx, "stepHook", "concurrency: two parents ending at once from two handles resolve their shared children exactly once", async () => {
    const store = await ctx.store();
    const peer = await ctx.peer(store);
    await enqueueJobs(store, [
      newJob("a"),
      newJob("b"),
      newJob("c", { queue: "later" }),
      newJob("both", { queue: "kids", parentIds: ["a", "b"] }),
      newJob("either", { queue: "kids", parentIds: ["a", "b"], dependencyMode: "onAnyTerminal" }),
      newJob("three", { queue: "kids", parentIds: ["a", "b", "c"] }),
    ]);
    const jobs = await leaseAll(store);
    const [[fromStore], [fromPeer]] = await whileParked(
      ctx,
      store,
      atCommit("reportOutcomes"),
      () => store.reportOutcomes({ reports: [{ jobId: "a", workerId: "w1", attempt: jobs.get("a")!.attempt, outcome: { type: "succeeded" } }], now: T0 + SECOND }),
      () => peer.reportOutcomes({ reports: [{ jobId: "b", workerId: "w1", attempt: jobs.get("b")!.attempt, outcome: { type: "succeeded" } }], now: T0 + SECOND }),
    );
    expect([fromStore!.status, fromPeer!.status]).toEqual(["applied", "applied"]);
    for (const id of ["both", "either"]) {
      expect(await stateOf(store, id), id).toBe("scheduled");
      expect((await store.getJobHistory(id)).map((t) => t.state), id).toEqual(["awaitingParents", "scheduled"]);
    }
    // A latch counted down twice at once still counts each parent once: "three" waits for c.
    expect(await stateOf(store, "three")).toBe("awaitingParents");
    expect((await store.getDependencies("three"))!.parents.map((p) => [p.jobId, p.gating])).toEqual([
      ["a", false],
      ["b", false],
      ["c", true],
    ]);
    const [c] = await claimJobs(store, { queues: ["later"], now: T0 + SECOND });
    await report(store, c!, { type: "succeeded" }, T0 + 2 * SECOND);
    expect(await stateOf(store, "three")).toBe("scheduled");
  });
}
