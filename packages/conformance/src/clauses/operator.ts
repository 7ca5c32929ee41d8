import type { AuditAction, AuditRecord, Instant, JobStore, ListAuditRequest } from "@belay/contract";
import { expect } from "vitest";
import { clause } from "../clause.js";
import { LEASE, MINUTE, SECOND, T0, claimJobs, enqueueJobs, expectBelayError, leaseJob, lineage, newJob, report, stateOf } from "../fixtures.js";
import type { SuiteContext } from "../suite-context.js";

/** Every audit record matching `request`, following the cursor. */
async function auditWalk(store: JobStore, request: ListAuditRequest = {}): Promise<AuditRecord[]> {
  const records: AuditRecord[] = [];
  let after: string | undefined;
  for (let pages = 0; pages < 100; pages++) {
    const page = await store.listAuditRecords(after === undefined ? request : { ...request, after });
    records.push(...page.records);
    if (page.nextCursor === null) return records;
    after = page.nextCursor;
  }
  throw new Error("the audit cursor never ended");
}

/** The job and its history, to prove an operation changed nothing. */
async function readBack(store: JobStore, id: string): Promise<unknown> {
  return { job: await store.getJob(id), history: await store.getJobHistory(id) };
}

/**
 * Requeues `id` as `actor` at `now` and asserts the job is scheduled afresh (attempt 0, due now,
 * no lease, no cancel request, no terminal record) and the requeue is its one audit record.
 */
async function expectRequeue(store: JobStore, id: string, actor: string, now: Instant): Promise<void> {
  expect(await store.requeueJob({ jobId: id, actor, now })).toEqual({ status: "requeued" });
  expect(await store.getJob(id)).toMatchObject({
    state: "scheduled",
    attempt: 0,
    releases: 0,
    dueAt: now,
    leaseOwner: null,
    leaseExpiresAt: null,
    cancelRequested: false,
    terminalAt: null,
    terminalCause: null,
  });
  expect(await auditWalk(store, { target: id })).toMatchObject([{ action: "requeue", actor, targetKind: "job", target: id, at: now }]);
}

/** Leases `id` and dead-letters it (a failed attempt with no retry). */
async function deadLetter(store: JobStore, id: string, now = T0): Promise<void> {
  const job = await leaseJob(store, id, {}, { now });
  expect(await report(store, job, { type: "failed", retryAt: null, failureDetail: "boom" }, now + 1)).toMatchObject({
    status: "applied",
    state: "deadLettered",
  });
}

export function operatorClauses(ctx: SuiteContext): void {
  clause("operator: a requeued parent gates its still-waiting children again, and releases them exactly once", async () => {
    const store = await ctx.store();
    // c waits for p1 and p2 (onAnyTerminal). p1 dead-letters (latch 2 → 1), is requeued (live again:
    // latch back to 2), dead-letters again (→ 1): c must still wait for p2.
    await enqueueJobs(store, [
      newJob("p1"),
      newJob("p2", { queue: "other" }),
      newJob("c", { parentIds: ["p1", "p2"], dependencyMode: "onAnyTerminal" }),
    ]);
    for (const [step, now] of [
      ["first failure", T0 + 1],
      ["second failure", T0 + 3],
    ] as const) {
      const [p1] = await claimJobs(store, { now });
      expect(p1?.id, step).toBe("p1");
      await report(store, p1!, { type: "failed", retryAt: null }, now);
      expect(await stateOf(store, "c"), `${step} of p1 must not count for p2`).toBe("awaitingParents");
      if (step === "first failure") expect(await store.requeueJob({ jobId: "p1", actor: "ops", now: T0 + 2 })).toEqual({ status: "requeued" });
    }
    expect((await store.getDependencies("c"))?.parents).toContainEqual({ jobId: "p2", state: "scheduled", gating: true });
    const [p2] = await claimJobs(store, { queues: ["other"], now: T0 + 5 });
    await report(store, p2!, { type: "succeeded" }, T0 + 6);
    expect(await stateOf(store, "c")).toBe("scheduled");
  });

  clause("operator: cancelling a scheduled job cancels it at once, with terminal time, and audits it", async () => {
    const store = await ctx.store();
    await enqueueJobs(store, [newJob("j1"), newJob("j2")]);
    const now = T0 + 5 * SECOND;
    expect(await store.cancelJob({ jobId: "j1", actor: "alice", now })).toEqual({ status: "cancelled" });
    const job = await store.getJob("j1");
    expect(job).toMatchObject({ state: "cancelled", terminalAt: now, cancelRequested: false, leaseOwner: null });
    expect(job!.terminalCause).not.toBeNull();
    expect((await store.getJobHistory("j1")).at(-1)).toMatchObject({ state: "cancelled", at: now });
    const audit = await auditWalk(store);
    expect(audit).toHaveLength(1);
    expect(audit[0]).toMatchObject({ actor: "alice", action: "cancel", targetKind: "job", target: "j1", at: now });
    expect(typeof audit[0]!.seq).toBe("number");
    // A cancelled job is never claimed; the other one is untouched.
    expect((await claimJobs(store, { now: now + 1 })).map((j) => j.id)).toEqual(["j2"]);
  });

  clause("operator: cancelling an awaitingParents job cascades to its onSuccess children and releases onAnyTerminal ones", async () => {
    const store = await ctx.store();
    await enqueueJobs(store, [
      ...lineage("p", "w", "s", "g"),
      newJob("a", { parentIds: ["w"], dependencyMode: "onAnyTerminal" }),
    ]);
    expect(await stateOf(store, "w")).toBe("awaitingParents");
    const now = T0 + SECOND;
    expect(await store.cancelJob({ jobId: "w", actor: "bob", now })).toEqual({ status: "cancelled" });
    expect(await store.getJob("w")).toMatchObject({ state: "cancelled", terminalAt: now });
    for (const id of ["s", "g"]) expect(await store.getJob(id), id).toMatchObject({ state: "cancelled", terminalAt: now });
    expect((await store.getJob("s"))!.terminalCause).toContain("w");
    expect(await stateOf(store, "a")).toBe("scheduled");
    expect(await stateOf(store, "p")).toBe("scheduled");
    expect(await auditWalk(store, { target: "w" })).toMatchObject([{ action: "cancel", actor: "bob", targetKind: "job" }]);
    expect((await claimJobs(store, { now: now + 1 })).map((j) => j.id).sort()).toEqual(["a", "p"]);
  });

  clause("operator: cancelling a leased job requests cancellation, audited, surfaced by heartbeat; the handler ends it cancelled", async () => {
    const store = await ctx.store();
    const lease = await leaseJob(store, "j1");
    expect(await store.cancelJob({ jobId: "j1", actor: "alice", now: T0 + 1 })).toEqual({ status: "cancelRequested" });
    expect(await store.getJob("j1")).toMatchObject({
      state: "leased",
      cancelRequested: true,
      leaseOwner: "w1",
      attempt: 1,
      terminalAt: null,
    });
    // Repeating the request is allowed and audited again.
    expect(await store.cancelJob({ jobId: "j1", actor: "bob", now: T0 + 2 })).toEqual({ status: "cancelRequested" });
    expect(await auditWalk(store, { target: "j1" })).toMatchObject([
      { action: "cancel", actor: "alice", targetKind: "job", target: "j1", at: T0 + 1 },
      { action: "cancel", actor: "bob", targetKind: "job", target: "j1", at: T0 + 2 },
    ]);
    const [beat] = await store.heartbeat({ workerId: "w1", leases: [{ jobId: "j1", attempt: 1 }], leaseMs: LEASE, now: T0 + 3 });
    expect(beat).toEqual({ jobId: "j1", status: "renewed", leaseExpiresAt: T0 + 3 + LEASE, cancelRequested: true });
    expect(await report(store, lease, { type: "cancelled" }, T0 + 4)).toEqual({ jobId: "j1", attempt: expect.any(Number), status: "applied", state: "cancelled" });
    expect(await store.getJob("j1")).toMatchObject({
      state: "cancelled",
      cancelRequested: false,
      terminalAt: T0 + 4,
      leaseOwner: null,
      leaseExpiresAt: null,
    });
  });

  clause("operator: the cancel flag is cleared whenever the job leaves leased (release, success, retry turned cancel)", async () => {
    const store = await ctx.store();
    await enqueueJobs(store, [newJob("rel"), newJob("ok"), newJob("retry")]);
    const claimed = await claimJobs(store);
    expect(claimed.map((j) => j.id).sort()).toEqual(["ok", "rel", "retry"]);
    const byId = new Map(claimed.map((j) => [j.id, j]));
    for (const id of ["rel", "ok", "retry"]) {
      expect(await store.cancelJob({ jobId: id, actor: "alice", now: T0 + 1 })).toEqual({ status: "cancelRequested" });
    }
    expect(await store.release({ workerId: "w1", leases: [{ jobId: "rel", attempt: 1 }], now: T0 + 2 })).toEqual([
      { jobId: "rel", status: "released" },
    ]);
    expect(await store.getJob("rel")).toMatchObject({ state: "scheduled", cancelRequested: false });
    expect(await report(store, byId.get("ok")!, { type: "succeeded" }, T0 + 2)).toMatchObject({ state: "succeeded" });
    expect(await store.getJob("ok")).toMatchObject({ state: "succeeded", cancelRequested: false });
    // A pending cancel turns a retry into a cancellation.
    expect(await report(store, byId.get("retry")!, { type: "failed", retryAt: T0 + MINUTE }, T0 + 2)).toMatchObject({
      state: "cancelled",
    });
    expect(await store.getJob("retry")).toMatchObject({ state: "cancelled", cancelRequested: false });
    // The released job, claimed again, carries no stale request.
    const [again] = await claimJobs(store, { now: T0 + 3 });
    expect(again!.id).toBe("rel");
    const [beat] = await store.heartbeat({ workerId: "w1", leases: [{ jobId: "rel", attempt: 2 }], leaseMs: LEASE, now: T0 + 4 });
    expect(beat).toMatchObject({ status: "renewed", cancelRequested: false });
  });

  clause("operator: cancelling a terminal job is notCancellable with its state; nothing changes or is audited", async () => {
    const store = await ctx.store();
    const done = await leaseJob(store, "done");
    await report(store, done, { type: "succeeded" });
    await deadLetter(store, "dead");
    await enqueueJobs(store, [newJob("gone")]);
    expect(await store.cancelJob({ jobId: "gone", actor: "alice", now: T0 })).toEqual({ status: "cancelled" });
    const expected: [string, string][] = [
      ["done", "succeeded"],
      ["dead", "deadLettered"],
      ["gone", "cancelled"],
    ];
    for (const [id, state] of expected) {
      const before = await readBack(store, id);
      expect(await store.cancelJob({ jobId: id, actor: "bob", now: T0 + MINUTE }), id).toEqual({ status: "notCancellable", state });
      expect(await readBack(store, id), id).toEqual(before);
    }
    const audit = await auditWalk(store);
    expect(audit).toHaveLength(1);
    expect(audit[0]).toMatchObject({ actor: "alice", target: "gone" });
  });

  clause("operator: cancelling an unknown job is notFound and audits nothing", async () => {
    const store = await ctx.store();
    expect(await store.cancelJob({ jobId: "ghost", actor: "alice", now: T0 })).toEqual({ status: "notFound" });
    expect(await store.requeueJob({ jobId: "ghost", actor: "alice", now: T0 })).toEqual({ status: "notFound" });
    expect(await auditWalk(store)).toEqual([]);
    expect(await store.getJob("ghost")).toBeNull();
  });

  clause("operator: requeueing a dead-lettered job schedules it due now with attempt 0, lease and terminal fields cleared, audited", async () => {
    const store = await ctx.store();
    const first = await leaseJob(store, "j1");
    await store.release({ workerId: "w1", leases: [{ jobId: "j1", attempt: first.attempt }], now: T0 + 1 });
    const [second] = await claimJobs(store, { now: T0 + 2 });
    expect(second).toMatchObject({ id: "j1", attempt: 2, releases: 1 });
    expect(await report(store, second!, { type: "failed", retryAt: null, failureDetail: "boom" }, T0 + 3)).toMatchObject({
      state: "deadLettered",
    });
    const now = T0 + 10 * MINUTE;
    await expectRequeue(store, "j1", "alice", now);
    const [again] = await claimJobs(store, { now });
    expect(again).toMatchObject({ id: "j1", attempt: 1, releases: 0 });
  });

  clause("operator: requeueing a quarantined job schedules it again, attempt 0, due now, audited", async () => {
    const store = await ctx.store();
    const job = await leaseJob(store, "q1", { dueAt: T0 - MINUTE });
    expect(await report(store, job, { type: "unroutable", reason: "unknown job name" })).toMatchObject({ state: "quarantined" });
    const now = T0 + 5 * MINUTE;
    await expectRequeue(store, "q1", "carol", now);
    expect((await claimJobs(store, { now })).map((j) => j.id)).toEqual(["q1"]);
  });

  clause("operator: requeueing a job in any other state is notRequeueable; nothing changes or is audited", async () => {
    const store = await ctx.store();
    await enqueueJobs(store, [newJob("sched", { dueAt: T0 + MINUTE }), newJob("held"), newJob("waits", { parentIds: ["sched"] })]);
    const [held] = await claimJobs(store, { now: T0 });
    expect(held!.id).toBe("held");
    const done = await leaseJob(store, "done", { queue: "other" });
    await report(store, done, { type: "succeeded" });
    await enqueueJobs(store, [newJob("gone", { queue: "other" })]);
    await store.cancelJob({ jobId: "gone", actor: "alice", now: T0 });
    const auditBefore = await auditWalk(store);
    const cases: [string, string][] = [
      ["sched", "scheduled"],
      ["waits", "awaitingParents"],
      ["held", "leased"],
      ["done", "succeeded"],
      ["gone", "cancelled"],
    ];
    for (const [id, state] of cases) {
      const before = await readBack(store, id);
      expect(await store.requeueJob({ jobId: id, actor: "bob", now: T0 + 1 }), id).toEqual({ status: "notRequeueable", state });
      expect(await readBack(store, id), id).toEqual(before);
    }
    expect(await auditWalk(store)).toEqual(auditBefore);
  });

  clause("operator: children cancelled because their parent failed stay cancelled after the parent is requeued", async () => {
    const store = await ctx.store();
    await enqueueJobs(store, [newJob("p"), newJob("c", { parentIds: ["p"] }), newJob("g", { parentIds: ["c"] })]);
    const [parent] = await claimJobs(store);
    await report(store, parent!, { type: "failed", retryAt: null }, T0 + 1);
    expect(await stateOf(store, "c")).toBe("cancelled");
    const childBefore = await readBack(store, "c");
    const grandchildBefore = await readBack(store, "g");
    expect(await store.requeueJob({ jobId: "p", actor: "alice", now: T0 + 2 })).toEqual({ status: "requeued" });
    expect(await stateOf(store, "p")).toBe("scheduled");
    expect(await readBack(store, "c")).toEqual(childBefore);
    expect(await readBack(store, "g")).toEqual(grandchildBefore);
    // Even when the requeued parent now succeeds.
    const [rerun] = await claimJobs(store, { now: T0 + 3 });
    expect(rerun!.id).toBe("p");
    expect(await report(store, rerun!, { type: "succeeded" }, T0 + 4)).toMatchObject({ state: "succeeded" });
    expect(await stateOf(store, "c")).toBe("cancelled");
    expect(await stateOf(store, "g")).toBe("cancelled");
    expect(await claimJobs(store, { now: T0 + 5 })).toEqual([]);
  });

  clause("operator: a paused queue is skipped by claims, its leased jobs still report, and resume restores claims", async () => {
    const store = await ctx.store();
    await enqueueJobs(store, [newJob("held"), newJob("waiting"), newJob("o1", { queue: "other" })]);
    const [held] = await claimJobs(store, { max: 1 });
    expect(held!.id).toBe("held");
    expect(await store.pauseQueue({ queue: "default", actor: "ops", now: T0 + 1 })).toEqual({ status: "applied" });
    expect((await claimJobs(store, { queues: ["default", "other"], now: T0 + 2 })).map((j) => j.id)).toEqual(["o1"]);
    expect(await stateOf(store, "waiting")).toBe("scheduled");
    // The leased job of the paused queue is left alone: it heartbeats and reports.
    expect(await store.getJob("held")).toMatchObject({ state: "leased", leaseOwner: "w1", leaseExpiresAt: T0 + LEASE });
    const [beat] = await store.heartbeat({ workerId: "w1", leases: [{ jobId: "held", attempt: 1 }], leaseMs: LEASE, now: T0 + 3 });
    expect(beat).toMatchObject({ status: "renewed" });
    expect(await report(store, held!, { type: "succeeded" }, T0 + 4)).toMatchObject({ status: "applied", state: "succeeded" });
    expect(await claimJobs(store, { now: T0 + 5 })).toEqual([]);
    expect(await store.resumeQueue({ queue: "default", actor: "ops", now: T0 + 6 })).toEqual({ status: "applied" });
    expect((await claimJobs(store, { now: T0 + 7 })).map((j) => j.id)).toEqual(["waiting"]);
  });

  clause("operator: pause, resume and setConcurrencyLimit are idempotent and audited on every call", async () => {
    const store = await ctx.store();
    const calls: [AuditAction, () => Promise<unknown>][] = [
      ["pauseQueue", () => store.pauseQueue({ queue: "q", actor: "ops", now: T0 + 1 })],
      ["pauseQueue", () => store.pauseQueue({ queue: "q", actor: "ops", now: T0 + 2 })],
      ["setConcurrencyLimit", () => store.setConcurrencyLimit({ queue: "q", limit: 3, actor: "ops", now: T0 + 3 })],
      ["setConcurrencyLimit", () => store.setConcurrencyLimit({ queue: "q", limit: 3, actor: "ops", now: T0 + 4 })],
    ];
    for (const [, call] of calls) expect(await call()).toEqual({ status: "applied" });
    expect(await store.listQueueSettings()).toEqual([{ queue: "q", paused: true, concurrencyLimit: 3 }]);
    expect(await store.resumeQueue({ queue: "q", actor: "ops", now: T0 + 5 })).toEqual({ status: "applied" });
    expect(await store.resumeQueue({ queue: "q", actor: "ops", now: T0 + 6 })).toEqual({ status: "applied" });
    expect(await store.listQueueSettings()).toEqual([{ queue: "q", paused: false, concurrencyLimit: 3 }]);
    const audit = await auditWalk(store, { target: "q", targetKind: "queue" });
    expect(audit.map((r) => [r.action, r.at])).toEqual([
      ["pauseQueue", T0 + 1],
      ["pauseQueue", T0 + 2],
      ["setConcurrencyLimit", T0 + 3],
      ["setConcurrencyLimit", T0 + 4],
      ["resumeQueue", T0 + 5],
      ["resumeQueue", T0 + 6],
    ]);
  });

  clause("operator: setConcurrencyLimit(null) removes the limit", async () => {
    const store = await ctx.store();
    await enqueueJobs(store, [newJob("a"), newJob("b"), newJob("c")]);
    await store.setConcurrencyLimit({ queue: "default", limit: 1, actor: "ops", now: T0 });
    expect((await claimJobs(store, { now: T0 })).map((j) => j.id)).toEqual(["a"]);
    expect(await claimJobs(store, { now: T0 + 1 })).toEqual([]);
    expect(await store.setConcurrencyLimit({ queue: "default", limit: null, actor: "ops", now: T0 + 2 })).toEqual({ status: "applied" });
    // The queue may keep a settings row or drop it; either way it reads as unlimited.
    for (const settings of await store.listQueueSettings()) {
      expect(settings).toEqual({ queue: "default", paused: false, concurrencyLimit: null });
    }
    expect((await claimJobs(store, { now: T0 + 3 })).map((j) => j.id).sort()).toEqual(["b", "c"]);
    expect((await auditWalk(store, { target: "default" })).map((r) => r.action)).toEqual(["setConcurrencyLimit", "setConcurrencyLimit"]);
  });

  clause("operator: listQueueSettings shows paused and concurrencyLimit per queue", async () => {
    const store = await ctx.store();
    expect(await store.listQueueSettings()).toEqual([]);
    await store.pauseQueue({ queue: "paused", actor: "ops", now: T0 });
    await store.setConcurrencyLimit({ queue: "limited", limit: 5, actor: "ops", now: T0 });
    await store.pauseQueue({ queue: "both", actor: "ops", now: T0 });
    await store.setConcurrencyLimit({ queue: "both", limit: 2, actor: "ops", now: T0 });
    const settings = [...(await store.listQueueSettings())].sort((a, b) => a.queue.localeCompare(b.queue));
    expect(settings).toEqual([
      { queue: "both", paused: true, concurrencyLimit: 2 },
      { queue: "limited", paused: false, concurrencyLimit: 5 },
      { queue: "paused", paused: true, concurrencyLimit: null },
    ]);
  });

  clause("operator: invalid operator input throws InvalidInputError naming the field and writes nothing", async () => {
    const store = await ctx.store();
    await enqueueJobs(store, [newJob("j1")]);
    const before = await readBack(store, "j1");
    const cases: [string, () => Promise<unknown>][] = [
      ["limit", () => store.setConcurrencyLimit({ queue: "default", limit: 0, actor: "ops", now: T0 })],
      ["limit", () => store.setConcurrencyLimit({ queue: "default", limit: 1.5, actor: "ops", now: T0 })],
      ["actor", () => store.pauseQueue({ queue: "default", actor: "", now: T0 })],
      ["queue", () => store.resumeQueue({ queue: "", actor: "ops", now: T0 })],
      ["queue", () => store.setConcurrencyLimit({ queue: "", limit: 2, actor: "ops", now: T0 })],
      ["actor", () => store.cancelJob({ jobId: "j1", actor: "", now: T0 })],
      ["actor", () => store.requeueJob({ jobId: "j1", actor: "", now: T0 })],
      ["jobId", () => store.cancelJob({ jobId: "", actor: "ops", now: T0 })],
      ["now", () => store.pauseQueue({ queue: "default", actor: "ops", now: 1.5 })],
    ];
    for (const [field, call] of cases) await expectBelayError(call, "BELAY_INVALID_INPUT", { field });
    expect(await auditWalk(store)).toEqual([]);
    expect(await store.listQueueSettings()).toEqual([]);
    expect(await readBack(store, "j1")).toEqual(before);
    expect((await claimJobs(store)).map((j) => j.id)).toEqual(["j1"]);
  });

  clause("operator: listAuditRecords filters by target and kind, oldest first by default, newest first on request", async () => {
    const store = await ctx.store();
    await enqueueJobs(store, [newJob("x"), newJob("y")]);
    await store.cancelJob({ jobId: "x", actor: "a1", now: T0 + 1 });
    await store.pauseQueue({ queue: "x", actor: "a2", now: T0 + 2 });
    await store.pauseQueue({ queue: "q", actor: "a3", now: T0 + 3 });
    await store.cancelJob({ jobId: "y", actor: "a4", now: T0 + 4 });
    await store.resumeQueue({ queue: "x", actor: "a5", now: T0 + 5 });

    const all = (await store.listAuditRecords()).records;
    expect(all.map((r) => r.actor)).toEqual(["a1", "a2", "a3", "a4", "a5"]);
    const seqs = all.map((r) => r.seq);
    expect([...seqs].sort((a, b) => a - b)).toEqual(seqs);
    expect(new Set(seqs).size).toBe(5);
    expect((await store.listAuditRecords({ order: "newestFirst" })).records).toEqual([...all].reverse());
    expect((await store.listAuditRecords({ order: "oldestFirst" })).records).toEqual(all);

    expect((await store.listAuditRecords({ target: "x" })).records.map((r) => r.actor)).toEqual(["a1", "a2", "a5"]);
    expect((await store.listAuditRecords({ target: "x", targetKind: "job" })).records.map((r) => r.actor)).toEqual(["a1"]);
    expect((await store.listAuditRecords({ target: "x", targetKind: "queue", order: "newestFirst" })).records.map((r) => r.actor)).toEqual([
      "a5",
      "a2",
    ]);
    expect((await store.listAuditRecords({ targetKind: "queue" })).records.map((r) => r.actor)).toEqual(["a2", "a3", "a5"]);
    expect((await store.listAuditRecords({ targetKind: "schedule" })).records).toEqual([]);
    expect((await store.listAuditRecords({ target: "nobody" })).records).toEqual([]);
  });

  clause("operator: the audit cursor walks every record once, without gaps or duplicates, in either order", async () => {
    const store = await ctx.store();
    for (let i = 0; i < 7; i++) await store.pauseQueue({ queue: `q${i % 3}`, actor: `op${i}`, now: T0 + i });
    const all = (await store.listAuditRecords({ limit: 100 })).records;
    expect(all).toHaveLength(7);
    for (const order of ["oldestFirst", "newestFirst"] as const) {
      const seen: AuditRecord[] = [];
      let after: string | undefined;
      let pages = 0;
      do {
        const page = await store.listAuditRecords({ order, limit: 2, ...(after === undefined ? {} : { after }) });
        expect(page.records.length, order).toBeLessThanOrEqual(2);
        seen.push(...page.records);
        after = page.nextCursor ?? undefined;
        expect(++pages, "the cursor walk ends").toBeLessThan(10);
      } while (after !== undefined);
      expect(seen, order).toEqual(order === "oldestFirst" ? all : [...all].reverse());
    }
    // A filtered walk pages through the filtered records only.
    const seen: string[] = [];
    let after: string | undefined;
    do {
      const page = await store.listAuditRecords({ target: "q0", limit: 2, ...(after === undefined ? {} : { after }) });
      seen.push(...page.records.map((r) => r.actor));
      after = page.nextCursor ?? undefined;
    } while (after !== undefined && seen.length < 10);
    expect(seen).toEqual(["op0", "op3", "op6"]);
  });

  clause("operator: every operator action appears in the audit log with its actor, kind, target and time", async () => {
    const store = await ctx.store();
    await deadLetter(store, "r1");
    await enqueueJobs(store, [newJob("c1")]);
    await store.upsertSchedule({
      schedule: {
        id: "s1",
        cron: "*/10 * * * * *",
        timeZone: "UTC",
        jobName: "report.build",
        queue: "reports",
        payload: "{}",
        catchUp: "skip",
        noOverlap: false,
      },
      now: T0,
    });
    const table: [AuditAction, "job" | "queue" | "schedule", string, (actor: string, now: number) => Promise<unknown>][] = [
      ["cancel", "job", "c1", (actor, now) => store.cancelJob({ jobId: "c1", actor, now })],
      ["requeue", "job", "r1", (actor, now) => store.requeueJob({ jobId: "r1", actor, now })],
      ["pauseQueue", "queue", "mail", (actor, now) => store.pauseQueue({ queue: "mail", actor, now })],
      ["resumeQueue", "queue", "mail", (actor, now) => store.resumeQueue({ queue: "mail", actor, now })],
      ["setConcurrencyLimit", "queue", "mail", (actor, now) => store.setConcurrencyLimit({ queue: "mail", limit: 4, actor, now })],
      ["triggerSchedule", "schedule", "s1", (actor, now) => store.triggerSchedule({ scheduleId: "s1", jobId: "s1-manual", actor, now })],
    ];
    for (const [i, [action, , , run]] of table.entries()) await run(`actor-${action}`, T0 + MINUTE + i);
    const audit = await auditWalk(store);
    expect(audit).toHaveLength(table.length);
    for (const [i, [action, targetKind, target]] of table.entries()) {
      expect(audit[i], action).toMatchObject({ action, targetKind, target, actor: `actor-${action}`, at: T0 + MINUTE + i });
    }
  });
}
