import { type JobStore, type TransitionRecord, scheduledJobId } from "@belay/contract";
import { expect } from "vitest";
import { clause } from "../clause.js";
import {
  LEASE, MINUTE, SECOND, allJobIds, claimJobs, enqueueJobs, expectBelayError, leaseJob, newJob, report, stateOf, T0,
} from "../fixtures.js";
import { snapshot } from "../snapshot.js";
import type { SuiteContext } from "../suite-context.js";

// Where a job's attempts, history and reports come from: the job's own retry policy (stored with
// it, applied on every path), why each transition happened and which worker wrote it, and which
// attempt each outcome result is about.

/** (state, cause, worker, attempt) of each transition: what a reader of the history learns. */
async function story(store: JobStore, id: string) {
  return (await store.getJobHistory(id)).map((t: TransitionRecord) => [t.state, t.cause, t.workerId, t.attempt]);
}

const OWN = { maxAttempts: 1, delaysMs: [5 * SECOND] };

export function provenanceClauses(ctx: SuiteContext): void {
  clause("retry: a job's own retry policy is stored with it and read back on the job and its claim", async () => {
    const store = await ctx.store();
    await enqueueJobs(store, [newJob("own", { retry: { maxAttempts: 4, delaysMs: [1, 2, 3] } }), newJob("none")]);
    expect((await store.getJob("own"))?.retry).toEqual({ maxAttempts: 4, delaysMs: [1, 2, 3] });
    expect((await store.getJob("none"))?.retry).toBeNull();
    const claimed = await claimJobs(store, { max: 2 });
    expect(Object.fromEntries(claimed.map((j) => [j.id, j.retry]))).toEqual({ own: { maxAttempts: 4, delaysMs: [1, 2, 3] }, none: null });
    expect((await store.listJobs({ ids: ["own"] })).jobs[0]?.retry).toEqual({ maxAttempts: 4, delaysMs: [1, 2, 3] });
  });

  clause("retry: a malformed retry policy is rejected naming the field, and nothing is written", async () => {
    const store = await ctx.store();
    const cases: [unknown, string][] = [
      [{ maxAttempts: 0, delaysMs: [1] }, "retry.maxAttempts"],
      [{ maxAttempts: 2 ** 31, delaysMs: [1] }, "retry.maxAttempts"],
      [{ maxAttempts: 3, delaysMs: [] }, "retry.delaysMs"],
      [{ maxAttempts: 3, delaysMs: [-1] }, "retry.delaysMs[0]"],
      [{ maxAttempts: 3, delaysMs: [1, 2 ** 31] }, "retry.delaysMs[1]"],
      ["3 times", "retry"],
    ];
    for (const [retry, field] of cases) {
      const [result] = await store.enqueue({ jobs: [newJob("j", { retry: retry as never })], now: T0 });
      expect(result, field).toMatchObject({ status: "rejected", rejection: { code: "BELAY_INVALID_INPUT", field } });
    }
    expect(await allJobIds(store)).toEqual([]);
  });

  clause("retry: lease expiry applies the job's own ceiling and delays, whatever policy the sweeper passes", async () => {
    const store = await ctx.store();
    await leaseJob(store, "once", { retry: OWN });
    await leaseJob(store, "patient", { retry: { maxAttempts: 9, delaysMs: [7 * SECOND] } });
    const generous = { maxAttempts: 50, delaysMs: [SECOND] };
    const { expired } = await store.expireLeases({ now: T0 + LEASE, max: 10, retry: generous });
    expect(Object.fromEntries(expired.map((e) => [e.jobId, e.state]))).toEqual({ once: "deadLettered", patient: "scheduled" });
    expect((await store.getJob("patient"))?.dueAt).toBe(T0 + LEASE + 7 * SECOND);
  });

  clause("retry: a job without a policy of its own takes the sweeper's at lease expiry", async () => {
    const store = await ctx.store();
    await leaseJob(store, "plain");
    const { expired } = await store.expireLeases({ now: T0 + LEASE, max: 10, retry: { maxAttempts: 1, delaysMs: [SECOND] } });
    expect(expired).toEqual([{ jobId: "plain", state: "deadLettered" }]);
  });

  clause("retry: a schedule's retry policy is stored and carried by every job it mints or triggers", async () => {
    const store = await ctx.store();
    const schedule = {
      id: "nightly",
      cron: "* * * * *",
      timeZone: "UTC",
      jobName: "test.job",
      queue: "default",
      payload: "{}",
      catchUp: "skip" as const,
      noOverlap: false,
      retry: { maxAttempts: 2, delaysMs: [3 * SECOND] },
    };
    await store.upsertSchedule({ schedule, now: T0 });
    expect((await store.getSchedule("nightly"))?.retry).toEqual(schedule.retry);
    expect((await store.listSchedules())[0]?.retry).toEqual(schedule.retry);
    const tick = T0 + MINUTE;
    await store.mintDue({ decisions: [{ scheduleId: "nightly", expectedCursor: T0, newCursor: tick, mint: [tick], skip: [] }], now: tick });
    await store.triggerSchedule({ scheduleId: "nightly", jobId: "extra", actor: "op", now: tick });
    expect((await store.getJob(scheduledJobId("nightly", tick)))?.retry).toEqual(schedule.retry);
    expect((await store.getJob("extra"))?.retry).toEqual(schedule.retry);
    await store.upsertSchedule({ schedule: { ...schedule, retry: null }, now: tick });
    expect((await store.getSchedule("nightly"))?.retry).toBeNull();
  });

  clause("history: every transition of a worker's lifecycle names its cause and the worker that wrote it", async () => {
    const store = await ctx.store();
    await enqueueJobs(store, [newJob("j1")]);
    const first = (await claimJobs(store, { workerId: "wA" }))[0]!;
    await report(store, first, { type: "failed", retryAt: T0 + SECOND, failureDetail: "boom" }, T0, "wA");
    const second = (await claimJobs(store, { workerId: "wB", now: T0 + SECOND }))[0]!;
    await store.release({ workerId: "wB", leases: [{ jobId: "j1", attempt: second.attempt }], now: T0 + 2 * SECOND });
    await claimJobs(store, { workerId: "wC", now: T0 + 2 * SECOND });
    await store.expireLeases({ now: T0 + 2 * SECOND + LEASE, max: 10, retry: { maxAttempts: 10, delaysMs: [0] } });
    const last = (await claimJobs(store, { workerId: "wD", now: T0 + 2 * SECOND + LEASE }))[0]!;
    await report(store, last, { type: "succeeded", output: null }, T0 + 3 * SECOND + LEASE, "wD");
    expect(await story(store, "j1")).toEqual([
      ["scheduled", "enqueued", null, 0],
      ["leased", "claimed", "wA", 1],
      ["scheduled", "retryScheduled", "wA", 1],
      ["leased", "claimed", "wB", 2],
      ["scheduled", "released", "wB", 2],
      ["leased", "claimed", "wC", 3],
      ["scheduled", "leaseExpired", "wC", 3],
      ["leased", "claimed", "wD", 4],
      ["succeeded", "succeeded", "wD", 4],
    ]);
  });

  clause("history: terminal outcomes name their cause: failed, cancelled, unroutable, and a retry turned into a cancel", async () => {
    const store = await ctx.store();
    const dead = await leaseJob(store, "dead");
    await report(store, dead, { type: "failed", retryAt: null }, T0, "w1");
    const quit = await leaseJob(store, "quit");
    await report(store, quit, { type: "cancelled" }, T0, "w1");
    const lost = await leaseJob(store, "lost");
    await report(store, lost, { type: "unroutable", reason: "unknown job name" }, T0, "w1");
    const asked = await leaseJob(store, "asked");
    await store.cancelJob({ jobId: "asked", actor: "op", now: T0 });
    await report(store, asked, { type: "failed", retryAt: T0 + SECOND }, T0, "w1");
    for (const [id, state, cause] of [
      ["dead", "deadLettered", "failed"],
      ["quit", "cancelled", "cancelled"],
      ["lost", "quarantined", "unroutable"],
      ["asked", "cancelled", "cancelled"],
    ] as const) {
      expect((await story(store, id)).at(-1), id).toEqual([state, cause, "w1", 1]);
    }
  });

  clause("history: operator actions, schedules and dependencies name their causes, with no worker", async () => {
    const store = await ctx.store();
    await enqueueJobs(store, [newJob("p1"), newJob("c1", { parentIds: ["p1"] }), newJob("idle"), newJob("p2"), newJob("c2", { parentIds: ["p2"] })]);
    await store.cancelJob({ jobId: "idle", actor: "op", now: T0 });
    const p1 = (await claimJobs(store, { max: 1 }))[0]!;
    await report(store, p1, { type: "succeeded" });
    await store.cancelJob({ jobId: "p2", actor: "op", now: T0 });
    const doomed = await leaseJob(store, "doomed", { queue: "other" });
    await report(store, doomed, { type: "failed", retryAt: null });
    await store.requeueJob({ jobId: "doomed", actor: "op", now: T0 + SECOND });
    await store.upsertSchedule({
      schedule: { id: "s", cron: "* * * * *", timeZone: "UTC", jobName: "test.job", queue: "default", payload: "{}", catchUp: "skip", noOverlap: false },
      now: T0,
    });
    await store.mintDue({ decisions: [{ scheduleId: "s", expectedCursor: T0, newCursor: T0 + MINUTE, mint: [T0 + MINUTE], skip: [] }], now: T0 + MINUTE });
    await store.triggerSchedule({ scheduleId: "s", jobId: "now", actor: "op", now: T0 + MINUTE });
    expect(await story(store, "idle")).toEqual([["scheduled", "enqueued", null, 0], ["cancelled", "operatorCancelled", null, 0]]);
    expect(await story(store, "c1")).toEqual([["awaitingParents", "enqueued", null, 0], ["scheduled", "parentsResolved", null, 0]]);
    expect((await story(store, "c2")).at(-1)).toEqual(["cancelled", "parentFailed", null, 0]);
    expect((await story(store, "doomed")).at(-1)).toEqual(["scheduled", "requeued", null, 0]);
    expect(await story(store, scheduledJobId("s", T0 + MINUTE))).toEqual([["scheduled", "minted", null, 0]]);
    expect(await story(store, "now")).toEqual([["scheduled", "triggered", null, 0]]);
    await enqueueJobs(store, [newJob("late", { parentIds: ["p2"] })]);
    expect(await story(store, "late")).toEqual([["cancelled", "parentFailed", null, 0]]);
  });

  clause("history: a lease expiry at the ceiling or with a cancel pending names leaseExpired and the lapsed owner", async () => {
    const store = await ctx.store();
    await leaseJob(store, "ceiling", {}, { workerId: "wX" });
    await leaseJob(store, "asked", {}, { workerId: "wY" });
    await store.cancelJob({ jobId: "asked", actor: "op", now: T0 });
    await store.expireLeases({ now: T0 + LEASE, max: 10, retry: { maxAttempts: 1, delaysMs: [0] } });
    expect((await story(store, "ceiling")).at(-1)).toEqual(["deadLettered", "leaseExpired", "wX", 1]);
    expect((await story(store, "asked")).at(-1)).toEqual(["cancelled", "leaseExpired", "wY", 1]);
  });

  clause("outcomes: every result names the attempt of its report — applied, stale and rejected alike", async () => {
    const store = await ctx.store({ bounds: { outputBytes: 8 } });
    const job = await leaseJob(store, "j1");
    const other = await leaseJob(store, "j2");
    const results = await store.reportOutcomes({
      reports: [
        { jobId: "j1", workerId: "w1", attempt: job.attempt, outcome: { type: "succeeded", output: '"far too long"' } },
        { jobId: "j1", workerId: "w1", attempt: job.attempt + 5, outcome: { type: "cancelled" } },
        { jobId: "j2", workerId: "w1", attempt: other.attempt, outcome: { type: "succeeded", output: "1" } },
      ],
      now: T0 + SECOND,
    });
    expect(results.map((r) => [r.jobId, r.attempt, r.status])).toEqual([
      ["j1", job.attempt, "rejected"],
      ["j1", job.attempt + 5, "stale"],
      ["j2", other.attempt, "applied"],
    ]);
  });

  clause("reads: listJobs by ids returns exactly those jobs (unknown ids match nothing) and combines with other filters", async () => {
    const store = await ctx.store();
    await enqueueJobs(store, [newJob("a"), newJob("b", { queue: "other" }), newJob("c"), newJob("d")]);
    expect((await store.listJobs({ ids: ["c", "a", "missing"] })).jobs.map((j) => j.id)).toEqual(["a", "c"]);
    expect((await store.listJobs({ ids: ["a", "b"], queues: ["other"] })).jobs.map((j) => j.id)).toEqual(["b"]);
    expect((await store.listJobs({ ids: [] })).jobs).toEqual([]);
  });

  clause("reads: listJobs refuses more ids than a page, naming the field", async () => {
    const store = await ctx.store({ bounds: { monitorPage: 3 } });
    await expectBelayError(() => store.listJobs({ ids: ["a", "b", "c", "d"] }), "BELAY_INVALID_INPUT", { field: "ids" });
    await expectBelayError(() => store.listJobs({ ids: ["a", ""] }), "BELAY_INVALID_INPUT", { field: "ids[1]" });
  });

  clause("enqueue: a duplicate or refused enqueue writes nothing at all, not even for a queue it names first", async () => {
    const store = await ctx.store();
    await enqueueJobs(store, [newJob("j1")]);
    const before = await snapshot(store);
    const [duplicate] = await store.enqueue({ jobs: [newJob("j1", { queue: "brand-new" })], now: T0 + SECOND });
    expect(duplicate).toMatchObject({ status: "duplicate", state: "scheduled" });
    const refused = await store.enqueue({ jobs: [newJob("j2", { queue: "fresh" }), newJob("j3", { parentIds: ["missing"] })], now: T0 });
    expect(refused.map((r) => r.status)).toEqual(["notWritten", "rejected"]);
    expect(await snapshot(store)).toEqual(before);
    expect(await stateOf(store, "j1")).toBe("scheduled");
  });
}
