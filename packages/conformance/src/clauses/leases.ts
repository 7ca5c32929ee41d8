import type { HeartbeatRequest, JobStore, ReleaseRequest } from "@belay/contract";
import { expect } from "vitest";
import { clause } from "../clause.js";
import { LEASE, SECOND, T0, claimJobs, enqueueJobs, expectBelayError, leaseJob, newJob, report } from "../fixtures.js";
import type { SuiteContext } from "../suite-context.js";

function heartbeat(store: JobStore, request: Partial<HeartbeatRequest> & Pick<HeartbeatRequest, "leases">) {
  return store.heartbeat({ workerId: "w1", leaseMs: LEASE, now: T0, ...request });
}

function release(store: JobStore, request: Partial<ReleaseRequest> & Pick<ReleaseRequest, "leases">) {
  return store.release({ workerId: "w1", now: T0, ...request });
}

/** The job and its history, to prove an operation changed nothing. */
async function readBack(store: JobStore, id: string): Promise<unknown> {
  return { job: await store.getJob(id), history: await store.getJobHistory(id) };
}

export function leaseClauses(ctx: SuiteContext): void {
  clause("leases: a heartbeat renews the lease to now + leaseMs, and the lease then outlives its old expiry", async () => {
    const store = await ctx.store();
    await leaseJob(store, "j1");
    const historyBefore = await store.getJobHistory("j1");
    const renewed = await heartbeat(store, { leases: [{ jobId: "j1", attempt: 1 }], leaseMs: 90 * SECOND, now: T0 + 30 * SECOND });
    expect(renewed).toEqual([{ jobId: "j1", status: "renewed", leaseExpiresAt: T0 + 120 * SECOND, cancelRequested: false }]);
    expect(await store.getJob("j1")).toMatchObject({ state: "leased", leaseOwner: "w1", attempt: 1, leaseExpiresAt: T0 + 120 * SECOND });
    // A renewal enters no new state.
    expect(await store.getJobHistory("j1")).toEqual(historyBefore);
    // Past the old expiry (T0 + 60 s) the lease is still live: nothing expires, nobody else claims it.
    expect((await store.expireLeases({ now: T0 + LEASE, max: 10, retry: { maxAttempts: 3, delaysMs: [0] } })).expired).toEqual([]);
    expect(await claimJobs(store, { workerId: "w2", now: T0 + LEASE })).toEqual([]);
    const again = await heartbeat(store, { leases: [{ jobId: "j1", attempt: 1 }], now: T0 + 100 * SECOND });
    expect(again).toEqual([{ jobId: "j1", status: "renewed", leaseExpiresAt: T0 + 100 * SECOND + LEASE, cancelRequested: false }]);
  });

  clause("leases: a heartbeat from another worker is lost and changes nothing", async () => {
    const store = await ctx.store();
    await leaseJob(store, "j1");
    const before = await readBack(store, "j1");
    expect(await heartbeat(store, { workerId: "w2", leases: [{ jobId: "j1", attempt: 1 }], now: T0 + SECOND })).toEqual([
      { jobId: "j1", status: "lost" },
    ]);
    expect(await readBack(store, "j1")).toEqual(before);
  });

  clause("leases: a heartbeat for another attempt is lost and changes nothing", async () => {
    const store = await ctx.store();
    const first = await leaseJob(store, "j1");
    await report(store, first, { type: "failed", retryAt: T0 + SECOND });
    const [second] = await claimJobs(store, { now: T0 + SECOND });
    expect(second!.attempt).toBe(2);
    const before = await readBack(store, "j1");
    const results = await heartbeat(store, {
      leases: [
        { jobId: "j1", attempt: 1 },
        { jobId: "j1", attempt: 3 },
      ],
      now: T0 + 2 * SECOND,
    });
    expect(results).toEqual([
      { jobId: "j1", status: "lost" },
      { jobId: "j1", status: "lost" },
    ]);
    expect(await readBack(store, "j1")).toEqual(before);
  });

  clause("leases: a lease is dead at exactly its expiry instant; one millisecond before it renews", async () => {
    const store = await ctx.store();
    await enqueueJobs(store, [newJob("early"), newJob("exact")]);
    expect(await claimJobs(store)).toHaveLength(2);
    expect(await heartbeat(store, { leases: [{ jobId: "early", attempt: 1 }], now: T0 + LEASE - 1 })).toEqual([
      { jobId: "early", status: "renewed", leaseExpiresAt: T0 + 2 * LEASE - 1, cancelRequested: false },
    ]);
    const before = await readBack(store, "exact");
    expect(await heartbeat(store, { leases: [{ jobId: "exact", attempt: 1 }], now: T0 + LEASE })).toEqual([
      { jobId: "exact", status: "lost" },
    ]);
    expect(await readBack(store, "exact")).toEqual(before);
  });

  clause("leases: a heartbeat surfaces a cancel request made on the leased job", async () => {
    const store = await ctx.store();
    await leaseJob(store, "j1");
    const lease = { jobId: "j1", attempt: 1 };
    expect(await heartbeat(store, { leases: [lease], now: T0 + 1 })).toMatchObject([{ status: "renewed", cancelRequested: false }]);
    expect(await store.cancelJob({ jobId: "j1", actor: "alice", now: T0 + 2 })).toEqual({ status: "cancelRequested" });
    expect(await heartbeat(store, { leases: [lease], now: T0 + 3 })).toEqual([
      { jobId: "j1", status: "renewed", leaseExpiresAt: T0 + 3 + LEASE, cancelRequested: true },
    ]);
    // The request stands until the job leaves its lease.
    expect(await heartbeat(store, { leases: [lease], now: T0 + 4 })).toMatchObject([{ status: "renewed", cancelRequested: true }]);
    expect(await store.getJob("j1")).toMatchObject({ state: "leased", cancelRequested: true });
  });

  clause("leases: a heartbeat for a foreign, unleased or unknown job is lost and reports no cancel", async () => {
    const store = await ctx.store();
    await leaseJob(store, "theirs", {}, { workerId: "w2" });
    await store.cancelJob({ jobId: "theirs", actor: "alice", now: T0 });
    await enqueueJobs(store, [newJob("waiting", { dueAt: T0 + LEASE })]);
    const results = await heartbeat(store, {
      leases: [
        { jobId: "theirs", attempt: 1 },
        { jobId: "waiting", attempt: 1 },
        { jobId: "ghost", attempt: 1 },
      ],
      now: T0 + 1,
    });
    expect(results).toEqual([
      { jobId: "theirs", status: "lost" },
      { jobId: "waiting", status: "lost" },
      { jobId: "ghost", status: "lost" },
    ]);
    for (const result of results) expect(result).not.toHaveProperty("cancelRequested");
    expect(await store.getJob("waiting")).toMatchObject({ state: "scheduled", attempt: 0, leaseOwner: null });
    expect(await store.getJob("ghost")).toBeNull();
  });

  clause("leases: a batch of leases is answered per job, in input order", async () => {
    const store = await ctx.store();
    await enqueueJobs(store, [newJob("a"), newJob("b"), newJob("c")]);
    expect(await claimJobs(store)).toHaveLength(3);
    const results = await heartbeat(store, {
      leases: [
        { jobId: "c", attempt: 1 },
        { jobId: "ghost", attempt: 1 },
        { jobId: "a", attempt: 2 },
        { jobId: "b", attempt: 1 },
      ],
      leaseMs: 30 * SECOND,
      now: T0 + 5,
    });
    expect(results).toEqual([
      { jobId: "c", status: "renewed", leaseExpiresAt: T0 + 5 + 30 * SECOND, cancelRequested: false },
      { jobId: "ghost", status: "lost" },
      { jobId: "a", status: "lost" },
      { jobId: "b", status: "renewed", leaseExpiresAt: T0 + 5 + 30 * SECOND, cancelRequested: false },
    ]);
    expect((await store.getJob("a"))!.leaseExpiresAt).toBe(T0 + LEASE);
    expect((await store.getJob("c"))!.leaseExpiresAt).toBe(T0 + 5 + 30 * SECOND);

    const released = await release(store, { leases: [{ jobId: "b", attempt: 1 }, { jobId: "ghost", attempt: 1 }, { jobId: "c", attempt: 1 }], now: T0 + 6 });
    expect(released).toEqual([
      { jobId: "b", status: "released" },
      { jobId: "ghost", status: "stale" },
      { jobId: "c", status: "released" },
    ]);
  });

  clause("leases: release returns the job to scheduled, due now, releases + 1, attempt kept, lease cleared, one transition", async () => {
    const store = await ctx.store();
    await leaseJob(store, "j1", { dueAt: T0 - SECOND }, { now: T0 - SECOND });
    const historyBefore = await store.getJobHistory("j1");
    expect(await release(store, { leases: [{ jobId: "j1", attempt: 1 }], now: T0 + 7 })).toEqual([{ jobId: "j1", status: "released" }]);
    expect(await store.getJob("j1")).toMatchObject({
      state: "scheduled",
      dueAt: T0 + 7,
      attempt: 1,
      releases: 1,
      leaseOwner: null,
      leaseExpiresAt: null,
      cancelRequested: false,
      terminalAt: null,
    });
    const history = await store.getJobHistory("j1");
    expect(history).toHaveLength(historyBefore.length + 1);
    expect(history.at(-1)).toMatchObject({ state: "scheduled", attempt: 1, at: T0 + 7 });
    // The released lease is gone for its old holder.
    expect(await heartbeat(store, { leases: [{ jobId: "j1", attempt: 1 }], now: T0 + 8 })).toEqual([{ jobId: "j1", status: "lost" }]);
  });

  clause("leases: a released job is claimable at once by another worker, and its attempt rises again", async () => {
    const store = await ctx.store();
    const first = await leaseJob(store, "j1");
    await release(store, { leases: [{ jobId: "j1", attempt: 1 }], now: T0 + 10 });
    const [again] = await claimJobs(store, { workerId: "w2", now: T0 + 10 });
    expect(again).toMatchObject({ id: "j1", attempt: 2, releases: 1, leaseExpiresAt: T0 + 10 + LEASE });
    expect(await store.getJob("j1")).toMatchObject({ state: "leased", leaseOwner: "w2", attempt: 2, releases: 1 });
    // The first worker's fence no longer holds.
    expect(await report(store, first, { type: "succeeded" }, T0 + 11)).toEqual({ jobId: "j1", attempt: expect.any(Number), status: "stale" });
    expect(await report(store, again!, { type: "succeeded" }, T0 + 11, "w2")).toMatchObject({ status: "applied", state: "succeeded" });
  });

  clause("leases: release is fenced: wrong worker, wrong attempt or an expired lease is stale and changes nothing", async () => {
    const store = await ctx.store();
    await leaseJob(store, "j1");
    const before = await readBack(store, "j1");
    const results = await release(store, {
      workerId: "w2",
      leases: [{ jobId: "j1", attempt: 1 }],
      now: T0 + 1,
    });
    expect(results).toEqual([{ jobId: "j1", status: "stale" }]);
    expect(await release(store, { leases: [{ jobId: "j1", attempt: 2 }], now: T0 + 1 })).toEqual([{ jobId: "j1", status: "stale" }]);
    expect(await release(store, { leases: [{ jobId: "j1", attempt: 1 }], now: T0 + LEASE })).toEqual([{ jobId: "j1", status: "stale" }]);
    expect(await release(store, { leases: [{ jobId: "ghost", attempt: 1 }], now: T0 + 1 })).toEqual([{ jobId: "ghost", status: "stale" }]);
    expect(await readBack(store, "j1")).toEqual(before);
    expect(await store.getJob("ghost")).toBeNull();
    // One millisecond before expiry the rightful holder may still release.
    expect(await release(store, { leases: [{ jobId: "j1", attempt: 1 }], now: T0 + LEASE - 1 })).toEqual([{ jobId: "j1", status: "released" }]);
  });

  clause("leases: release clears a pending cancel request", async () => {
    const store = await ctx.store();
    await leaseJob(store, "j1");
    expect(await store.cancelJob({ jobId: "j1", actor: "alice", now: T0 + 1 })).toEqual({ status: "cancelRequested" });
    expect(await release(store, { leases: [{ jobId: "j1", attempt: 1 }], now: T0 + 2 })).toEqual([{ jobId: "j1", status: "released" }]);
    expect(await store.getJob("j1")).toMatchObject({ state: "scheduled", cancelRequested: false });
    const [again] = await claimJobs(store, { workerId: "w2", now: T0 + 2 });
    expect(again!.attempt).toBe(2);
    expect(await heartbeat(store, { workerId: "w2", leases: [{ jobId: "j1", attempt: 2 }], now: T0 + 3 })).toEqual([
      { jobId: "j1", status: "renewed", leaseExpiresAt: T0 + 3 + LEASE, cancelRequested: false },
    ]);
  });

  clause("leases: released attempts do not count towards the lease-expiry ceiling", async () => {
    const delaysMs = [10 * SECOND, 20 * SECOND, 40 * SECOND];
    // Claim (attempt 1), release, claim again (attempt 2), let the lease expire: counted attempts = 2 − 1 = 1.
    const releasedThenExpired = async (store: JobStore): Promise<void> => {
      await leaseJob(store, "rel");
      await release(store, { leases: [{ jobId: "rel", attempt: 1 }], now: T0 + 1 });
      const [again] = await claimJobs(store, { now: T0 + 1 });
      expect(again).toMatchObject({ id: "rel", attempt: 2, releases: 1 });
    };
    const expireAt = T0 + 1 + LEASE;

    // maxAttempts 1: one counted attempt reaches the ceiling.
    const atCeiling = await ctx.store();
    await releasedThenExpired(atCeiling);
    const dead = await atCeiling.expireLeases({ now: expireAt, max: 10, retry: { maxAttempts: 1, delaysMs } });
    expect(dead.expired).toEqual([{ jobId: "rel", state: "deadLettered" }]);
    expect(await atCeiling.getJob("rel")).toMatchObject({ state: "deadLettered", attempt: 2, releases: 1 });

    // maxAttempts 2: one counted attempt is below it, so the job is retried after the first delay.
    const belowCeiling = await ctx.store();
    await releasedThenExpired(belowCeiling);
    // Control: a job claimed twice without a release has two counted attempts and is dead-lettered.
    const control = await leaseJob(belowCeiling, "ctl", {}, { now: T0 + 1 });
    await report(belowCeiling, control, { type: "failed", retryAt: T0 + 1 }, T0 + 1);
    expect((await claimJobs(belowCeiling, { now: T0 + 1 })).map((j) => j.id)).toEqual(["ctl"]);
    const swept = await belowCeiling.expireLeases({ now: expireAt, max: 10, retry: { maxAttempts: 2, delaysMs } });
    expect([...swept.expired].sort((a, b) => a.jobId.localeCompare(b.jobId))).toEqual([
      { jobId: "ctl", state: "deadLettered" },
      { jobId: "rel", state: "scheduled" },
    ]);
    expect(await belowCeiling.getJob("rel")).toMatchObject({ state: "scheduled", attempt: 2, releases: 1, dueAt: expireAt + delaysMs[0]! });
  });

  clause("leases: a malformed heartbeat or release throws InvalidInputError naming the field and changes nothing", async () => {
    const store = await ctx.store();
    await leaseJob(store, "j1");
    const before = await readBack(store, "j1");
    const lease = { jobId: "j1", attempt: 1 };
    const heartbeats: [Record<string, unknown>, string][] = [
      [{ workerId: "", leases: [lease] }, "workerId"],
      [{ leases: "j1" }, "leases"],
      [{ leases: [{ jobId: "", attempt: 1 }] }, "leases[0].jobId"],
      [{ leases: [lease, { jobId: "j1", attempt: 0 }] }, "leases[1].attempt"],
      [{ leases: [lease], leaseMs: 0 }, "leaseMs"],
      [{ leases: [lease], now: 1.5 }, "now"],
    ];
    for (const [fields, field] of heartbeats) {
      await expectBelayError(() => heartbeat(store, fields as unknown as HeartbeatRequest), "BELAY_INVALID_INPUT", { field });
    }
    const releases: [Record<string, unknown>, string][] = [
      [{ workerId: 3, leases: [lease] }, "workerId"],
      [{ leases: null }, "leases"],
      [{ leases: [lease, { jobId: "j1", attempt: 1.5 }] }, "leases[1].attempt"],
      [{ leases: [lease], now: "later" }, "now"],
    ];
    for (const [fields, field] of releases) {
      await expectBelayError(() => release(store, fields as unknown as ReleaseRequest), "BELAY_INVALID_INPUT", { field });
    }
    expect(await readBack(store, "j1")).toEqual(before);
  });
}
