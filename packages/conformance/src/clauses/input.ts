import { type JobStore, MAX_COUNT, MAX_DURATION_MS, MAX_INSTANT, type NewJob } from "@belay/contract";
import { expect } from "vitest";
import { clause } from "../clause.js";
import { DEFAULT_RETRY, allJobIds, enqueueJobs, expectBelayError, leaseJob, newJob, T0 } from "../fixtures.js";
import { snapshot } from "../snapshot.js";
import type { SuiteContext } from "../suite-context.js";

// Input a store cannot hold faithfully, and numbers out of every store's range. Each is refused by
// the contract's checks — the same typed error naming the same field on every store — and nothing
// is written: never a driver error, never text stored changed.

/** Text no store keeps as given: a NUL, a lone high surrogate, a lone low surrogate. */
const ODD_TEXT: readonly [string, string][] = [
  ["a NUL", "col\u0000x"],
  ["a lone high surrogate", "col\ud800"],
  ["a lone low surrogate", "\udc00col"],
];

export function inputClauses(ctx: SuiteContext): void {
  clause("input: a job whose text a store cannot hold faithfully (NUL, lone surrogates) is rejected naming the field, nothing written", async () => {
    const store = await ctx.store();
    for (const [what, text] of ODD_TEXT) {
      const cases: [NewJob, string][] = [
        [newJob(text), "id"],
        [newJob("j", { jobName: text }), "jobName"],
        [newJob("j", { queue: text }), "queue"],
        [newJob("j", { payload: `{"v":"${text}"}` }), "payload"],
        [newJob("j", { tags: [{ key: text, value: "v" }] }), "tags[0].key"],
        [newJob("j", { tags: [{ key: "", value: text }] }), "tags[0].value"],
        [newJob("j", { traceContext: text }), "traceContext"],
        [newJob("j", { parentIds: [text] }), "parentIds[0]"],
      ];
      for (const [job, field] of cases) {
        const [result] = await store.enqueue({ jobs: [job], now: T0 });
        expect(result, `${what} in ${field}`).toMatchObject({ status: "rejected", rejection: { code: "BELAY_INVALID_INPUT", field } });
      }
      const workflow = await store.enqueueWorkflow({ workflow: { id: `w${text}`, name: "w", jobs: [newJob("m")] }, now: T0 });
      expect(workflow, `${what} in a workflow id`).toMatchObject({ status: "rejected", rejection: { code: "BELAY_INVALID_INPUT", field: "workflow.id" } });
    }
    expect(await allJobIds(store)).toEqual([]);
    expect((await store.listWorkflows()).workflows).toEqual([]);
  });

  clause("input: two ids that differ only in a lone surrogate never collide: both are refused", async () => {
    const store = await ctx.store();
    const first = await store.enqueue({ jobs: [newJob("id\ud800")], now: T0 });
    const second = await store.enqueue({ jobs: [newJob("id\udbff")], now: T0 });
    expect(first[0]).toMatchObject({ status: "rejected", rejection: { field: "id" } });
    expect(second[0]).toMatchObject({ status: "rejected", rejection: { field: "id" } });
    expect(await allJobIds(store)).toEqual([]);
  });

  clause("input: every lookup and filter refuses text a store cannot hold, naming the field", async () => {
    const store = await ctx.store();
    await enqueueJobs(store, [newJob("j1", { tags: [{ key: "k", value: "v" }] })]);
    for (const [what, text] of ODD_TEXT) {
      const cases: [string, () => Promise<unknown>][] = [
        ["jobId", () => store.getJob(text)],
        ["jobId", () => store.getJobOutput(text)],
        ["jobId", () => store.getJobHistory(text)],
        ["jobId", () => store.getDependencies(text)],
        ["scheduleId", () => store.getSchedule(text)],
        ["workflowId", () => store.getWorkflow(text)],
        ["observerId", () => store.getObserver(text)],
        ["observerId", () => store.listObserverDeadLetters(text)],
        ["queues[0]", () => store.listJobs({ queues: [text] })],
        ["jobNames[0]", () => store.listJobs({ jobNames: [text] })],
        ["scheduleId", () => store.listJobs({ scheduleId: text })],
        ["workflowId", () => store.listJobs({ workflowId: text })],
        ["tags[0].label", () => store.listJobs({ tags: [{ label: text }] })],
        ["tags[0].key", () => store.listJobs({ tags: [{ key: text }] })],
        ["tags[0].value", () => store.listJobs({ tags: [{ key: "k", value: text }] })],
        ["target", () => store.listAuditRecords({ target: text })],
        ["key", () => store.facetTags({ key: text })],
        ["scope.queues[0]", () => store.facetTags({ key: "k", scope: { queues: [text] } })],
        ["prefix", () => store.suggestTags({ prefix: text })],
        ["key", () => store.suggestTags({ prefix: "", key: text })],
      ];
      for (const [field, call] of cases) await expectBelayError(call, "BELAY_INVALID_INPUT", { field }, `${what} in ${field}`);
    }
  });

  clause("input: operator actions, schedules and observers refuse text a store cannot hold, and write nothing", async () => {
    const store = await ctx.store();
    await enqueueJobs(store, [newJob("j1")]);
    const before = await snapshot(store);
    const schedule = { id: "s1", cron: "* * * * *", timeZone: "UTC", jobName: "test.job", queue: "default", payload: "{}", catchUp: "skip", noOverlap: false } as const;
    for (const [what, text] of ODD_TEXT) {
      const cases: [string, () => Promise<unknown>][] = [
        ["actor", () => store.cancelJob({ jobId: "j1", actor: text, now: T0 })],
        ["jobId", () => store.requeueJob({ jobId: text, actor: "op", now: T0 })],
        ["queue", () => store.pauseQueue({ queue: text, actor: "op", now: T0 })],
        ["actor", () => store.setConcurrencyLimit({ queue: "default", actor: text, limit: 2, now: T0 })],
        ["schedule.id", () => store.upsertSchedule({ schedule: { ...schedule, id: text }, now: T0 })],
        ["schedule.cron", () => store.upsertSchedule({ schedule: { ...schedule, cron: text }, now: T0 })],
        ["schedule.timeZone", () => store.upsertSchedule({ schedule: { ...schedule, timeZone: text }, now: T0 })],
        ["schedule.payload", () => store.upsertSchedule({ schedule: { ...schedule, payload: `"${text}"` }, now: T0 })],
        ["schedule.tags[0].value", () => store.upsertSchedule({ schedule: { ...schedule, tags: [{ key: "", value: text }] }, now: T0 })],
        ["subscription.observerId", () => store.registerObserver({ subscription: { observerId: text, states: ["succeeded"] }, now: T0 })],
        ["subscription.jobNames[0]", () => store.registerObserver({ subscription: { observerId: "o", states: ["succeeded"], jobNames: [text] }, now: T0 })],
        ["workerId", () => store.claim({ workerId: text, queues: ["default"], max: 1, leaseMs: 1_000, now: T0 })],
      ];
      for (const [field, call] of cases) await expectBelayError(call, "BELAY_INVALID_INPUT", { field }, `${what} in ${field}`);
    }
    expect(await snapshot(store)).toEqual(before);
  });

  clause("input: an outcome whose output a store cannot hold is refused naming the field, and the lease stays", async () => {
    const store = await ctx.store();
    const job = await leaseJob(store, "j1");
    for (const [what, text] of ODD_TEXT) {
      await expectBelayError(
        () =>
          store.reportOutcomes({
            reports: [{ jobId: job.id, workerId: "w1", attempt: job.attempt, outcome: { type: "succeeded", output: `"${text}"` } }],
            now: T0,
          }),
        "BELAY_INVALID_INPUT",
        { field: "reports[0].outcome.output" },
        what,
      );
    }
    expect((await store.getJob("j1"))?.state).toBe("leased");
  });

  clause("input: failure detail a store cannot hold is kept readable (NUL and lone surrogates replaced), never refused", async () => {
    const store = await ctx.store();
    const job = await leaseJob(store, "j1");
    const [result] = await store.reportOutcomes({
      reports: [{ jobId: job.id, workerId: "w1", attempt: job.attempt, outcome: { type: "failed", retryAt: null, failureDetail: "Error: bad\u0000byte \ud800 here" } }],
      now: T0,
    });
    expect(result).toMatchObject({ status: "applied", state: "deadLettered" });
    const detail = (await store.getJobHistory("j1")).at(-1)?.failureDetail;
    expect(detail).toBe("Error: bad\ufffdbyte \ufffd here");
  });

  clause("input: every operation that takes a request refuses a malformed one with InvalidInputError naming the field, observers and audit included, writing nothing", async () => {
    const store = await ctx.store();
    const job = await leaseJob(store, "j1");
    await store.registerObserver({ subscription: { observerId: "o", states: ["succeeded"] }, now: T0 });
    const before = await snapshot(store);
    const bad = null as never;
    const schedule = { id: "s1", cron: "* * * * *", timeZone: "UTC", jobName: "test.job", queue: "default", payload: "{}", catchUp: "skip", noOverlap: false } as const;
    const lease = [{ jobId: job.id, attempt: job.attempt }];
    // Per operation: no request at all, then one field of the wrong type.
    const cases: [string, string, () => Promise<unknown>][] = [
      ["enqueue", "request", () => store.enqueue(bad)],
      ["enqueue", "now", () => store.enqueue({ jobs: [newJob("j2")], now: "soon" as never })],
      ["enqueueWorkflow", "request", () => store.enqueueWorkflow(bad)],
      ["enqueueWorkflow", "workflow", () => store.enqueueWorkflow({ workflow: "wf" as never, now: T0 })],
      ["claim", "request", () => store.claim(bad)],
      ["claim", "max", () => store.claim({ workerId: "w2", queues: ["default"], max: "all" as never, leaseMs: 1_000, now: T0 })],
      ["reportOutcomes", "request", () => store.reportOutcomes(bad)],
      ["reportOutcomes", "reports[0].outcome.type", () => store.reportOutcomes({ reports: [{ ...lease[0]!, workerId: "w1", outcome: { type: "done" } as never }], now: T0 })],
      ["heartbeat", "request", () => store.heartbeat(bad)],
      ["heartbeat", "leases", () => store.heartbeat({ workerId: "w1", leases: "all" as never, leaseMs: 1_000, now: T0 })],
      ["release", "request", () => store.release(bad)],
      ["release", "workerId", () => store.release({ workerId: 7 as never, leases: lease, now: T0 })],
      ["expireLeases", "request", () => store.expireLeases(bad)],
      ["expireLeases", "retry", () => store.expireLeases({ now: T0, max: 1, retry: null as never })],
      ["upsertSchedule", "request", () => store.upsertSchedule(bad)],
      ["upsertSchedule", "schedule.noOverlap", () => store.upsertSchedule({ schedule: { ...schedule, noOverlap: "no" as never }, now: T0 })],
      ["removeSchedule", "scheduleId", () => store.removeSchedule(bad)],
      ["getSchedule", "scheduleId", () => store.getSchedule(7 as never)],
      ["mintDue", "request", () => store.mintDue(bad)],
      ["mintDue", "decisions", () => store.mintDue({ decisions: "all" as never, now: T0 })],
      ["triggerSchedule", "request", () => store.triggerSchedule(bad)],
      ["triggerSchedule", "actor", () => store.triggerSchedule({ scheduleId: "s1", jobId: "t1", actor: "", now: T0 })],
      ["cancelJob", "request", () => store.cancelJob(bad)],
      ["cancelJob", "actor", () => store.cancelJob({ jobId: "j1", actor: 7 as never, now: T0 })],
      ["requeueJob", "request", () => store.requeueJob(bad)],
      ["requeueJob", "now", () => store.requeueJob({ jobId: "j1", actor: "op", now: null as never })],
      ["pauseQueue", "request", () => store.pauseQueue(bad)],
      ["resumeQueue", "request", () => store.resumeQueue(bad)],
      ["resumeQueue", "queue", () => store.resumeQueue({ queue: "", actor: "op", now: T0 })],
      ["setConcurrencyLimit", "request", () => store.setConcurrencyLimit(bad)],
      ["setConcurrencyLimit", "limit", () => store.setConcurrencyLimit({ queue: "default", actor: "op", limit: 0, now: T0 })],
      ["listAuditRecords", "request", () => store.listAuditRecords(bad)],
      ["listAuditRecords", "targetKind", () => store.listAuditRecords({ targetKind: "user" as never })],
      ["listAuditRecords", "order", () => store.listAuditRecords({ order: "random" as never })],
      ["listAuditRecords", "limit", () => store.listAuditRecords({ limit: 0 })],
      ["getJob", "jobId", () => store.getJob(bad)],
      ["getJobOutput", "jobId", () => store.getJobOutput(7 as never)],
      ["getJobHistory", "jobId", () => store.getJobHistory(bad)],
      ["getDependencies", "jobId", () => store.getDependencies(bad)],
      ["listJobs", "request", () => store.listJobs(bad)],
      ["listJobs", "states[0]", () => store.listJobs({ states: ["running" as never] })],
      ["facetTags", "request", () => store.facetTags(bad)],
      ["facetTags", "max", () => store.facetTags({ key: "k", max: -1 })],
      ["suggestTags", "request", () => store.suggestTags(bad)],
      ["suggestTags", "max", () => store.suggestTags({ prefix: "", max: 0 })],
      ["getWorkflow", "workflowId", () => store.getWorkflow(bad)],
      ["listWorkflows", "request", () => store.listWorkflows(bad)],
      ["listWorkflows", "limit", () => store.listWorkflows({ limit: 1.5 })],
      ["listWorkflows", "after", () => store.listWorkflows({ after: 7 as never })],
      ["purgeTerminal", "request", () => store.purgeTerminal(bad)],
      ["registerObserver", "request", () => store.registerObserver(bad)],
      ["registerObserver", "subscription.states", () => store.registerObserver({ subscription: { observerId: "o2", states: [] }, now: T0 })],
      ["registerObserver", "startAt", () => store.registerObserver({ subscription: { observerId: "o2", states: ["succeeded"] }, startAt: "middle" as never, now: T0 })],
      ["removeObserver", "observerId", () => store.removeObserver(bad)],
      ["claimObserverDeliveries", "request", () => store.claimObserverDeliveries(bad)],
      ["claimObserverDeliveries", "leaseMs", () => store.claimObserverDeliveries({ observerId: "o", workerId: "ow", max: 1, leaseMs: 0, now: T0 })],
      ["reportObserverDeliveries", "request", () => store.reportObserverDeliveries(bad)],
      ["reportObserverDeliveries", "outcomes[0].outcome", () => store.reportObserverDeliveries({ observerId: "o", workerId: "ow", outcomes: [{ position: 1, outcome: "maybe" } as never], now: T0 })],
      ["reportObserverDeliveries", "outcomes[0].error", () => store.reportObserverDeliveries({ observerId: "o", workerId: "ow", outcomes: [{ position: 1, outcome: "deadLettered", error: "" }], now: T0 })],
      ["getObserver", "observerId", () => store.getObserver(bad)],
      ["listObserverDeadLetters", "observerId", () => store.listObserverDeadLetters(7 as never)],
    ];
    for (const [operation, field, call] of cases) await expectBelayError(call, "BELAY_INVALID_INPUT", { field }, `${operation} (${field})`);
    expect(await snapshot(store)).toEqual(before);
  });

  clause("input: instants outside 1970..9999 and fractional or unsafe numbers are refused naming the field", async () => {
    const store = await ctx.store();
    for (const dueAt of [-1, MAX_INSTANT + 1, 8.64e15, Number.MAX_SAFE_INTEGER + 2, 1.5]) {
      const [result] = await store.enqueue({ jobs: [newJob("j", { dueAt })], now: T0 });
      expect(result, `dueAt ${dueAt}`).toMatchObject({ status: "rejected", rejection: { code: "BELAY_INVALID_INPUT", field: "dueAt" } });
    }
    const [atBound] = await store.enqueue({ jobs: [newJob("last", { dueAt: MAX_INSTANT })], now: T0 });
    expect(atBound).toMatchObject({ status: "created" });
    await expectBelayError(() => store.enqueue({ jobs: [newJob("j")], now: MAX_INSTANT + 1 }), "BELAY_INVALID_INPUT", { field: "now" });
    await expectBelayError(() => store.cancelJob({ jobId: "last", actor: "op", now: -5 }), "BELAY_INVALID_INPUT", { field: "now" });
    expect(await allJobIds(store)).toEqual(["last"]);
  });

  clause("input: counts, limits and durations beyond a 32-bit database integer are refused naming the field", async () => {
    const store = await ctx.store();
    const job = await leaseJob(store, "j1");
    const before = await snapshot(store);
    const cases: [string, (s: JobStore) => Promise<unknown>][] = [
      ["limit", (s) => s.setConcurrencyLimit({ queue: "default", actor: "op", limit: MAX_COUNT + 1, now: T0 })],
      ["limit", (s) => s.setConcurrencyLimit({ queue: "default", actor: "op", limit: 2 ** 53, now: T0 })],
      ["leaseMs", (s) => s.claim({ workerId: "w2", queues: ["default"], max: 1, leaseMs: MAX_DURATION_MS + 1, now: T0 })],
      ["leaseMs", (s) => s.heartbeat({ workerId: "w1", leases: [{ jobId: job.id, attempt: job.attempt }], leaseMs: MAX_DURATION_MS + 1, now: T0 })],
      ["leases[0].attempt", (s) => s.heartbeat({ workerId: "w1", leases: [{ jobId: job.id, attempt: MAX_COUNT + 1 }], leaseMs: 1_000, now: T0 })],
      ["reports[0].attempt", (s) => s.reportOutcomes({ reports: [{ jobId: job.id, workerId: "w1", attempt: MAX_COUNT + 1, outcome: { type: "cancelled" } }], now: T0 })],
      ["retry.maxAttempts", (s) => s.expireLeases({ now: T0, max: 10, retry: { ...DEFAULT_RETRY, maxAttempts: MAX_COUNT + 1 } })],
      ["retry.delaysMs[0]", (s) => s.expireLeases({ now: T0, max: 10, retry: { maxAttempts: 3, delaysMs: [MAX_DURATION_MS + 1] } })],
    ];
    for (const [field, call] of cases) await expectBelayError(() => call(store), "BELAY_INVALID_INPUT", { field });
    expect(await snapshot(store)).toEqual(before);
    expect(await store.setConcurrencyLimit({ queue: "default", actor: "op", limit: MAX_COUNT, now: T0 })).toMatchObject({ status: "applied" });
  });
}
