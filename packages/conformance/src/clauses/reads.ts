import {
  type JobCount, type JobState, type JobStore, type ListJobsRequest, type JobSummary, scheduledJobId,
} from "@belay/contract";
import { expect } from "vitest";
import { clause, clauseNeeding } from "../clause.js";
import { DEFAULT_RETRY, LEASE, MINUTE, claimJobs, enqueueJobs, expectBelayError, leaseJob, newJob, newSchedule, report, T0 } from "../fixtures.js";
import { settlesWithin } from "../interleaving.js";
import type { SuiteContext } from "../suite-context.js";

/** Every job matching `request`, walking the keyset cursor page by page; also returns the pages. */
async function walk(store: JobStore, request: ListJobsRequest): Promise<{ jobs: JobSummary[]; pages: JobSummary[][] }> {
  const jobs: JobSummary[] = [];
  const pages: JobSummary[][] = [];
  let after: string | undefined;
  for (let guard = 0; guard < 100; guard++) {
    const page = await store.listJobs(after === undefined ? request : { ...request, after });
    pages.push([...page.jobs]);
    jobs.push(...page.jobs);
    if (page.nextCursor === null) return { jobs, pages };
    after = page.nextCursor;
  }
  throw new Error("the cursor never reached a last page");
}

/** The ids of one listing page (no cursor following). */
async function listIds(store: JobStore, request: ListJobsRequest = {}): Promise<string[]> {
  return (await store.listJobs(request)).jobs.map((j) => j.id);
}

/** Counts in a stable order, for comparison regardless of how the store orders them. */
function sortedCounts(counts: readonly JobCount[]): JobCount[] {
  return [...counts].sort((a, b) => (a.queue < b.queue ? -1 : a.queue > b.queue ? 1 : a.state < b.state ? -1 : a.state > b.state ? 1 : 0));
}

/** Enqueues one job per queue q1..q4 and moves them through states in an order unlike their enqueue order. */
async function shuffledStates(store: JobStore): Promise<void> {
  await enqueueJobs(store, [newJob("a", { queue: "q1" }), newJob("b", { queue: "q2" }), newJob("c", { queue: "q3" }), newJob("d", { queue: "q4" })]);
  const [d] = await claimJobs(store, { queues: ["q4"] });
  await report(store, d!, { type: "succeeded" }, T0 + 1);
  await claimJobs(store, { queues: ["q3"], now: T0 + 2 });
  expect(await store.cancelJob({ jobId: "a", actor: "alice", now: T0 + 3 })).toEqual({ status: "cancelled" });
  await claimJobs(store, { queues: ["q2"], now: T0 + 4 });
}

export function readClauses(ctx: SuiteContext): void {
  clause("reads: listJobs lists oldest first by seq by default, whatever order the jobs changed state in", async () => {
    const store = await ctx.store();
    await shuffledStates(store);
    const { jobs } = await store.listJobs();
    expect(jobs.map((j) => j.id)).toEqual(["a", "b", "c", "d"]);
    for (let i = 1; i < jobs.length; i++) expect(jobs[i]!.seq).toBeGreaterThan(jobs[i - 1]!.seq);
    expect(jobs.map((j) => j.state)).toEqual(["cancelled", "leased", "leased", "succeeded"]);
    expect(await listIds(store, { order: "oldestFirst" })).toEqual(["a", "b", "c", "d"]);
  });

  clause("reads: newestFirst lists by strictly descending seq", async () => {
    const store = await ctx.store();
    await shuffledStates(store);
    const { jobs } = await store.listJobs({ order: "newestFirst" });
    expect(jobs.map((j) => j.id)).toEqual(["d", "c", "b", "a"]);
    for (let i = 1; i < jobs.length; i++) expect(jobs[i]!.seq).toBeLessThan(jobs[i - 1]!.seq);
  });

  clause("reads: the keyset cursor walks the filtered set in both directions without gaps or duplicates", async () => {
    const store = await ctx.store();
    const jobs = [];
    const expected: string[] = [];
    for (let i = 0; i < 12; i++) {
      const match = i % 5 !== 1 && i % 5 !== 3; // 7 of 12 match, interleaved with the others
      const id = `j${String(i).padStart(2, "0")}`;
      jobs.push(newJob(id, { queue: match ? "match" : "other" }));
      if (match) expected.push(id);
    }
    expect(expected).toHaveLength(7);
    await enqueueJobs(store, jobs.slice(0, 6));
    await enqueueJobs(store, jobs.slice(6));

    const forward = await walk(store, { queues: ["match"], limit: 2 });
    expect(forward.jobs.map((j) => j.id)).toEqual(expected);
    expect(forward.pages.map((p) => p.length)).toEqual([2, 2, 2, 1]);

    const backward = await walk(store, { queues: ["match"], limit: 2, order: "newestFirst" });
    expect(backward.jobs.map((j) => j.id)).toEqual([...expected].reverse());
    expect(backward.pages.map((p) => p.length)).toEqual([2, 2, 2, 1]);
  });

  clause("reads: the last page has a null nextCursor, also when it is exactly full", async () => {
    const store = await ctx.store();
    expect(await store.listJobs()).toEqual({ jobs: [], nextCursor: null });
    await enqueueJobs(store, [newJob("a"), newJob("b"), newJob("c"), newJob("d")]);

    const first = await store.listJobs({ limit: 2 });
    expect(first.jobs.map((j) => j.id)).toEqual(["a", "b"]);
    expect(first.nextCursor).not.toBeNull();
    const second = await store.listJobs({ limit: 2, after: first.nextCursor! });
    expect(second.jobs.map((j) => j.id)).toEqual(["c", "d"]);
    expect(second.nextCursor).toBeNull();

    const partial = await store.listJobs({ limit: 3, after: first.nextCursor! });
    expect(partial).toMatchObject({ nextCursor: null });
    expect(partial.jobs.map((j) => j.id)).toEqual(["c", "d"]);
    expect((await store.listJobs({ limit: 10 })).nextCursor).toBeNull();
  });

  clause("reads: filters by states, queues and job names narrow; values within one field are OR-ed", async () => {
    const store = await ctx.store();
    await enqueueJobs(store, [
      newJob("a", { queue: "q1", jobName: "x" }),
      newJob("b", { queue: "q2", jobName: "y" }),
      newJob("c", { queue: "q1", jobName: "y" }),
      newJob("d", { queue: "q3", jobName: "z" }),
    ]);
    await claimJobs(store, { queues: ["q2"] }); // b leased
    expect(await store.cancelJob({ jobId: "d", actor: "alice", now: T0 })).toEqual({ status: "cancelled" });

    expect(await listIds(store, { states: ["scheduled"] })).toEqual(["a", "c"]);
    expect(await listIds(store, { states: ["leased", "cancelled"] })).toEqual(["b", "d"]);
    expect(await listIds(store, { states: ["succeeded"] })).toEqual([]);
    expect(await listIds(store, { queues: ["q1"] })).toEqual(["a", "c"]);
    expect(await listIds(store, { queues: ["q2", "q3"] })).toEqual(["b", "d"]);
    expect(await listIds(store, { queues: ["nowhere"] })).toEqual([]);
    expect(await listIds(store, { jobNames: ["y"] })).toEqual(["b", "c"]);
    expect(await listIds(store, { jobNames: ["x", "z"] })).toEqual(["a", "d"]);
  });

  clause("reads: a scheduleId filter lists exactly the jobs that schedule minted", async () => {
    const store = await ctx.store();
    await enqueueJobs(store, [newJob("plain")]);
    for (const id of ["nightly", "hourly"]) {
      expect(await store.upsertSchedule({ schedule: newSchedule(id), now: T0 })).toMatchObject({ status: "created" });
    }
    const minted = await store.mintDue({
      decisions: [
        { scheduleId: "nightly", expectedCursor: T0, newCursor: T0 + 2 * MINUTE, mint: [T0 + MINUTE, T0 + 2 * MINUTE], skip: [] },
        { scheduleId: "hourly", expectedCursor: T0, newCursor: T0 + MINUTE, mint: [T0 + MINUTE], skip: [] },
      ],
      now: T0 + 2 * MINUTE,
    });
    expect(minted.map((m) => m.status)).toEqual(["minted", "minted"]);
    const nightly = [scheduledJobId("nightly", T0 + MINUTE), scheduledJobId("nightly", T0 + 2 * MINUTE)];

    const { jobs } = await store.listJobs({ scheduleId: "nightly" });
    expect(jobs.map((j) => j.id)).toEqual(nightly);
    for (const job of jobs) expect(job.scheduleId).toBe("nightly");
    expect(await listIds(store, { scheduleId: "hourly" })).toEqual([scheduledJobId("hourly", T0 + MINUTE)]);
    expect(await listIds(store, { scheduleId: "ghost" })).toEqual([]);
  });

  clause("reads: a workflowId filter lists exactly that workflow's members", async () => {
    const store = await ctx.store();
    await enqueueJobs(store, [newJob("plain")]);
    const wf1 = await store.enqueueWorkflow({
      workflow: { id: "wf1", name: "flow", jobs: [newJob("w1a"), newJob("w1b", { parentIds: ["w1a"] })] },
      now: T0,
    });
    expect(wf1.status).toBe("created");
    expect((await store.enqueueWorkflow({ workflow: { id: "wf2", name: "flow", jobs: [newJob("w2a")] }, now: T0 })).status).toBe(
      "created",
    );
    await enqueueJobs(store, [newJob("plain2")]);

    const { jobs } = await store.listJobs({ workflowId: "wf1" });
    expect(jobs.map((j) => j.id)).toEqual(["w1a", "w1b"]);
    for (const job of jobs) expect(job.workflowId).toBe("wf1");
    expect(await listIds(store, { workflowId: "wf2" })).toEqual(["w2a"]);
    expect(await listIds(store, { workflowId: "ghost" })).toEqual([]);
  });

  clause("reads: filters in different fields combine with AND", async () => {
    const store = await ctx.store();
    await store.upsertSchedule({ schedule: newSchedule("s1", { queue: "q1", jobName: "x" }), now: T0 });
    await store.mintDue({
      decisions: [{ scheduleId: "s1", expectedCursor: T0, newCursor: T0 + 2 * MINUTE, mint: [T0 + MINUTE, T0 + 2 * MINUTE], skip: [] }],
      now: T0 + 2 * MINUTE,
    });
    const later = T0 + 10 * MINUTE; // the plain and workflow jobs stay unclaimed below
    await store.enqueueWorkflow({
      workflow: {
        id: "wf",
        name: "flow",
        jobs: [newJob("wa", { queue: "q1", jobName: "x", dueAt: later }), newJob("wb", { queue: "q2", jobName: "x", dueAt: later })],
      },
      now: T0,
    });
    await enqueueJobs(store, [
      newJob("a", { queue: "q1", jobName: "x", dueAt: later }),
      newJob("b", { queue: "q1", jobName: "y", dueAt: later }),
      newJob("c", { queue: "q2", jobName: "x", dueAt: later }),
    ]);
    const firstTick = scheduledJobId("s1", T0 + MINUTE);
    const secondTick = scheduledJobId("s1", T0 + 2 * MINUTE);
    // Claim the first minted tick (the oldest due job of q1) so the schedule's jobs differ in state.
    const claimed = await claimJobs(store, { queues: ["q1"], max: 1, now: T0 + 2 * MINUTE });
    expect(claimed.map((j) => j.id)).toEqual([firstTick]);

    expect(await listIds(store, { queues: ["q1"], jobNames: ["x"] })).toEqual(
      expect.arrayContaining([firstTick, secondTick, "wa", "a"]),
    );
    expect(await listIds(store, { queues: ["q1"], jobNames: ["x"] })).toHaveLength(4);
    expect(await listIds(store, { queues: ["q2"], jobNames: ["x"], workflowId: "wf" })).toEqual(["wb"]);
    expect(await listIds(store, { jobNames: ["x"], workflowId: "wf", states: ["scheduled"] })).toEqual(["wa", "wb"]);
    expect(await listIds(store, { scheduleId: "s1", states: ["scheduled"] })).toEqual([secondTick]);
    expect(await listIds(store, { scheduleId: "s1", states: ["leased"] })).toEqual([firstTick]);
    expect(await listIds(store, { scheduleId: "s1", workflowId: "wf" })).toEqual([]);
    expect(await listIds(store, { queues: ["q2"], jobNames: ["y"] })).toEqual([]);
  });

  clause("reads: the page size is clamped to bounds.monitorPage, which is also the default", async () => {
    const store = await ctx.store({ bounds: { monitorPage: 3 } });
    await enqueueJobs(store, [newJob("a"), newJob("b"), newJob("c"), newJob("d"), newJob("e")]);
    const big = await store.listJobs({ limit: 1_000 });
    expect(big.jobs.map((j) => j.id)).toEqual(["a", "b", "c"]);
    expect(big.nextCursor).not.toBeNull();
    const rest = await store.listJobs({ limit: 1_000, after: big.nextCursor! });
    expect(rest.jobs.map((j) => j.id)).toEqual(["d", "e"]);
    expect(rest.nextCursor).toBeNull();
    expect(await listIds(store)).toEqual(["a", "b", "c"]);
    expect(await listIds(store, { limit: 2 })).toEqual(["a", "b"]);
  });

  clause("reads: a cursor the store did not issue throws InvalidInputError naming after", async () => {
    const store = await ctx.store();
    await enqueueJobs(store, [newJob("a"), newJob("b")]);
    for (const after of ["garbage", "s!!", 42 as unknown as string, ""]) {
      await expectBelayError(() => store.listJobs({ after }), "BELAY_INVALID_INPUT", { field: "after" });
      await expectBelayError(() => store.listJobs({ after, order: "newestFirst" }), "BELAY_INVALID_INPUT", { field: "after" });
    }
  });

  clause("reads: a malformed filter throws InvalidInputError naming the field", async () => {
    const store = await ctx.store();
    await enqueueJobs(store, [newJob("a")]);
    await expectBelayError(() => store.listJobs({ states: ["nope" as JobState] }), "BELAY_INVALID_INPUT", {
      field: expect.stringMatching(/^states/),
    });
    await expectBelayError(() => store.listJobs({ queues: "default" as never }), "BELAY_INVALID_INPUT", {
      field: expect.stringMatching(/^queues/),
    });
    await expectBelayError(() => store.listJobs({ order: "sideways" as never }), "BELAY_INVALID_INPUT", { field: "order" });
  });

  clause("reads: countJobs lists per (queue, state) only non-zero counts and follows transitions", async () => {
    const store = await ctx.store();
    expect(await store.countJobs()).toEqual([]);
    await enqueueJobs(store, [newJob("a", { queue: "q1" }), newJob("b", { queue: "q1" }), newJob("c", { queue: "q2" })]);
    expect(sortedCounts(await store.countJobs())).toEqual([
      { queue: "q1", state: "scheduled", count: 2 },
      { queue: "q2", state: "scheduled", count: 1 },
    ]);

    const [a] = await claimJobs(store, { queues: ["q1"], max: 1 });
    expect(a!.id).toBe("a");
    expect(sortedCounts(await store.countJobs())).toEqual([
      { queue: "q1", state: "leased", count: 1 },
      { queue: "q1", state: "scheduled", count: 1 },
      { queue: "q2", state: "scheduled", count: 1 },
    ]);

    await report(store, a!, { type: "succeeded" }, T0 + 1);
    expect(await store.cancelJob({ jobId: "c", actor: "alice", now: T0 + 2 })).toEqual({ status: "cancelled" });
    const counts = sortedCounts(await store.countJobs());
    expect(counts).toEqual([
      { queue: "q1", state: "scheduled", count: 1 },
      { queue: "q1", state: "succeeded", count: 1 },
      { queue: "q2", state: "cancelled", count: 1 },
    ]);
    for (const count of counts) expect(count.count).toBeGreaterThan(0);
  });

  clause("reads: only a leased job carries a lease owner and expiry; every other state has both null", async () => {
    const store = await ctx.store();
    const leaseFields = async (id: string) => {
      const job = await store.getJob(id);
      expect(job, id).not.toBeNull();
      const summary = (await store.listJobs()).jobs.find((j) => j.id === id);
      expect(summary, id).toMatchObject({ leaseOwner: job!.leaseOwner, leaseExpiresAt: job!.leaseExpiresAt });
      return { state: job!.state, leaseOwner: job!.leaseOwner, leaseExpiresAt: job!.leaseExpiresAt };
    };

    const held = await leaseJob(store, "held", {}, { workerId: "worker-7", now: T0 + 5 });
    expect(await leaseFields("held")).toEqual({ state: "leased", leaseOwner: "worker-7", leaseExpiresAt: T0 + 5 + LEASE });
    expect(held.leaseExpiresAt).toBe(T0 + 5 + LEASE);

    await enqueueJobs(store, [newJob("waiting", { parentIds: ["held"], queue: "side" }), newJob("idle", { queue: "side" })]);
    const succeeded = await leaseJob(store, "ok");
    await report(store, succeeded, { type: "succeeded" });
    const dead = await leaseJob(store, "dead");
    await report(store, dead, { type: "failed", retryAt: null });
    const retried = await leaseJob(store, "retried");
    await report(store, retried, { type: "failed", retryAt: T0 + MINUTE });
    const stuck = await leaseJob(store, "stuck");
    await report(store, stuck, { type: "unroutable", reason: "unknown job name" });
    const stopped = await leaseJob(store, "stopped");
    await report(store, stopped, { type: "cancelled" });
    const expired = await leaseJob(store, "expired", { queue: "exp" }, { queues: ["exp"] });
    const swept = await store.expireLeases({ now: T0 + LEASE, max: 10, queues: ["exp"], retry: DEFAULT_RETRY });
    expect(swept.expired).toEqual([{ jobId: expired.id, state: "scheduled" }]);

    const expectations: [string, JobState][] = [
      ["waiting", "awaitingParents"],
      ["idle", "scheduled"],
      ["ok", "succeeded"],
      ["dead", "deadLettered"],
      ["retried", "scheduled"],
      ["stuck", "quarantined"],
      ["stopped", "cancelled"],
      ["expired", "scheduled"],
    ];
    for (const [id, state] of expectations) {
      expect(await leaseFields(id), id).toEqual({ state, leaseOwner: null, leaseExpiresAt: null });
    }
    expect(await leaseFields("held")).toMatchObject({ state: "leased", leaseOwner: "worker-7" });
  });

  clause("reads: getDependencies gives parents with state and gating, and children with state", async () => {
    const store = await ctx.store();
    await enqueueJobs(store, [
      newJob("p1", { queue: "pq" }),
      newJob("p2", { queue: "other" }),
      newJob("c", { parentIds: ["p1", "p2"] }),
      newJob("g", { parentIds: ["c"] }),
    ]);
    const byId = <T extends { jobId: string }>(list: readonly T[]) => [...list].sort((x, y) => (x.jobId < y.jobId ? -1 : 1));

    let edges = await store.getDependencies("c");
    expect(byId(edges!.parents)).toEqual([
      { jobId: "p1", state: "scheduled", gating: true },
      { jobId: "p2", state: "scheduled", gating: true },
    ]);
    expect(edges!.children).toEqual([{ jobId: "g", state: "awaitingParents" }]);

    const [p1] = await claimJobs(store, { queues: ["pq"] });
    edges = await store.getDependencies("c");
    expect(byId(edges!.parents)).toEqual([
      { jobId: "p1", state: "leased", gating: true },
      { jobId: "p2", state: "scheduled", gating: true },
    ]);
    await report(store, p1!, { type: "succeeded" }, T0 + 1);
    edges = await store.getDependencies("c");
    expect(byId(edges!.parents)).toEqual([
      { jobId: "p1", state: "succeeded", gating: false },
      { jobId: "p2", state: "scheduled", gating: true },
    ]);

    expect(byId((await store.getDependencies("p1"))!.children)).toEqual([{ jobId: "c", state: "awaitingParents" }]);
    expect(await store.getDependencies("p2")).toEqual({ parents: [], children: [{ jobId: "c", state: "awaitingParents" }] });
    expect(await store.getDependencies("g")).toEqual({ parents: [{ jobId: "c", state: "awaitingParents", gating: true }], children: [] });

    expect(await store.cancelJob({ jobId: "p2", actor: "alice", now: T0 + 2 })).toEqual({ status: "cancelled" });
    expect(byId((await store.getDependencies("c"))!.parents)).toEqual([
      { jobId: "p1", state: "succeeded", gating: false },
      { jobId: "p2", state: "cancelled", gating: false },
    ]);
    expect(await store.getDependencies("g")).toEqual({ parents: [{ jobId: "c", state: "cancelled", gating: false }], children: [] });
  });

  clause("reads: unknown ids read as null job, null output, empty history and null dependencies", async () => {
    const store = await ctx.store();
    await enqueueJobs(store, [newJob("known")]);
    expect(await store.getJob("ghost")).toBeNull();
    expect(await store.getJobOutput("ghost")).toBeNull();
    expect(await store.getJobHistory("ghost")).toEqual([]);
    expect(await store.getDependencies("ghost")).toBeNull();
    // The known job is found, and has no output yet.
    expect(await store.getJob("known")).not.toBeNull();
    expect(await store.getJobOutput("known")).toBeNull();
    expect(await store.getDependencies("known")).toEqual({ parents: [], children: [] });
  });

  clauseNeeding(ctx, "transactions", "reads: an enqueue inside an open transaction is invisible to every read until commit", async () => {
    const store = await ctx.store();
    await enqueueJobs(store, [newJob("before", { queue: "q1" })]);
    const tx = await ctx.hooks.beginTransaction!(store);
    let finished = false;
    try {
      const [result] = await store.enqueue({ jobs: [newJob("inTx", { queue: "txq" })], now: T0, tx: tx.tx });
      expect(result).toMatchObject({ status: "created" });
      // Never wait unboundedly on a read while the transaction is open: a store that serializes
      // reads behind it fails here, and the finally below ends the transaction.
      const reads = Promise.all([store.getJob("inTx"), store.listJobs(), store.countJobs()]);
      expect(await settlesWithin(reads, 30_000), "reads do not block on an open caller transaction").toBe(true);
      const [job, page, counts] = await reads;
      expect(job).toBeNull();
      expect(page.jobs.map((j) => j.id)).toEqual(["before"]);
      expect(counts).toEqual([{ queue: "q1", state: "scheduled", count: 1 }]);
      await tx.commit();
      finished = true;
    } finally {
      if (!finished) await tx.rollback().catch(() => undefined);
    }
    expect(await store.getJob("inTx")).toMatchObject({ id: "inTx", state: "scheduled" });
    expect(await listIds(store)).toEqual(["before", "inTx"]);
    expect(sortedCounts(await store.countJobs())).toEqual([
      { queue: "q1", state: "scheduled", count: 1 },
      { queue: "txq", state: "scheduled", count: 1 },
    ]);
  });
}
