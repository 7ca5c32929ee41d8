import { type JobStore, type TransitionRecord, scheduledJobId, truncateUtf8, utf8ByteLength } from "@belay/contract";
import { expect } from "vitest";
import { clause } from "../clause.js";
import { DEFAULT_RETRY, LEASE, MINUTE, SECOND, claimJobs, enqueueJobs, leaseJob, newJob, newSchedule, report, stateOf, T0 } from "../fixtures.js";
import type { SuiteContext } from "../suite-context.js";

/** A transition without its store-assigned position, for comparing exact contents. */
function entry(t: TransitionRecord) {
  return { jobId: t.jobId, ordinal: t.ordinal, at: t.at, state: t.state, attempt: t.attempt, failureDetail: t.failureDetail };
}

async function historyOf(store: JobStore, id: string) {
  return (await store.getJobHistory(id)).map(entry);
}

/** The last transition of a job (fails when it has none). */
async function lastOf(store: JobStore, id: string): Promise<TransitionRecord> {
  const history = await store.getJobHistory(id);
  expect(history.length, `history of ${id}`).toBeGreaterThan(0);
  return history.at(-1)!;
}

/** The histories of several jobs, keyed by id. */
async function histories(store: JobStore, ids: readonly string[]): Promise<Record<string, readonly TransitionRecord[]>> {
  const out: Record<string, readonly TransitionRecord[]> = {};
  for (const id of ids) out[id] = await store.getJobHistory(id);
  return out;
}

export function historyClauses(ctx: SuiteContext): void {
  clause("history: enqueue appends one scheduled transition at attempt 0, at now, with ordinal 1", async () => {
    const store = await ctx.store();
    await enqueueJobs(store, [newJob("j1", { dueAt: T0 + MINUTE })], T0 + 7);
    const history = await store.getJobHistory("j1");
    expect(history.map(entry)).toEqual([{ jobId: "j1", ordinal: 1, at: T0 + 7, state: "scheduled", attempt: 0, failureDetail: null }]);
    expect(Number.isSafeInteger(history[0]!.position)).toBe(true);
  });

  clause("history: a job created awaiting parents or cancelled records that initial state", async () => {
    const store = await ctx.store();
    const parent = await leaseJob(store, "dead");
    await report(store, parent, { type: "failed", retryAt: null, failureDetail: "boom" });
    await enqueueJobs(store, [newJob("live")]);
    await enqueueJobs(store, [newJob("waiting", { parentIds: ["live"] }), newJob("doomed", { parentIds: ["dead"] })], T0 + 3);
    expect(await historyOf(store, "waiting")).toEqual([
      { jobId: "waiting", ordinal: 1, at: T0 + 3, state: "awaitingParents", attempt: 0, failureDetail: null },
    ]);
    expect(await historyOf(store, "doomed")).toEqual([
      { jobId: "doomed", ordinal: 1, at: T0 + 3, state: "cancelled", attempt: 0, failureDetail: null },
    ]);
  });

  clause("history: claim appends exactly one leased transition at the incremented attempt", async () => {
    const store = await ctx.store();
    await enqueueJobs(store, [newJob("j1")]);
    await claimJobs(store, { now: T0 + 5 });
    expect(await historyOf(store, "j1")).toEqual([
      { jobId: "j1", ordinal: 1, at: T0, state: "scheduled", attempt: 0, failureDetail: null },
      { jobId: "j1", ordinal: 2, at: T0 + 5, state: "leased", attempt: 1, failureDetail: null },
    ]);
    // A second claim after expiry and retry rises to attempt 2, again with one transition.
    await store.expireLeases({ now: T0 + 5 + LEASE, max: 10, retry: { maxAttempts: 5, delaysMs: [0] } });
    await claimJobs(store, { now: T0 + 5 + LEASE });
    const history = await historyOf(store, "j1");
    expect(history).toHaveLength(4);
    expect(history[3]).toEqual({ jobId: "j1", ordinal: 4, at: T0 + 5 + LEASE, state: "leased", attempt: 2, failureDetail: null });
  });

  clause("history: each terminal outcome appends exactly one transition to its resulting state", async () => {
    const store = await ctx.store();
    const cases = [
      { id: "ok", outcome: { type: "succeeded", output: '{"r":1}' }, state: "succeeded" },
      { id: "dead", outcome: { type: "failed", retryAt: null, failureDetail: "boom" }, state: "deadLettered" },
      { id: "stopped", outcome: { type: "cancelled" }, state: "cancelled" },
      { id: "stuck", outcome: { type: "unroutable", reason: "unknown job name" }, state: "quarantined" },
    ] as const;
    for (const c of cases) {
      const job = await leaseJob(store, c.id);
      expect(await report(store, job, c.outcome, T0 + 9)).toEqual({ jobId: c.id, attempt: expect.any(Number), status: "applied", state: c.state });
      const history = await historyOf(store, c.id);
      expect(history.map((t) => [t.state, t.attempt, t.ordinal]), c.id).toEqual([
        ["scheduled", 0, 1],
        ["leased", 1, 2],
        [c.state, 1, 3],
      ]);
      expect(history[2]!.at, c.id).toBe(T0 + 9);
    }
  });

  clause("history: a retried failure appends scheduled at the failed attempt", async () => {
    const store = await ctx.store();
    const job = await leaseJob(store, "j1");
    expect(await report(store, job, { type: "failed", retryAt: T0 + MINUTE, failureDetail: "Error: flaky" }, T0 + 2)).toMatchObject({
      status: "applied",
      state: "scheduled",
    });
    expect(await historyOf(store, "j1")).toEqual([
      { jobId: "j1", ordinal: 1, at: T0, state: "scheduled", attempt: 0, failureDetail: null },
      { jobId: "j1", ordinal: 2, at: T0, state: "leased", attempt: 1, failureDetail: null },
      { jobId: "j1", ordinal: 3, at: T0 + 2, state: "scheduled", attempt: 1, failureDetail: "Error: flaky" },
    ]);
  });

  clause("history: lease expiry appends the disposed state at the claimed attempt without failure detail", async () => {
    const store = await ctx.store();
    await leaseJob(store, "retry", { queue: "a" }, { queues: ["a"] });
    await leaseJob(store, "ceiling", { queue: "b" }, { queues: ["b"] });
    const now = T0 + LEASE;
    const first = await store.expireLeases({ now, max: 10, queues: ["a"], retry: DEFAULT_RETRY });
    expect(first.expired).toEqual([{ jobId: "retry", state: "scheduled" }]);
    const second = await store.expireLeases({ now: now + 1, max: 10, queues: ["b"], retry: { maxAttempts: 1, delaysMs: [] } });
    expect(second.expired).toEqual([{ jobId: "ceiling", state: "deadLettered" }]);

    expect((await historyOf(store, "retry")).slice(1)).toEqual([
      { jobId: "retry", ordinal: 2, at: T0, state: "leased", attempt: 1, failureDetail: null },
      { jobId: "retry", ordinal: 3, at: now, state: "scheduled", attempt: 1, failureDetail: null },
    ]);
    expect((await historyOf(store, "ceiling")).slice(1)).toEqual([
      { jobId: "ceiling", ordinal: 2, at: T0, state: "leased", attempt: 1, failureDetail: null },
      { jobId: "ceiling", ordinal: 3, at: now + 1, state: "deadLettered", attempt: 1, failureDetail: null },
    ]);
  });

  clause("history: cancel and requeue append their resulting states; a cancel request appends nothing", async () => {
    const store = await ctx.store();
    await enqueueJobs(store, [newJob("idle", { queue: "other" })]);
    expect(await store.cancelJob({ jobId: "idle", actor: "alice", now: T0 + 1 })).toEqual({ status: "cancelled" });
    expect(await historyOf(store, "idle")).toEqual([
      { jobId: "idle", ordinal: 1, at: T0, state: "scheduled", attempt: 0, failureDetail: null },
      { jobId: "idle", ordinal: 2, at: T0 + 1, state: "cancelled", attempt: 0, failureDetail: null },
    ]);

    const running = await leaseJob(store, "running");
    const before = await store.getJobHistory("running");
    expect(await store.cancelJob({ jobId: "running", actor: "alice", now: T0 + 2 })).toEqual({ status: "cancelRequested" });
    expect(await store.getJobHistory("running")).toEqual(before);
    await report(store, running, { type: "failed", retryAt: null, failureDetail: "boom" }, T0 + 3);
    expect(await stateOf(store, "running")).toBe("deadLettered");

    expect(await store.requeueJob({ jobId: "running", actor: "alice", now: T0 + 4 })).toEqual({ status: "requeued" });
    const history = await historyOf(store, "running");
    expect(history.map((t) => [t.state, t.attempt])).toEqual([
      ["scheduled", 0],
      ["leased", 1],
      ["deadLettered", 1],
      ["scheduled", 0],
    ]);
    expect(history[3]).toEqual({ jobId: "running", ordinal: 4, at: T0 + 4, state: "scheduled", attempt: 0, failureDetail: null });
  });

  clause("history: a minted and a triggered schedule job each record scheduled at attempt 0", async () => {
    const store = await ctx.store();
    await store.upsertSchedule({ schedule: newSchedule("tick"), now: T0 });
    const [minted] = await store.mintDue({
      decisions: [{ scheduleId: "tick", expectedCursor: T0, newCursor: T0 + MINUTE, mint: [T0 + MINUTE], skip: [] }],
      now: T0 + MINUTE + 3,
    });
    const mintedId = scheduledJobId("tick", T0 + MINUTE);
    expect(minted).toEqual({ scheduleId: "tick", status: "minted", jobIds: [mintedId] });
    expect(await historyOf(store, mintedId)).toEqual([
      { jobId: mintedId, ordinal: 1, at: T0 + MINUTE + 3, state: "scheduled", attempt: 0, failureDetail: null },
    ]);

    expect(await store.triggerSchedule({ scheduleId: "tick", jobId: "extra", actor: "alice", now: T0 + 2 * MINUTE })).toEqual({
      status: "triggered",
      jobId: "extra",
    });
    expect(await historyOf(store, "extra")).toEqual([
      { jobId: "extra", ordinal: 1, at: T0 + 2 * MINUTE, state: "scheduled", attempt: 0, failureDetail: null },
    ]);
  });

  clause("history: releasing a dependency appends scheduled to the child", async () => {
    const store = await ctx.store();
    await enqueueJobs(store, [newJob("p"), newJob("c", { parentIds: ["p"], queue: "children" })]);
    const [parent] = await claimJobs(store);
    await report(store, parent!, { type: "succeeded" }, T0 + 4);
    expect(await historyOf(store, "c")).toEqual([
      { jobId: "c", ordinal: 1, at: T0, state: "awaitingParents", attempt: 0, failureDetail: null },
      { jobId: "c", ordinal: 2, at: T0 + 4, state: "scheduled", attempt: 0, failureDetail: null },
    ]);
  });

  clause("history: a cancellation cascade appends cancelled to each descendant", async () => {
    const store = await ctx.store();
    await enqueueJobs(store, [
      newJob("p"),
      newJob("c", { parentIds: ["p"], queue: "children" }),
      newJob("g", { parentIds: ["c"], queue: "children" }),
      newJob("gg", { parentIds: ["g"], queue: "children" }),
    ]);
    const [parent] = await claimJobs(store);
    await report(store, parent!, { type: "failed", retryAt: null, failureDetail: "boom" }, T0 + 6);
    for (const id of ["c", "g", "gg"]) {
      expect(await historyOf(store, id), id).toEqual([
        { jobId: id, ordinal: 1, at: T0, state: "awaitingParents", attempt: 0, failureDetail: null },
        { jobId: id, ordinal: 2, at: T0 + 6, state: "cancelled", attempt: 0, failureDetail: null },
      ]);
    }
  });

  clause("history: a full lifecycle records its states and attempts in order", async () => {
    const store = await ctx.store();
    await enqueueJobs(store, [newJob("j1")]);
    const [first] = await claimJobs(store, { now: T0 + SECOND });
    await report(store, first!, { type: "failed", retryAt: T0 + 10 * SECOND, failureDetail: "Error: once" }, T0 + 2 * SECOND);
    const [second] = await claimJobs(store, { now: T0 + 10 * SECOND });
    expect(second!.attempt).toBe(2);
    await report(store, second!, { type: "succeeded", output: "42" }, T0 + 11 * SECOND);
    expect(await historyOf(store, "j1")).toEqual([
      { jobId: "j1", ordinal: 1, at: T0, state: "scheduled", attempt: 0, failureDetail: null },
      { jobId: "j1", ordinal: 2, at: T0 + SECOND, state: "leased", attempt: 1, failureDetail: null },
      { jobId: "j1", ordinal: 3, at: T0 + 2 * SECOND, state: "scheduled", attempt: 1, failureDetail: "Error: once" },
      { jobId: "j1", ordinal: 4, at: T0 + 10 * SECOND, state: "leased", attempt: 2, failureDetail: null },
      { jobId: "j1", ordinal: 5, at: T0 + 11 * SECOND, state: "succeeded", attempt: 2, failureDetail: null },
    ]);
  });

  clause("history: positions rise strictly across the store in commit order; ordinals rise per job", async () => {
    const store = await ctx.store();
    // Each step commits transitions of one job only, so the expected commit order is unambiguous.
    const order: [string, number][] = [];
    await enqueueJobs(store, [newJob("a")]);
    order.push(["a", 1]);
    await enqueueJobs(store, [newJob("b", { queue: "qb" })]);
    order.push(["b", 1]);
    const [b] = await claimJobs(store, { queues: ["qb"] });
    order.push(["b", 2]);
    const [a] = await claimJobs(store);
    order.push(["a", 2]);
    await report(store, b!, { type: "failed", retryAt: T0 + SECOND }, T0 + 1);
    order.push(["b", 3]);
    await enqueueJobs(store, [newJob("c", { queue: "qc" })], T0 + 1);
    order.push(["c", 1]);
    await report(store, a!, { type: "succeeded" }, T0 + 2);
    order.push(["a", 3]);
    expect(await store.cancelJob({ jobId: "c", actor: "alice", now: T0 + 3 })).toEqual({ status: "cancelled" });
    order.push(["c", 2]);
    const [b2] = await claimJobs(store, { queues: ["qb"], now: T0 + SECOND });
    order.push(["b", 4]);
    await report(store, b2!, { type: "succeeded" }, T0 + SECOND);
    order.push(["b", 5]);

    const all = await histories(store, ["a", "b", "c"]);
    for (const [id, history] of Object.entries(all)) {
      expect(history.map((t) => t.ordinal), id).toEqual(history.map((_, i) => i + 1));
    }
    const positions = order.map(([id, ordinal]) => {
      const found = all[id]!.find((t) => t.ordinal === ordinal);
      expect(found, `${id} #${ordinal}`).toBeDefined();
      return found!.position;
    });
    for (let i = 1; i < positions.length; i++) {
      expect(positions[i], `${order[i]!.join(" #")} after ${order[i - 1]!.join(" #")}`).toBeGreaterThan(positions[i - 1]!);
    }
  });

  clause("history: the log keeps the newest bounds.transitionsPerJob entries while ordinals keep counting", async () => {
    const store = await ctx.store({ bounds: { transitionsPerJob: 3 } });
    await enqueueJobs(store, [newJob("j1"), newJob("short", { queue: "other" })]);
    let now = T0;
    for (let attempt = 1; attempt <= 2; attempt++) {
      const [job] = await claimJobs(store, { now });
      expect(job!.attempt).toBe(attempt);
      now += SECOND;
      await report(store, job!, { type: "failed", retryAt: now, failureDetail: `fail ${attempt}` }, now);
    }
    // Five transitions so far: scheduled, leased, scheduled, leased, scheduled. The oldest two are gone.
    const history = await store.getJobHistory("j1");
    expect(history.map((t) => [t.ordinal, t.state, t.attempt, t.failureDetail])).toEqual([
      [3, "scheduled", 1, "fail 1"],
      [4, "leased", 2, null],
      [5, "scheduled", 2, "fail 2"],
    ]);
    expect(history[1]!.position).toBeGreaterThan(history[0]!.position);
    expect(history[2]!.position).toBeGreaterThan(history[1]!.position);

    const [third] = await claimJobs(store, { now });
    await report(store, third!, { type: "succeeded" }, now);
    expect((await store.getJobHistory("j1")).map((t) => [t.ordinal, t.state])).toEqual([
      [5, "scheduled"],
      [6, "leased"],
      [7, "succeeded"],
    ]);
    // A job under the bound keeps everything.
    expect((await store.getJobHistory("short")).map((t) => t.ordinal)).toEqual([1]);
  });

  clause("history: failure detail appears only on the transition of the failing attempt", async () => {
    const store = await ctx.store();
    await enqueueJobs(store, [newJob("j1")]);
    const [first] = await claimJobs(store);
    await report(store, first!, { type: "failed", retryAt: T0 + SECOND, failureDetail: "Error: first" }, T0 + 1);
    const [second] = await claimJobs(store, { now: T0 + SECOND });
    await report(store, second!, { type: "failed", retryAt: null, failureDetail: "Error: second" }, T0 + SECOND + 1);
    expect((await store.getJobHistory("j1")).map((t) => [t.state, t.failureDetail])).toEqual([
      ["scheduled", null],
      ["leased", null],
      ["scheduled", "Error: first"],
      ["leased", null],
      ["deadLettered", "Error: second"],
    ]);
    // A failure without detail, and a success, carry none.
    const quiet = await leaseJob(store, "quiet", { queue: "q" }, { queues: ["q"] });
    await report(store, quiet, { type: "failed", retryAt: null });
    expect((await lastOf(store, "quiet")).failureDetail).toBeNull();
    const ok = await leaseJob(store, "ok", { queue: "q2" }, { queues: ["q2"] });
    await report(store, ok, { type: "succeeded", output: '"fine"' });
    expect((await store.getJobHistory("ok")).map((t) => t.failureDetail)).toEqual([null, null, null]);
  });

  clause("history: failure detail over bounds.failureDetailBytes is truncated on a character boundary, never rejected", async () => {
    const store = await ctx.store({ bounds: { failureDetailBytes: 10 } });
    const cases = [
      { id: "ascii", detail: "0123456789abcdef", expected: "0123456789" },
      { id: "twoByte", detail: "aéééééé", expected: "aéééé" }, // 1 + 4 × 2 = 9 bytes; one more é would be 11
      { id: "emoji", detail: "abcdefgh🎉🎉", expected: "abcdefgh" }, // the 4-byte pair is kept or dropped whole
      { id: "exact", detail: "ééééé", expected: "ééééé" }, // exactly 10 bytes: kept
    ];
    let now = T0;
    for (const c of cases) {
      const job = await leaseJob(store, c.id, { queue: c.id }, { queues: [c.id], now });
      expect(await report(store, job, { type: "failed", retryAt: null, failureDetail: c.detail }, now)).toEqual({
        jobId: c.id,
        attempt: expect.any(Number),
        status: "applied",
        state: "deadLettered",
      });
      const detail = (await lastOf(store, c.id)).failureDetail;
      expect(detail, c.id).toBe(c.expected);
      expect(utf8ByteLength(detail!)).toBeLessThanOrEqual(10);
      expect(detail, c.id).toBe(truncateUtf8(c.detail, 10));
      now += 1;
    }
  });

  clause("history: policy off records nothing from any operation while jobs still work and outputs are stored", async () => {
    const store = await ctx.store({ historyPolicy: "off" });
    expect(store.capabilities.historyPolicy).toBe("off");
    await enqueueJobs(store, [
      newJob("ok"),
      newJob("bad"),
      newJob("lapsed"),
      newJob("idle", { queue: "other" }),
      newJob("child", { parentIds: ["ok"], queue: "other" }),
      newJob("doomed", { parentIds: ["bad"], queue: "other" }),
    ]);
    const claimed = await claimJobs(store, { max: 3 });
    expect(claimed.map((j) => j.id).sort()).toEqual(["bad", "lapsed", "ok"]);
    const byId = Object.fromEntries(claimed.map((j) => [j.id, j]));
    expect(await report(store, byId["ok"]!, { type: "succeeded", output: '{"ok":1}' }, T0 + 1)).toMatchObject({ status: "applied" });
    expect(await report(store, byId["bad"]!, { type: "failed", retryAt: null, failureDetail: "boom" }, T0 + 2)).toMatchObject({
      status: "applied",
    });
    expect(await store.cancelJob({ jobId: "idle", actor: "alice", now: T0 + 3 })).toEqual({ status: "cancelled" });
    const swept = await store.expireLeases({ now: T0 + LEASE, max: 10, retry: DEFAULT_RETRY });
    expect(swept.expired).toEqual([{ jobId: "lapsed", state: "scheduled" }]);

    const ids = ["ok", "bad", "lapsed", "idle", "child", "doomed"];
    const states = [];
    for (const id of ids) states.push(await stateOf(store, id));
    expect(states).toEqual(["succeeded", "deadLettered", "scheduled", "cancelled", "scheduled", "cancelled"]);
    expect(await store.getJobOutput("ok")).toBe('{"ok":1}');
    expect((await store.getJob("lapsed"))!.attempt).toBe(1);
    // The lapsed job runs again after its retry delay, at the next attempt.
    const [again] = await claimJobs(store, { now: T0 + LEASE + DEFAULT_RETRY.delaysMs[0] });
    expect(again).toMatchObject({ id: "lapsed", attempt: 2 });
    for (const id of ids) expect(await store.getJobHistory(id), id).toEqual([]);
  });

  clause("history: policy off records nothing from mint, trigger, requeue, release or a workflow's enqueue either", async () => {
    const store = await ctx.store({ historyPolicy: "off" });
    await store.upsertSchedule({ schedule: newSchedule("tick"), now: T0 });
    const [minted] = await store.mintDue({
      decisions: [{ scheduleId: "tick", expectedCursor: T0, newCursor: T0 + MINUTE, mint: [T0 + MINUTE], skip: [] }],
      now: T0 + MINUTE,
    });
    const mintedId = scheduledJobId("tick", T0 + MINUTE);
    expect(minted).toEqual({ scheduleId: "tick", status: "minted", jobIds: [mintedId] });
    expect(await store.triggerSchedule({ scheduleId: "tick", jobId: "extra", actor: "alice", now: T0 + MINUTE })).toEqual({
      status: "triggered",
      jobId: "extra",
    });
    const workflow = await store.enqueueWorkflow({
      workflow: { id: "wf", name: "pair", jobs: [newJob("w1", { queue: "wf" }), newJob("w2", { queue: "wf", parentIds: ["w1"] })] },
      now: T0 + MINUTE,
    });
    expect(workflow).toMatchObject({ status: "created" });

    // Release: the minted job goes back to scheduled without a transition.
    const [first] = await claimJobs(store, { now: T0 + MINUTE, max: 1 });
    expect(first?.id).toBe(mintedId);
    expect(await store.release({ workerId: "w1", leases: [{ jobId: mintedId, attempt: first!.attempt }], now: T0 + MINUTE + 1 })).toEqual([
      { jobId: mintedId, status: "released" },
    ]);
    // Requeue: the triggered job dead-letters and comes back, attempt reset.
    const claimed = await claimJobs(store, { now: T0 + MINUTE + 2 });
    const extra = claimed.find((j) => j.id === "extra")!;
    expect(await report(store, extra, { type: "failed", retryAt: null, failureDetail: "boom" }, T0 + MINUTE + 3)).toMatchObject({
      state: "deadLettered",
    });
    expect(await store.requeueJob({ jobId: "extra", actor: "alice", now: T0 + MINUTE + 4 })).toEqual({ status: "requeued" });
    // The workflow runs: its root's success releases the child.
    const [w1] = await claimJobs(store, { queues: ["wf"], now: T0 + MINUTE + 5 });
    await report(store, w1!, { type: "succeeded" }, T0 + MINUTE + 6);

    expect(await store.getJob(mintedId)).toMatchObject({ state: "leased", releases: 1 });
    expect(await store.getJob("extra")).toMatchObject({ state: "scheduled", attempt: 0 });
    expect(await stateOf(store, "w2")).toBe("scheduled");
    expect(await store.getWorkflow("wf")).toMatchObject({ counts: { succeeded: 1, scheduled: 1 } });
    for (const id of [mintedId, "extra", "w1", "w2"]) expect(await store.getJobHistory(id), id).toEqual([]);
    // The audit trail is not history: it is kept whatever the policy.
    expect((await store.listAuditRecords()).records.map((r) => r.action)).toEqual(["triggerSchedule", "requeue"]);
  });

  clause("history: policy transitions records every transition but never failure detail, single or batched", async () => {
    const store = await ctx.store({ historyPolicy: "transitions" });
    expect(store.capabilities.historyPolicy).toBe("transitions");
    const single = await leaseJob(store, "single", { queue: "s" }, { queues: ["s"] });
    await report(store, single, { type: "failed", retryAt: T0 + MINUTE, failureDetail: "Error: single" }, T0 + 1);
    expect(await historyOf(store, "single")).toEqual([
      { jobId: "single", ordinal: 1, at: T0, state: "scheduled", attempt: 0, failureDetail: null },
      { jobId: "single", ordinal: 2, at: T0, state: "leased", attempt: 1, failureDetail: null },
      { jobId: "single", ordinal: 3, at: T0 + 1, state: "scheduled", attempt: 1, failureDetail: null },
    ]);

    await enqueueJobs(store, [newJob("b1"), newJob("b2")]);
    const batch = await claimJobs(store);
    expect(batch.map((j) => j.id).sort()).toEqual(["b1", "b2"]);
    const results = await store.reportOutcomes({
      reports: batch.map((job) => ({
        jobId: job.id,
        workerId: "w1",
        attempt: job.attempt,
        outcome: job.id === "b1" ? { type: "failed", retryAt: T0 + MINUTE, failureDetail: "Error: b1" } : { type: "failed", retryAt: null, failureDetail: "Error: b2" },
      })),
      now: T0 + 2,
    });
    expect(results.map((r) => r.status)).toEqual(["applied", "applied"]);
    expect((await historyOf(store, "b1")).map((t) => [t.state, t.failureDetail])).toEqual([
      ["scheduled", null],
      ["leased", null],
      ["scheduled", null],
    ]);
    expect((await historyOf(store, "b2")).map((t) => [t.state, t.failureDetail])).toEqual([
      ["scheduled", null],
      ["leased", null],
      ["deadLettered", null],
    ]);
  });

  clause("history: heartbeats and queue pauses append no job transitions", async () => {
    const store = await ctx.store();
    const held = await leaseJob(store, "held");
    await enqueueJobs(store, [newJob("waiting", { dueAt: T0 + MINUTE })]);
    const before = await histories(store, ["held", "waiting"]);

    const beats = await store.heartbeat({ workerId: "w1", leases: [{ jobId: "held", attempt: held.attempt }], leaseMs: LEASE, now: T0 + SECOND });
    expect(beats).toMatchObject([{ jobId: "held", status: "renewed" }]);
    await store.pauseQueue({ queue: "default", actor: "alice", now: T0 + 2 * SECOND });
    expect(await claimJobs(store, { now: T0 + 2 * MINUTE })).toEqual([]);
    await store.setConcurrencyLimit({ queue: "default", actor: "alice", limit: 1, now: T0 + 3 * SECOND });
    await store.heartbeat({ workerId: "w1", leases: [{ jobId: "held", attempt: held.attempt }], leaseMs: LEASE, now: T0 + 4 * SECOND });
    await store.resumeQueue({ queue: "default", actor: "alice", now: T0 + 5 * SECOND });
    await store.heartbeat({ workerId: "intruder", leases: [{ jobId: "held", attempt: held.attempt }], leaseMs: LEASE, now: T0 + 6 * SECOND });

    expect(await histories(store, ["held", "waiting"])).toEqual(before);
    expect(before["held"]!.map((t) => t.state)).toEqual(["scheduled", "leased"]);
  });
}
