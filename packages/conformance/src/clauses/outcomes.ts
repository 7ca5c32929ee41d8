import { type ClaimedJob, type JobStore, type Outcome, type OutcomeReport, utf8ByteLength } from "@belay/contract";
import { expect } from "vitest";
import { clause } from "../clause.js";
import {
  LEASE, SECOND, T0, claimJobs, enqueueJobs, expectBelayError, label, leaseJob, lineage, newJob, report, reportRow, sortedTags, tag,
} from "../fixtures.js";
import type { SuiteContext } from "../suite-context.js";

/** The job with its history and output, to prove an operation changed nothing. */
async function readBack(store: JobStore, id: string): Promise<unknown> {
  return { job: await store.getJob(id), history: await store.getJobHistory(id), output: await store.getJobOutput(id) };
}

/** Enqueues the jobs (all due at T0) and claims them all as `w1` at T0. */
async function leaseAll(store: JobStore, ids: readonly string[]): Promise<Map<string, ClaimedJob>> {
  await enqueueJobs(store, ids.map((id) => newJob(id)));
  const claimed = await claimJobs(store, { max: ids.length });
  expect(claimed.map((j) => j.id).sort()).toEqual([...ids].sort());
  return new Map(claimed.map((j) => [j.id, j]));
}

/** Claims exactly the job `id` (which must be the only due job of its queue) as `w1`. */
async function claimOnly(store: JobStore, id: string, now = T0): Promise<ClaimedJob> {
  const claimed = await claimJobs(store, { now });
  expect(claimed.map((j) => j.id)).toEqual([id]);
  return claimed[0]!;
}

export function outcomeClauses(ctx: SuiteContext): void {
  clause("outcomes: success makes the job succeeded, clears the lease and sets terminalAt to now", async () => {
    const store = await ctx.store();
    const job = await leaseJob(store, "j1");
    expect(await report(store, job, { type: "succeeded" }, T0 + 5 * SECOND)).toEqual({ jobId: "j1", attempt: expect.any(Number), status: "applied", state: "succeeded" });
    expect(await store.getJob("j1")).toMatchObject({
      state: "succeeded",
      attempt: 1,
      leaseOwner: null,
      leaseExpiresAt: null,
      cancelRequested: false,
      terminalAt: T0 + 5 * SECOND,
    });
    expect((await store.getJob("j1"))!.terminalCause).not.toBeNull();
    const history = await store.getJobHistory("j1");
    expect(history.at(-1)).toMatchObject({ state: "succeeded", at: T0 + 5 * SECOND, attempt: 1 });
    expect(await claimJobs(store, { now: T0 + LEASE * 10 })).toEqual([]);
  });

  clause("outcomes: the output is stored with the success and read back verbatim by getJobOutput", async () => {
    const store = await ctx.store();
    const jobs = await leaseAll(store, ["with", "without", "failed"]);
    const output = '{ "n": 1.50,  "s": "é🎉" }';
    const results = await store.reportOutcomes({
      reports: [
        reportRow(jobs.get("with")!, { type: "succeeded", output }),
        reportRow(jobs.get("without")!, { type: "succeeded" }),
        reportRow(jobs.get("failed")!, { type: "failed", retryAt: null }),
      ],
      now: T0 + SECOND,
    });
    expect(results.map((r) => r.status)).toEqual(["applied", "applied", "applied"]);
    expect(await store.getJobOutput("with")).toBe(output);
    expect(await store.getJobOutput("without")).toBeNull();
    expect(await store.getJobOutput("failed")).toBeNull();
    expect(await store.getJobOutput("ghost")).toBeNull();
  });

  clause("outcomes: an output of exactly bounds.outputBytes UTF-8 bytes is accepted", async () => {
    const store = await ctx.store({ bounds: { outputBytes: 10 } });
    const job = await leaseJob(store, "j1");
    const exact = '"éééé"'; // 2 + 4 × 2 = 10 bytes, 6 characters
    expect(utf8ByteLength(exact)).toBe(10);
    expect(await report(store, job, { type: "succeeded", output: exact })).toEqual({ jobId: "j1", attempt: expect.any(Number), status: "applied", state: "succeeded" });
    expect(await store.getJobOutput("j1")).toBe(exact);
  });

  clause("outcomes: an output one byte over the bound rejects that row only, naming limit and size; siblings still apply", async () => {
    const store = await ctx.store({ bounds: { outputBytes: 10 } });
    const jobs = await leaseAll(store, ["ok", "big", "other"]);
    const before = await readBack(store, "big");
    const over = '"éééé "'; // 11 bytes, 7 characters: only a byte count catches it
    const results = await store.reportOutcomes({
      reports: [
        reportRow(jobs.get("ok")!, { type: "succeeded", output: '"ok"' }),
        reportRow(jobs.get("big")!, { type: "succeeded", output: over }, { addTags: [{ key: "", value: "added" }] }),
        reportRow(jobs.get("other")!, { type: "cancelled" }),
      ],
      now: T0 + SECOND,
    });
    expect(results[0]).toEqual({ jobId: "ok", attempt: expect.any(Number), status: "applied", state: "succeeded" });
    expect(results[1]).toMatchObject({
      jobId: "big",
      attempt: expect.any(Number),
      status: "rejected",
      rejection: { code: "BELAY_OUTPUT_TOO_LARGE", bound: "outputBytes", limit: 10, actual: 11 },
    });
    expect(results[2]).toEqual({ jobId: "other", attempt: expect.any(Number), status: "applied", state: "cancelled" });
    // The rejected job is untouched: still leased by w1, no output, no tags, no transition.
    expect(await readBack(store, "big")).toEqual(before);
    expect(await store.getJobOutput("ok")).toBe('"ok"');
    // Its lease still holds, so a valid report applies afterwards.
    expect(await report(store, jobs.get("big")!, { type: "succeeded", output: '"small"' }, T0 + 2 * SECOND)).toMatchObject({
      status: "applied",
    });
  });

  clause("outcomes: a failure with retryAt reschedules at retryAt, clears the lease, keeps the attempt", async () => {
    const store = await ctx.store();
    const job = await leaseJob(store, "j1");
    const retryAt = T0 + 30 * SECOND;
    expect(await report(store, job, { type: "failed", retryAt, failureDetail: "Error: boom" }, T0 + SECOND)).toEqual({
      jobId: "j1",
      attempt: expect.any(Number),
      status: "applied",
      state: "scheduled",
    });
    expect(await store.getJob("j1")).toMatchObject({
      state: "scheduled",
      dueAt: retryAt,
      attempt: 1,
      leaseOwner: null,
      leaseExpiresAt: null,
      terminalAt: null,
      terminalCause: null,
    });
    expect(await claimJobs(store, { now: retryAt - 1 })).toEqual([]);
    const again = await claimOnly(store, "j1", retryAt);
    expect(again.attempt).toBe(2);
  });

  clause("outcomes: a failure with retryAt null dead-letters the job", async () => {
    const store = await ctx.store();
    const job = await leaseJob(store, "j1");
    expect(await report(store, job, { type: "failed", retryAt: null }, T0 + SECOND)).toEqual({
      jobId: "j1",
      attempt: expect.any(Number),
      status: "applied",
      state: "deadLettered",
    });
    expect(await store.getJob("j1")).toMatchObject({
      state: "deadLettered",
      attempt: 1,
      leaseOwner: null,
      leaseExpiresAt: null,
      terminalAt: T0 + SECOND,
    });
    expect((await store.getJob("j1"))!.terminalCause).not.toBeNull();
    expect(await claimJobs(store, { now: T0 + 100 * LEASE })).toEqual([]);
  });

  clause("outcomes: a cancelled outcome cancels the job", async () => {
    const store = await ctx.store();
    const job = await leaseJob(store, "j1");
    expect(await report(store, job, { type: "cancelled" }, T0 + SECOND)).toEqual({ jobId: "j1", attempt: expect.any(Number), status: "applied", state: "cancelled" });
    expect(await store.getJob("j1")).toMatchObject({
      state: "cancelled",
      leaseOwner: null,
      leaseExpiresAt: null,
      terminalAt: T0 + SECOND,
    });
    expect(await claimJobs(store, { now: T0 + 100 * LEASE })).toEqual([]);
  });

  clause("outcomes: an unroutable outcome quarantines the job, distinct from dead-lettering", async () => {
    const store = await ctx.store();
    const job = await leaseJob(store, "j1");
    expect(await report(store, job, { type: "unroutable", reason: "unknown job name test.job" }, T0 + SECOND)).toEqual({
      jobId: "j1",
      attempt: expect.any(Number),
      status: "applied",
      state: "quarantined",
    });
    const stored = await store.getJob("j1");
    expect(stored).toMatchObject({ state: "quarantined", leaseOwner: null, leaseExpiresAt: null, terminalAt: T0 + SECOND });
    expect(stored!.terminalCause).not.toBeNull();
    expect((await store.listJobs({ states: ["deadLettered"] })).jobs).toEqual([]);
    expect((await store.listJobs({ states: ["quarantined"] })).jobs.map((j) => j.id)).toEqual(["j1"]);
    expect(await claimJobs(store, { now: T0 + 100 * LEASE })).toEqual([]);
  });

  clause("outcomes: a report from another worker is stale and changes nothing", async () => {
    const store = await ctx.store();
    const job = await leaseJob(store, "j1");
    const before = await readBack(store, "j1");
    const results = await store.reportOutcomes({
      reports: [reportRow(job, { type: "succeeded", output: '"x"' }, { workerId: "w2", addTags: [{ key: "", value: "t" }] })],
      now: T0 + SECOND,
    });
    expect(results).toEqual([{ jobId: "j1", attempt: expect.any(Number), status: "stale" }]);
    expect(await readBack(store, "j1")).toEqual(before);
  });

  clause("outcomes: a report for another attempt is stale and changes nothing", async () => {
    const store = await ctx.store();
    const first = await leaseJob(store, "j1");
    await report(store, first, { type: "failed", retryAt: T0 + SECOND });
    const second = await claimOnly(store, "j1", T0 + SECOND);
    expect(second.attempt).toBe(2);
    const before = await readBack(store, "j1");
    const results = await store.reportOutcomes({
      reports: [
        reportRow(second, { type: "succeeded" }, { attempt: 1 }),
        reportRow(second, { type: "succeeded" }, { attempt: 3 }),
      ],
      now: T0 + 2 * SECOND,
    });
    expect(results).toEqual([
      { jobId: "j1", attempt: expect.any(Number), status: "stale" },
      { jobId: "j1", attempt: expect.any(Number), status: "stale" },
    ]);
    expect(await readBack(store, "j1")).toEqual(before);
  });

  clause("outcomes: a lease that expires exactly at now is stale; one millisecond before, the report applies", async () => {
    const store = await ctx.store();
    const jobs = await leaseAll(store, ["early", "exact"]);
    expect(await report(store, jobs.get("early")!, { type: "succeeded" }, T0 + LEASE - 1)).toEqual({
      jobId: "early",
      attempt: expect.any(Number),
      status: "applied",
      state: "succeeded",
    });
    const before = await readBack(store, "exact");
    expect(await report(store, jobs.get("exact")!, { type: "succeeded", output: '"late"' }, T0 + LEASE)).toEqual({
      jobId: "exact",
      attempt: expect.any(Number),
      status: "stale",
    });
    expect(await readBack(store, "exact")).toEqual(before);
  });

  clause("outcomes: a job no longer leased is stale; the stale row's output and added tags are dropped", async () => {
    const store = await ctx.store();
    const jobs = await leaseAll(store, ["done", "retrying"]);
    await report(store, jobs.get("done")!, { type: "succeeded", output: '"first"' });
    await report(store, jobs.get("retrying")!, { type: "failed", retryAt: T0 + LEASE * 10 });
    const beforeDone = await readBack(store, "done");
    const beforeRetrying = await readBack(store, "retrying");
    const addTags = [tag("late", "yes")];
    const results = await store.reportOutcomes({
      reports: [
        reportRow(jobs.get("done")!, { type: "succeeded", output: '"second"' }, { addTags }),
        reportRow(jobs.get("retrying")!, { type: "succeeded", output: '"sneaky"' }, { addTags }),
      ],
      now: T0 + SECOND,
    });
    expect(results).toEqual([
      { jobId: "done", attempt: expect.any(Number), status: "stale" },
      { jobId: "retrying", attempt: expect.any(Number), status: "stale" },
    ]);
    expect(await readBack(store, "done")).toEqual(beforeDone);
    expect(await readBack(store, "retrying")).toEqual(beforeRetrying);
    expect(await store.getJobOutput("done")).toBe('"first"');
    expect(await store.getJobOutput("retrying")).toBeNull();
  });

  clause("outcomes: a report for an unknown job is stale, not an error", async () => {
    const store = await ctx.store();
    const results = await store.reportOutcomes({
      reports: [{ jobId: "ghost", workerId: "w1", attempt: 1, outcome: { type: "succeeded" } }],
      now: T0,
    });
    expect(results).toEqual([{ jobId: "ghost", attempt: expect.any(Number), status: "stale" }]);
    expect(await store.getJob("ghost")).toBeNull();
  });

  clause("outcomes: a batch applies every live row and fences every stale row, results in input order", async () => {
    const store = await ctx.store();
    const jobs = await leaseAll(store, ["a", "b", "c", "d"]);
    const beforeB = await readBack(store, "b");
    const beforeD = await readBack(store, "d");
    const results = await store.reportOutcomes({
      reports: [
        reportRow(jobs.get("c")!, { type: "failed", retryAt: T0 + LEASE }),
        reportRow(jobs.get("b")!, { type: "succeeded" }, { workerId: "intruder" }),
        reportRow(jobs.get("a")!, { type: "succeeded", output: "1" }),
        reportRow(jobs.get("d")!, { type: "cancelled" }, { attempt: 2 }),
      ],
      now: T0 + SECOND,
    });
    expect(results).toEqual([
      { jobId: "c", attempt: expect.any(Number), status: "applied", state: "scheduled" },
      { jobId: "b", attempt: expect.any(Number), status: "stale" },
      { jobId: "a", attempt: expect.any(Number), status: "applied", state: "succeeded" },
      { jobId: "d", attempt: expect.any(Number), status: "stale" },
    ]);
    expect(await store.getJob("a")).toMatchObject({ state: "succeeded" });
    expect(await store.getJob("c")).toMatchObject({ state: "scheduled", dueAt: T0 + LEASE });
    expect(await readBack(store, "b")).toEqual(beforeB);
    expect(await readBack(store, "d")).toEqual(beforeD);
  });

  clause("outcomes: an empty batch returns an empty result", async () => {
    const store = await ctx.store();
    await leaseJob(store, "j1");
    const before = await readBack(store, "j1");
    expect(await store.reportOutcomes({ reports: [], now: T0 })).toEqual([]);
    expect(await readBack(store, "j1")).toEqual(before);
  });

  clause("outcomes: the same job twice in one batch applies the first row and fences the second", async () => {
    const store = await ctx.store();
    const job = await leaseJob(store, "j1");
    const results = await store.reportOutcomes({
      reports: [
        reportRow(job, { type: "succeeded", output: '"first"' }),
        reportRow(job, { type: "failed", retryAt: T0 + LEASE }, { addTags: [{ key: "", value: "second" }] }),
      ],
      now: T0 + SECOND,
    });
    expect(results).toEqual([
      { jobId: "j1", attempt: expect.any(Number), status: "applied", state: "succeeded" },
      { jobId: "j1", attempt: expect.any(Number), status: "stale" },
    ]);
    const stored = await store.getJob("j1");
    expect(stored).toMatchObject({ state: "succeeded", tags: [] });
    expect(await store.getJobOutput("j1")).toBe('"first"');
    expect((await store.getJobHistory("j1")).map((t) => t.state)).toEqual(["scheduled", "leased", "succeeded"]);
  });

  clause("outcomes: added tags ride the fence and are unioned with the job's tags", async () => {
    const store = await ctx.store();
    const job = await leaseJob(store, "j1", { tags: [label("urgent"), tag("tenant", "acme")] });
    const results = await store.reportOutcomes({
      reports: [reportRow(job, { type: "succeeded" }, { addTags: [label("urgent"), tag("tenant", "beta"), tag("result", "ok")] })],
      now: T0 + SECOND,
    });
    expect(results).toEqual([{ jobId: "j1", attempt: expect.any(Number), status: "applied", state: "succeeded" }]);
    expect(sortedTags((await store.getJob("j1"))!.tags)).toEqual(
      sortedTags([label("urgent"), tag("tenant", "acme"), tag("tenant", "beta"), tag("result", "ok")]),
    );
  });

  clause("outcomes: a pending cancel request turns a retried failure into cancelled and clears the flag", async () => {
    const store = await ctx.store();
    const job = await leaseJob(store, "j1");
    expect(await store.cancelJob({ jobId: "j1", actor: "alice", now: T0 + SECOND })).toEqual({ status: "cancelRequested" });
    expect(await store.getJob("j1")).toMatchObject({ state: "leased", cancelRequested: true });
    expect(await report(store, job, { type: "failed", retryAt: T0 + 10 * SECOND }, T0 + 2 * SECOND)).toEqual({
      jobId: "j1",
      attempt: expect.any(Number),
      status: "applied",
      state: "cancelled",
    });
    expect(await store.getJob("j1")).toMatchObject({
      state: "cancelled",
      cancelRequested: false,
      leaseOwner: null,
      leaseExpiresAt: null,
      terminalAt: T0 + 2 * SECOND,
    });
    expect(await claimJobs(store, { now: T0 + 10 * SECOND })).toEqual([]);
  });

  clause("outcomes: a pending cancel request does not override a success, and the flag is cleared", async () => {
    const store = await ctx.store();
    const job = await leaseJob(store, "j1");
    await store.cancelJob({ jobId: "j1", actor: "alice", now: T0 + SECOND });
    expect(await report(store, job, { type: "succeeded", output: '"done"' }, T0 + 2 * SECOND)).toEqual({
      jobId: "j1",
      attempt: expect.any(Number),
      status: "applied",
      state: "succeeded",
    });
    expect(await store.getJob("j1")).toMatchObject({ state: "succeeded", cancelRequested: false });
    expect(await store.getJobOutput("j1")).toBe('"done"');
  });

  clause("outcomes: a child with two parents awaits both, then is scheduled by the report that ends the last one", async () => {
    const store = await ctx.store();
    await enqueueJobs(store, [newJob("p1"), newJob("p2"), newJob("kid", { parentIds: ["p1", "p2"] })]);
    const jobs = new Map((await claimJobs(store)).map((j) => [j.id, j]));
    expect([...jobs.keys()].sort()).toEqual(["p1", "p2"]);
    await report(store, jobs.get("p1")!, { type: "succeeded" }, T0 + SECOND);
    expect(await store.getJob("kid")).toMatchObject({ state: "awaitingParents" });
    expect(await claimJobs(store, { workerId: "w2", now: T0 + SECOND })).toEqual([]);
    await report(store, jobs.get("p2")!, { type: "succeeded" }, T0 + 2 * SECOND);
    expect(await store.getJob("kid")).toMatchObject({ state: "scheduled" });
    expect((await claimJobs(store, { workerId: "w2", now: T0 + 2 * SECOND })).map((j) => j.id)).toEqual(["kid"]);
  });

  clause("outcomes: a retried failure of a parent keeps its onSuccess child waiting", async () => {
    const store = await ctx.store();
    await enqueueJobs(store, [newJob("p"), newJob("kid", { parentIds: ["p"] })]);
    const parent = await claimOnly(store, "p");
    await report(store, parent, { type: "failed", retryAt: T0 + 10 * SECOND }, T0 + SECOND);
    expect(await store.getJob("kid")).toMatchObject({ state: "awaitingParents", terminalAt: null });
  });

  clause("outcomes: a dead-lettered parent cancels its onSuccess child and grandchild, once each, naming the failure", async () => {
    const store = await ctx.store();
    await enqueueJobs(store, lineage("parentP", "childC", "grandG"));
    const parent = await claimOnly(store, "parentP");
    expect(await report(store, parent, { type: "failed", retryAt: null, failureDetail: "boom" }, T0 + SECOND)).toMatchObject({
      status: "applied",
      state: "deadLettered",
    });
    const child = await store.getJob("childC");
    const grandchild = await store.getJob("grandG");
    expect(child).toMatchObject({ state: "cancelled", terminalAt: T0 + SECOND });
    expect(grandchild).toMatchObject({ state: "cancelled", terminalAt: T0 + SECOND });
    expect(child!.terminalCause).toContain("parentP");
    // The grandchild's cause names its failing ancestry: its own parent or the origin of the cascade.
    expect(grandchild!.terminalCause).toMatch(/childC|parentP/);
    for (const id of ["childC", "grandG"]) {
      const cancelled = (await store.getJobHistory(id)).filter((t) => t.state === "cancelled");
      expect(cancelled, id).toHaveLength(1);
      expect(cancelled[0]).toMatchObject({ at: T0 + SECOND });
    }
  });

  clause("outcomes: cancelled and quarantined parents also cancel their onSuccess children", async () => {
    const store = await ctx.store();
    await enqueueJobs(store, [
      newJob("pc"),
      newJob("pq"),
      newJob("kidC", { parentIds: ["pc"] }),
      newJob("kidQ", { parentIds: ["pq"] }),
    ]);
    const jobs = new Map((await claimJobs(store)).map((j) => [j.id, j]));
    await store.reportOutcomes({
      reports: [reportRow(jobs.get("pc")!, { type: "cancelled" }), reportRow(jobs.get("pq")!, { type: "unroutable", reason: "bad payload" })],
      now: T0 + SECOND,
    });
    expect(await store.getJob("kidC")).toMatchObject({ state: "cancelled", terminalAt: T0 + SECOND });
    expect(await store.getJob("kidQ")).toMatchObject({ state: "cancelled", terminalAt: T0 + SECOND });
    expect((await store.getJob("kidC"))!.terminalCause).toContain("pc");
    expect((await store.getJob("kidQ"))!.terminalCause).toContain("pq");
  });

  clause("outcomes: an onAnyTerminal child of a failed parent is released, also at the end of a cancellation cascade", async () => {
    const store = await ctx.store();
    await enqueueJobs(store, [
      newJob("p"),
      newJob("anyKid", { parentIds: ["p"], dependencyMode: "onAnyTerminal" }),
      newJob("kid", { parentIds: ["p"] }),
      newJob("anyGrandkid", { parentIds: ["kid"], dependencyMode: "onAnyTerminal" }),
    ]);
    const parent = await claimOnly(store, "p");
    await report(store, parent, { type: "failed", retryAt: null }, T0 + SECOND);
    expect(await store.getJob("anyKid")).toMatchObject({ state: "scheduled", terminalAt: null });
    expect(await store.getJob("kid")).toMatchObject({ state: "cancelled" });
    expect(await store.getJob("anyGrandkid")).toMatchObject({ state: "scheduled", terminalAt: null });
    const claimed = await claimJobs(store, { workerId: "w2", now: T0 + SECOND });
    expect(claimed.map((j) => j.id).sort()).toEqual(["anyGrandkid", "anyKid"]);
  });

  clause("outcomes: a released child is due at the later of its own due time and now", async () => {
    const store = await ctx.store();
    await enqueueJobs(store, [
      newJob("p"),
      newJob("past", { parentIds: ["p"], dueAt: T0 }),
      newJob("future", { parentIds: ["p"], dueAt: T0 + 60 * LEASE }),
    ]);
    const parent = await claimOnly(store, "p");
    await report(store, parent, { type: "succeeded" }, T0 + 5 * SECOND);
    expect(await store.getJob("past")).toMatchObject({ state: "scheduled", dueAt: T0 + 5 * SECOND });
    expect(await store.getJob("future")).toMatchObject({ state: "scheduled", dueAt: T0 + 60 * LEASE });
    expect((await claimJobs(store, { workerId: "w2", now: T0 + 5 * SECOND })).map((j) => j.id)).toEqual(["past"]);
  });

  clause("outcomes: failure detail is stored on the failing transition only", async () => {
    const store = await ctx.store();
    const jobs = await leaseAll(store, ["retried", "dead"]);
    const detail = "TypeError: nope\n    at handler (job.ts:1:1) é🎉";
    await store.reportOutcomes({
      reports: [
        reportRow(jobs.get("retried")!, { type: "failed", retryAt: T0 + 10 * SECOND, failureDetail: detail }),
        reportRow(jobs.get("dead")!, { type: "failed", retryAt: null, failureDetail: "fatal" }),
      ],
      now: T0 + SECOND,
    });
    const retried = await store.getJobHistory("retried");
    expect(retried.map((t) => [t.state, t.failureDetail])).toEqual([
      ["scheduled", null],
      ["leased", null],
      ["scheduled", detail],
    ]);
    expect(retried.at(-1)).toMatchObject({ at: T0 + SECOND, attempt: 1 });
    const dead = await store.getJobHistory("dead");
    expect(dead.at(-1)).toMatchObject({ state: "deadLettered", failureDetail: "fatal", attempt: 1 });
  });

  clause("outcomes: failure detail over its bound is truncated on a UTF-8 character boundary", async () => {
    const bound = 10;
    const store = await ctx.store({ bounds: { failureDetailBytes: bound } });
    const jobs = await leaseAll(store, ["pair", "wide", "fits"]);
    // "ab€" is 5 bytes; "🎉" (a surrogate pair, 4 bytes) makes 9; the next "€" would make 12.
    const pair = "ab€🎉€xyz";
    // "éééé" is 8 bytes; the 3-byte "€" would make 11.
    const wide = "éééé€e";
    const fits = "é€é€"; // exactly 10 bytes: kept whole
    await store.reportOutcomes({
      reports: [
        reportRow(jobs.get("pair")!, { type: "failed", retryAt: null, failureDetail: pair }),
        reportRow(jobs.get("wide")!, { type: "failed", retryAt: T0 + LEASE, failureDetail: wide }),
        reportRow(jobs.get("fits")!, { type: "failed", retryAt: null, failureDetail: fits }),
      ],
      now: T0 + SECOND,
    });
    for (const [id, original] of [
      ["pair", pair],
      ["wide", wide],
    ] as const) {
      const stored = (await store.getJobHistory(id)).at(-1)!.failureDetail;
      expect(stored, id).not.toBeNull();
      expect(original.startsWith(stored!), `${id}: a prefix of the original`).toBe(true);
      expect(utf8ByteLength(stored!), id).toBeLessThanOrEqual(bound);
      const nextChar = String.fromCodePoint(original.slice(stored!.length).codePointAt(0)!);
      expect(utf8ByteLength(stored! + nextChar), `${id}: the next character would not fit`).toBeGreaterThan(bound);
    }
    expect((await store.getJobHistory("pair")).at(-1)!.failureDetail).toBe("ab€🎉");
    expect((await store.getJobHistory("wide")).at(-1)!.failureDetail).toBe("éééé");
    expect((await store.getJobHistory("fits")).at(-1)!.failureDetail).toBe(fits);
  });

  clause("outcomes: a malformed report throws InvalidInputError naming the field and applies nothing of the batch", async () => {
    const store = await ctx.store();
    const jobs = await leaseAll(store, ["good", "bad"]);
    const good = reportRow(jobs.get("good")!, { type: "succeeded", output: '"x"' });
    const bad = jobs.get("bad")!;
    const before = { good: await readBack(store, "good"), bad: await readBack(store, "bad") };
    const cases: [OutcomeReport, string][] = [
      [reportRow(bad, { type: "exploded" } as unknown as Outcome), "reports[1].outcome.type"],
      [reportRow(bad, { type: "succeeded" }, { attempt: 0 }), "reports[1].attempt"],
      [reportRow(bad, { type: "failed", retryAt: T0 + 1.5 }), "reports[1].outcome.retryAt"],
      [reportRow(bad, { type: "failed", retryAt: "soon" as unknown as number }), "reports[1].outcome.retryAt"],
    ];
    for (const [malformed, field] of cases) {
      await expectBelayError(() => store.reportOutcomes({ reports: [good, malformed], now: T0 + SECOND }), "BELAY_INVALID_INPUT", {
        field,
      });
      expect({ good: await readBack(store, "good"), bad: await readBack(store, "bad") }, field).toEqual(before);
    }
  });
}
