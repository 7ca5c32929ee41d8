import { type NewJob, scheduledJobId } from "@belay/contract";
import { expect } from "vitest";
import { clause } from "../clause.js";
import { LEASE, MINUTE, SECOND, T0, allJobIds, claimJobs, enqueueJobs, expectBelayError, newJob, report } from "../fixtures.js";
import type { SuiteContext } from "../suite-context.js";

// Every bound at exactly its limit: an enforced bound accepts it (only one past is refused), a
// clamped size returns the whole bound, a kept-newest log keeps exactly the bound.

/** `n` characters: `prefix` padded with `x`. */
function text(n: number, prefix = ""): string {
  return (prefix + "x".repeat(n)).slice(0, n);
}

const DAY = 24 * 60 * MINUTE;

export function boundClauses(ctx: SuiteContext): void {
  clause("bounds: every bound of a job accepts a value exactly at its limit, in enqueue and in a workflow, read back unchanged", async () => {
    const bounds = {
      jobNameLength: 8,
      idLength: 8,
      queueNameLength: 7,
      parents: 2,
      tagsPerJob: 3,
      tagKeyLength: 3,
      tagValueLength: 4,
      traceContextLength: 6,
      payloadBytes: 10,
      enqueueBatch: 4,
      workflowJobs: 3,
    };
    const store = await ctx.store({ bounds });
    const full = (id: string, parentIds: readonly string[]): NewJob =>
      newJob(id, {
        jobName: text(8, "n"),
        queue: text(7, "q"),
        payload: '"éééé"', // 2 + 4 × 2 = 10 bytes
        parentIds,
        tags: [
          { key: "kkk", value: "vvvv" },
          { key: "", value: "llll" },
          { key: "k", value: "v" },
        ],
        traceContext: "012345",
      });
    const results = await store.enqueue({ jobs: [newJob("p1"), newJob("p2"), full(text(8, "j"), ["p1", "p2"]), newJob("last")], now: T0 });
    expect(results.map((r) => r.status), "a batch of exactly enqueueBatch jobs").toEqual(["created", "created", "created", "created"]);
    const stored = await store.getJob(text(8, "j"));
    expect(stored).toMatchObject({
      jobName: text(8, "n"),
      queue: text(7, "q"),
      payload: '"éééé"',
      parentIds: ["p1", "p2"],
      traceContext: "012345",
    });
    expect(stored!.tags).toHaveLength(3);

    const workflow = await store.enqueueWorkflow({
      workflow: { id: text(8, "w"), name: text(8, "m"), jobs: [newJob("r1"), newJob("r2"), full(text(8, "c"), ["r1", "r2"])] },
      now: T0,
    });
    expect(workflow, "a workflow of exactly workflowJobs members, each at every bound").toMatchObject({ status: "created" });
    expect(await store.getWorkflow(text(8, "w"))).toMatchObject({ name: text(8, "m"), jobCount: 3 });
    expect(await store.getJob(text(8, "c"))).toMatchObject({ payload: '"éééé"', parentIds: ["r1", "r2"], traceContext: "012345" });

    // One past each: refused naming the bound (the same rule, at the next size up).
    const past: [NewJob, string, number][] = [
      [newJob(text(9, "j")), "BELAY_ID_TOO_LONG", 9],
      [newJob("a", { jobName: text(9) }), "BELAY_JOB_NAME_TOO_LONG", 9],
      [newJob("a", { queue: text(8) }), "BELAY_QUEUE_NAME_TOO_LONG", 8],
      [newJob("a", { payload: '"éééé "' }), "BELAY_PAYLOAD_TOO_LARGE", 11],
      [newJob("a", { parentIds: ["p1", "p2", "last"] }), "BELAY_TOO_MANY_PARENTS", 3],
      [newJob("a", { tags: ["1", "2", "3", "4"].map((value) => ({ key: "", value })) }), "BELAY_TOO_MANY_TAGS", 4],
      [newJob("a", { tags: [{ key: "kkkk", value: "v" }] }), "BELAY_TAG_KEY_TOO_LONG", 4],
      [newJob("a", { tags: [{ key: "k", value: "vvvvv" }] }), "BELAY_TAG_TOO_LONG", 5],
      [newJob("a", { traceContext: "0123456" }), "BELAY_TRACE_CONTEXT_TOO_LONG", 7],
    ];
    for (const [job, code, actual] of past) {
      const [result] = await store.enqueue({ jobs: [job], now: T0 });
      expect(result, code).toMatchObject({ status: "rejected", rejection: { code, actual, limit: actual - 1 } });
    }
    const batch = await store.enqueue({ jobs: ["a", "b", "c", "d", "e"].map((id) => newJob(id)), now: T0 });
    expect(batch[0]).toMatchObject({ status: "rejected", rejection: { code: "BELAY_BATCH_TOO_LARGE", limit: 4, actual: 5 } });
    expect(await allJobIds(store)).toEqual(["p1", "p2", text(8, "j"), "last", "r1", "r2", text(8, "c")]);
  });

  clause("bounds: tags added by an outcome may fill a job exactly to tagsPerJob", async () => {
    const store = await ctx.store({ bounds: { tagsPerJob: 3 } });
    await enqueueJobs(store, [newJob("j1", { tags: [{ key: "", value: "a" }, { key: "k", value: "1" }] })]);
    const [job] = await claimJobs(store);
    const [result] = await store.reportOutcomes({
      reports: [{ jobId: "j1", workerId: "w1", attempt: job!.attempt, outcome: { type: "succeeded" }, addTags: [{ key: "k", value: "2" }, { key: "", value: "a" }] }],
      now: T0 + 1,
    });
    expect(result).toMatchObject({ status: "applied", state: "succeeded" });
    expect((await store.getJob("j1"))!.tags).toHaveLength(3);
  });

  clause("bounds: ids and queue names exactly at their limits are accepted by every operation that takes them; one more is refused", async () => {
    const store = await ctx.store({ bounds: { idLength: 30, queueNameLength: 7 } });
    const worker = text(30, "w");
    const queue = text(7, "q");
    const observer = text(30, "o");
    const schedule = text(30 - 25, "s"); // a schedule id leaves room for the tick suffix of its jobs
    await enqueueJobs(store, [newJob(text(30, "j"), { queue })]);
    expect(await store.pauseQueue({ queue, actor: "ops", now: T0 })).toEqual({ status: "applied" });
    expect(await store.resumeQueue({ queue, actor: "ops", now: T0 })).toEqual({ status: "applied" });
    expect(await store.setConcurrencyLimit({ queue, limit: 5, actor: "ops", now: T0 })).toEqual({ status: "applied" });
    const [claimed] = await claimJobs(store, { workerId: worker, queues: [queue] });
    expect(claimed).toMatchObject({ id: text(30, "j") });
    const lease = { jobId: claimed!.id, attempt: claimed!.attempt };
    expect(await store.heartbeat({ workerId: worker, leases: [lease], leaseMs: LEASE, now: T0 + 1 })).toMatchObject([{ status: "renewed" }]);
    expect(await store.release({ workerId: worker, leases: [lease], now: T0 + 2 })).toEqual([{ jobId: claimed!.id, status: "released" }]);
    const [again] = await claimJobs(store, { workerId: worker, queues: [queue], now: T0 + 2 });
    expect(await report(store, again!, { type: "succeeded" }, T0 + 3, worker)).toMatchObject({ status: "applied" });
    expect((await store.expireLeases({ now: T0 + 4, max: 1, queues: [queue], retry: { maxAttempts: 1, delaysMs: [0] } })).expired).toEqual([]);

    expect(await store.registerObserver({ subscription: { observerId: observer, states: ["succeeded"], queues: [queue] }, startAt: "beginning", now: T0 })).toMatchObject({
      status: "created",
    });
    const deliveries = await store.claimObserverDeliveries({ observerId: observer, workerId: worker, max: 5, leaseMs: LEASE, now: T0 + 5 });
    expect(deliveries).toMatchObject({ status: "acquired", deliveries: [{ jobId: text(30, "j") }] });
    expect(await store.removeObserver({ observerId: observer })).toEqual({ status: "removed" });

    const definition = { id: schedule, cron: "* * * * *", timeZone: "UTC", jobName: "test.job", queue, payload: "{}", catchUp: "skip", noOverlap: false } as const;
    expect(await store.upsertSchedule({ schedule: definition, now: T0 })).toMatchObject({ status: "created" });
    const [minted] = await store.mintDue({ decisions: [{ scheduleId: schedule, expectedCursor: T0, newCursor: T0 + MINUTE, mint: [T0 + MINUTE], skip: [] }], now: T0 + MINUTE });
    expect(minted).toEqual({ scheduleId: schedule, status: "minted", jobIds: [scheduledJobId(schedule, T0 + MINUTE)] });
    expect(scheduledJobId(schedule, T0 + MINUTE)).toHaveLength(30);
    expect(await store.triggerSchedule({ scheduleId: schedule, jobId: text(30, "t"), actor: "ops", now: T0 + MINUTE })).toEqual({
      status: "triggered",
      jobId: text(30, "t"),
    });
    expect(await store.enqueueWorkflow({ workflow: { id: text(30, "f"), name: "wf", jobs: [newJob("m1")] }, now: T0 })).toMatchObject({ status: "created" });

    const refusals: [string, string, () => Promise<unknown>][] = [
      ["BELAY_ID_TOO_LONG", "workerId", () => store.claim({ workerId: text(31), queues: [queue], max: 1, leaseMs: LEASE, now: T0 })],
      ["BELAY_QUEUE_NAME_TOO_LONG", "queue", () => store.pauseQueue({ queue: text(8), actor: "ops", now: T0 })],
      ["BELAY_QUEUE_NAME_TOO_LONG", "queues[0]", () => store.claim({ workerId: worker, queues: [text(8)], max: 1, leaseMs: LEASE, now: T0 })],
      ["BELAY_ID_TOO_LONG", "subscription.observerId", () => store.registerObserver({ subscription: { observerId: text(31), states: ["succeeded"] }, now: T0 })],
      ["BELAY_ID_TOO_LONG", "schedule.id", () => store.upsertSchedule({ schedule: { ...definition, id: text(6) }, now: T0 })],
      ["BELAY_ID_TOO_LONG", "jobId", () => store.triggerSchedule({ scheduleId: schedule, jobId: text(31), actor: "ops", now: T0 })],
    ];
    for (const [code, field, call] of refusals) await expectBelayError(call, code, { field }, field);
    const workflow = await store.enqueueWorkflow({ workflow: { id: text(31), name: "wf", jobs: [newJob("m2")] }, now: T0 });
    expect(workflow).toMatchObject({ status: "rejected", rejection: { code: "BELAY_ID_TOO_LONG", field: "workflow.id", limit: 30, actual: 31 } });
  });

  clause("bounds: a batch or page asked for at exactly its bound returns the whole bound; asked for past it, it is clamped to the bound", async () => {
    const store = await ctx.store({ bounds: { claimBatch: 3, monitorPage: 3, purgeBatch: 3, suggestWindow: 3 } });
    const ids = ["a", "b", "c", "d", "e", "f", "g"];
    await enqueueJobs(store, ids.map((id) => newJob(id, { tags: [{ key: "", value: `label-${id}` }] })));
    for (const id of ids) await store.enqueueWorkflow({ workflow: { id: `wf-${id}`, name: "wf", jobs: [newJob(`m-${id}`, { queue: "wf" })] }, now: T0 });
    for (const id of ids) await store.pauseQueue({ queue: `q-${id}`, actor: "ops", now: T0 });
    await store.registerObserver({ subscription: { observerId: "o", states: ["leased"] }, startAt: "beginning", now: T0 });

    for (const [max, expected] of [[3, 3], [4, 3]] as const) {
      expect((await store.listJobs({ limit: max })).jobs, `listJobs limit ${max}`).toHaveLength(expected);
      expect((await store.listWorkflows({ limit: max })).workflows, `listWorkflows limit ${max}`).toHaveLength(expected);
      expect((await store.listAuditRecords({ limit: max })).records, `listAuditRecords limit ${max}`).toHaveLength(expected);
      expect((await store.suggestTags({ prefix: "label", max })).suggestions, `suggestTags max ${max}`).toHaveLength(expected);
    }
    expect(await claimJobs(store, { max: 3 }), "claim max 3").toHaveLength(3);
    expect(await claimJobs(store, { max: 4 }), "claim max 4").toHaveLength(3);
    const now = T0 + LEASE;
    expect((await store.expireLeases({ now, max: 3, retry: { maxAttempts: 1, delaysMs: [0] } })).expired, "expire max 3").toHaveLength(3);
    expect((await store.expireLeases({ now, max: 4, retry: { maxAttempts: 1, delaysMs: [0] } })).expired, "expire max 4").toHaveLength(3);
    for (const max of [3, 4]) {
      const claimed = await store.claimObserverDeliveries({ observerId: "o", workerId: "ow", max, leaseMs: LEASE, now });
      expect(claimed.status === "acquired" ? claimed.deliveries : null, `observer claim max ${max}`).toHaveLength(3);
    }
    expect(await store.purgeTerminal({ retentionClass: "deadLetteredOrQuarantined", before: now + DAY, max: 3 })).toEqual({ purged: 3 });
    expect(await store.purgeTerminal({ retentionClass: "deadLetteredOrQuarantined", before: now + DAY, max: 4 })).toEqual({ purged: 3 });
  });

  clause("bounds: logs kept to a bound hold exactly the bound: transitionsPerJob entries, skippedTicksKept ticks", async () => {
    const store = await ctx.store({ bounds: { transitionsPerJob: 3, skippedTicksKept: 2 } });
    await enqueueJobs(store, [newJob("j1")]);
    const [job] = await claimJobs(store);
    await report(store, job!, { type: "succeeded" }, T0 + 1);
    expect((await store.getJobHistory("j1")).map((t) => [t.ordinal, t.state])).toEqual([
      [1, "scheduled"],
      [2, "leased"],
      [3, "succeeded"],
    ]);
    const definition = { id: "s", cron: "* * * * *", timeZone: "UTC", jobName: "test.job", queue: "default", payload: "{}", catchUp: "skip", noOverlap: false } as const;
    await store.upsertSchedule({ schedule: definition, now: T0 });
    const ticks = [T0 + MINUTE, T0 + 2 * MINUTE, T0 + 3 * MINUTE];
    await store.mintDue({ decisions: [{ scheduleId: "s", expectedCursor: T0, newCursor: ticks[1]!, mint: [], skip: [ticks[0]!, ticks[1]!] }], now: ticks[1]! });
    expect((await store.getSchedule("s"))!.skippedTicks).toEqual([ticks[0], ticks[1]]);
    await store.mintDue({ decisions: [{ scheduleId: "s", expectedCursor: ticks[1]!, newCursor: ticks[2]!, mint: [], skip: [ticks[2]!] }], now: ticks[2]! });
    expect((await store.getSchedule("s"))!.skippedTicks).toEqual([ticks[1], ticks[2]]);
  });

  clause("bounds: claimBatch clamps claims but never an outcome, heartbeat or release batch: at and past it, every row is answered", async () => {
    const store = await ctx.store({ bounds: { claimBatch: 2 } });
    const ids = ["a", "b", "c", "d", "e"];
    await enqueueJobs(store, ids.map((id) => newJob(id)));
    const held = [];
    for (let i = 0; i < 3; i++) held.push(...(await claimJobs(store, { max: 2 })));
    expect(held.map((j) => j.id).sort()).toEqual(ids);
    const leases = held.map((j) => ({ jobId: j.id, attempt: j.attempt }));
    const beats = await store.heartbeat({ workerId: "w1", leases, leaseMs: LEASE, now: T0 + SECOND });
    expect(beats.map((b) => [b.jobId, b.status])).toEqual(held.map((j) => [j.id, "renewed"]));
    const released = await store.release({ workerId: "w1", leases: leases.slice(2), now: T0 + 2 * SECOND });
    expect(released.map((r) => r.status)).toEqual(["released", "released", "released"]);
    const atBound = await store.reportOutcomes({
      reports: held.slice(0, 2).map((j) => ({ jobId: j.id, workerId: "w1", attempt: j.attempt, outcome: { type: "succeeded" as const } })),
      now: T0 + 3 * SECOND,
    });
    expect(atBound.map((r) => r.status)).toEqual(["applied", "applied"]);
    const again = [];
    for (let i = 0; i < 2; i++) again.push(...(await claimJobs(store, { max: 2, now: T0 + 4 * SECOND })));
    expect(again).toHaveLength(3);
    const past = await store.reportOutcomes({
      reports: [...again, held[0]!].map((j) => ({ jobId: j.id, workerId: "w1", attempt: j.attempt, outcome: { type: "succeeded" as const } })),
      now: T0 + 5 * SECOND,
    });
    expect(past.map((r) => r.status)).toEqual(["applied", "applied", "applied", "stale"]);
    expect((await store.listJobs({ states: ["succeeded"] })).jobs.map((j) => j.id).sort()).toEqual(ids);
  });
}

