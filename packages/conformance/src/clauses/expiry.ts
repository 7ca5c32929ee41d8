import type { ClaimedJob, ExpireLeasesRequest, JobStore, RetryDisposition } from "@belay/contract";
import { expect } from "vitest";
import { clause } from "../clause.js";
import { DEFAULT_RETRY, LEASE, SECOND, T0, claimJobs, enqueueJobs, expectBelayError, leaseJob, lineage, newJob } from "../fixtures.js";
import type { SuiteContext } from "../suite-context.js";

function expire(store: JobStore, request: Partial<ExpireLeasesRequest> & Pick<ExpireLeasesRequest, "now">) {
  return store.expireLeases({ max: 32, retry: DEFAULT_RETRY, ...request });
}

/** The job and its history, to prove an operation changed nothing. */
async function readBack(store: JobStore, id: string): Promise<unknown> {
  return { job: await store.getJob(id), history: await store.getJobHistory(id) };
}

/** Claims exactly the job `id` as `w1` at `now`. */
async function claimOnly(store: JobStore, id: string, now: number, leaseMs = LEASE, queues?: readonly string[]): Promise<ClaimedJob> {
  const claimed = await claimJobs(store, { now, leaseMs, max: 1, ...(queues ? { queues } : {}) });
  expect(claimed.map((j) => j.id)).toEqual([id]);
  return claimed[0]!;
}

/** Enqueues `older` and `newer` and claims each alone, at T0 and a millisecond later: `older`'s lease expires first. */
async function leaseInTurn(store: JobStore, older: string, newer: string): Promise<void> {
  await enqueueJobs(store, [newJob(older), newJob(newer)]);
  await claimOnly(store, older, T0);
  await claimOnly(store, newer, T0 + 1);
}

const byId = <T extends { jobId: string }>(list: readonly T[]) => [...list].sort((a, b) => a.jobId.localeCompare(b.jobId));

export function expiryClauses(ctx: SuiteContext): void {
  clause("expiry: an expired lease below the ceiling is rescheduled at now + the delay for its attempt", async () => {
    const store = await ctx.store();
    await leaseJob(store, "j1");
    const now = T0 + LEASE + 5 * SECOND; // swept a while after the lease lapsed
    expect(await expire(store, { now })).toEqual({ expired: [{ jobId: "j1", state: "scheduled" }] });
    expect(await store.getJob("j1")).toMatchObject({
      state: "scheduled",
      attempt: 1,
      dueAt: now + DEFAULT_RETRY.delaysMs[0],
      leaseOwner: null,
      leaseExpiresAt: null,
      cancelRequested: false,
      terminalAt: null,
    });
    expect(await claimJobs(store, { now: now + DEFAULT_RETRY.delaysMs[0] - 1 })).toEqual([]);
    const [again] = await claimJobs(store, { now: now + DEFAULT_RETRY.delaysMs[0] });
    expect(again).toMatchObject({ id: "j1", attempt: 2 });
  });

  clause("expiry: after counted attempt n the delay is delaysMs[n - 1], and the last delay repeats", async () => {
    const store = await ctx.store();
    const retry: RetryDisposition = { maxAttempts: 10, delaysMs: [1 * SECOND, 5 * SECOND] };
    await enqueueJobs(store, [newJob("j1")]);
    let claimAt = T0;
    for (const [attempt, delay] of [
      [1, 1 * SECOND],
      [2, 5 * SECOND],
      [3, 5 * SECOND],
    ] as const) {
      const job = await claimOnly(store, "j1", claimAt);
      expect(job.attempt).toBe(attempt);
      const now = claimAt + LEASE + 100;
      expect(await expire(store, { now, retry })).toEqual({ expired: [{ jobId: "j1", state: "scheduled" }] });
      expect(await store.getJob("j1"), `after attempt ${attempt}`).toMatchObject({ state: "scheduled", attempt, dueAt: now + delay });
      claimAt = now + delay;
    }
  });

  clause("expiry: a graceful release does not count towards the ceiling or the delay index", async () => {
    const store = await ctx.store();
    const retry: RetryDisposition = { maxAttempts: 2, delaysMs: [1 * SECOND, 5 * SECOND] };
    await leaseJob(store, "j1");
    expect(await store.release({ workerId: "w1", leases: [{ jobId: "j1", attempt: 1 }], now: T0 + SECOND })).toEqual([
      { jobId: "j1", status: "released" },
    ]);
    const second = await claimOnly(store, "j1", T0 + SECOND);
    expect(second).toMatchObject({ attempt: 2, releases: 1 });
    // Counted attempts: 2 - 1 = 1, below the ceiling of 2, so the first delay applies.
    const now = T0 + SECOND + LEASE;
    expect(await expire(store, { now, retry })).toEqual({ expired: [{ jobId: "j1", state: "scheduled" }] });
    expect(await store.getJob("j1")).toMatchObject({ state: "scheduled", attempt: 2, releases: 1, dueAt: now + 1 * SECOND });
  });

  clause("expiry: an expired lease at the ceiling is dead-lettered with a cause naming the expiry", async () => {
    const store = await ctx.store();
    const retry: RetryDisposition = { maxAttempts: 2, delaysMs: [1 * SECOND] };
    await leaseJob(store, "j1");
    expect(await expire(store, { now: T0 + LEASE, retry })).toEqual({ expired: [{ jobId: "j1", state: "scheduled" }] });
    const second = await claimOnly(store, "j1", T0 + LEASE + SECOND);
    expect(second.attempt).toBe(2);
    const now = T0 + 2 * LEASE + SECOND;
    expect(await expire(store, { now, retry })).toEqual({ expired: [{ jobId: "j1", state: "deadLettered" }] });
    const job = await store.getJob("j1");
    expect(job).toMatchObject({ state: "deadLettered", attempt: 2, leaseOwner: null, leaseExpiresAt: null, terminalAt: now });
    expect(job!.terminalCause).toMatch(/expir|lease|attempt/i);
    expect(await claimJobs(store, { now: now + 100 * LEASE })).toEqual([]);
  });

  clause("expiry: a lease expiring exactly at now is expired; one millisecond later it is not, and a live lease is untouched", async () => {
    const store = await ctx.store();
    await leaseInTurn(store, "exact", "later");
    const before = await readBack(store, "later");
    expect(await expire(store, { now: T0 + LEASE })).toEqual({ expired: [{ jobId: "exact", state: "scheduled" }] });
    expect(await readBack(store, "later")).toEqual(before);
    expect(await store.getJob("later")).toMatchObject({ state: "leased", leaseOwner: "w1", leaseExpiresAt: T0 + 1 + LEASE });
    expect(await expire(store, { now: T0 + LEASE + 1 })).toEqual({ expired: [{ jobId: "later", state: "scheduled" }] });
  });

  clause("expiry: oldest expiry first, at most max per call; repeated calls drain the rest", async () => {
    const store = await ctx.store();
    await enqueueJobs(store, [newJob("x"), newJob("y"), newJob("z")]);
    // Expiries: y at T0 + LEASE, z at + 1 ms, x at + 2 ms (not enqueue order).
    await claimOnly(store, "x", T0, LEASE + 2);
    await claimOnly(store, "y", T0, LEASE);
    await claimOnly(store, "z", T0, LEASE + 1);
    const now = T0 + LEASE + 10 * SECOND;
    const first = await expire(store, { now, max: 2 });
    expect(byId(first.expired)).toEqual([
      { jobId: "y", state: "scheduled" },
      { jobId: "z", state: "scheduled" },
    ]);
    expect(await store.getJob("x")).toMatchObject({ state: "leased" });
    expect(await expire(store, { now, max: 2 })).toEqual({ expired: [{ jobId: "x", state: "scheduled" }] });
    expect(await expire(store, { now, max: 2 })).toEqual({ expired: [] });
  });

  clause("expiry: max is clamped to bounds.claimBatch, not refused", async () => {
    const store = await ctx.store({ bounds: { claimBatch: 2 } });
    await enqueueJobs(store, [newJob("a"), newJob("b"), newJob("c")]);
    expect(await claimJobs(store, { max: 2 })).toHaveLength(2);
    expect(await claimJobs(store, { max: 2 })).toHaveLength(1);
    const now = T0 + LEASE;
    expect((await expire(store, { now, max: 100 })).expired).toHaveLength(2);
    expect((await expire(store, { now, max: 100 })).expired).toHaveLength(1);
    expect((await expire(store, { now, max: 100 })).expired).toEqual([]);
  });

  clause("expiry: scoped to the given queues; other queues' expired leases are untouched; omitting queues sweeps all", async () => {
    const store = await ctx.store();
    await enqueueJobs(store, [newJob("a1", { queue: "a" }), newJob("b1", { queue: "b" }), newJob("c1", { queue: "c" })]);
    expect(await claimJobs(store, { queues: ["a", "b", "c"] })).toHaveLength(3);
    const now = T0 + LEASE;
    const beforeB = await readBack(store, "b1");
    const beforeC = await readBack(store, "c1");
    expect(await expire(store, { now, queues: ["a"] })).toEqual({ expired: [{ jobId: "a1", state: "scheduled" }] });
    expect(await readBack(store, "b1")).toEqual(beforeB);
    expect(await readBack(store, "c1")).toEqual(beforeC);
    expect(await expire(store, { now, queues: [] })).toEqual({ expired: [] });
    expect(await readBack(store, "b1")).toEqual(beforeB);
    const all = await expire(store, { now });
    expect(byId(all.expired)).toEqual([
      { jobId: "b1", state: "scheduled" },
      { jobId: "c1", state: "scheduled" },
    ]);
  });

  clause("expiry: concurrent sweepers dispose of each expired lease exactly once", async () => {
    const store = await ctx.store();
    const peer = await ctx.peer(store);
    const ids = ["j1", "j2", "j3", "j4", "j5", "j6"];
    await enqueueJobs(store, ids.map((id) => newJob(id)));
    expect(await claimJobs(store)).toHaveLength(ids.length);
    const lengths = new Map<string, number>();
    for (const id of ids) lengths.set(id, (await store.getJobHistory(id)).length);
    const now = T0 + LEASE;
    const results = await Promise.all(
      [store, peer, store, peer].map((handle) => handle.expireLeases({ now, max: 32, retry: DEFAULT_RETRY })),
    );
    const disposed = results.flatMap((r) => r.expired.map((e) => e.jobId));
    expect(disposed).toHaveLength(ids.length);
    expect([...disposed].sort()).toEqual(ids);
    for (const id of ids) {
      const history = await store.getJobHistory(id);
      expect(history, id).toHaveLength(lengths.get(id)! + 1);
      expect(history.at(-1), id).toMatchObject({ state: "scheduled", attempt: 1 });
      expect(await store.getJob(id), id).toMatchObject({ state: "scheduled", dueAt: now + DEFAULT_RETRY.delaysMs[0] });
    }
  });

  clause("expiry: a dead-lettered expiry cascades to onSuccess children and releases onAnyTerminal ones", async () => {
    const store = await ctx.store();
    await enqueueJobs(store, [
      ...lineage("parentP", "childC", "grandG"),
      newJob("anyKid", { parentIds: ["parentP"], dependencyMode: "onAnyTerminal" }),
    ]);
    await claimOnly(store, "parentP", T0);
    const now = T0 + LEASE;
    // Only the expired lease itself is reported; its descendants follow in the same operation.
    expect(await expire(store, { now, retry: { maxAttempts: 1, delaysMs: [SECOND] } })).toEqual({
      expired: [{ jobId: "parentP", state: "deadLettered" }],
    });
    expect(await store.getJob("childC")).toMatchObject({ state: "cancelled", terminalAt: now });
    expect(await store.getJob("grandG")).toMatchObject({ state: "cancelled", terminalAt: now });
    expect((await store.getJob("childC"))!.terminalCause).toContain("parentP");
    for (const id of ["childC", "grandG"]) {
      expect((await store.getJobHistory(id)).filter((t) => t.state === "cancelled"), id).toHaveLength(1);
    }
    expect(await store.getJob("anyKid")).toMatchObject({ state: "scheduled", terminalAt: null });
  });

  clause("expiry: one sweep dead-letters expired parents in several queues and cascades to every child of each", async () => {
    const store = await ctx.store();
    const queues = ["qa", "qb", "qc"];
    await enqueueJobs(
      store,
      queues.flatMap((q) => [
        newJob(`p-${q}`, { queue: q }),
        newJob(`c-${q}`, { queue: "kids", parentIds: [`p-${q}`] }),
        newJob(`g-${q}`, { queue: "kids", parentIds: [`c-${q}`] }),
        newJob(`any-${q}`, { queue: "kids", parentIds: [`p-${q}`], dependencyMode: "onAnyTerminal" }),
      ]),
    );
    // One more parent, in qa, whose lease outlives the sweep: it and its child are untouched.
    await enqueueJobs(store, [newJob("late", { queue: "qa", dueAt: T0 + SECOND }), newJob("late-kid", { queue: "kids", parentIds: ["late"] })]);
    expect((await claimJobs(store, { queues, now: T0, max: 3 })).map((j) => j.id).sort()).toEqual(["p-qa", "p-qb", "p-qc"]);
    await claimOnly(store, "late", T0 + SECOND, LEASE, ["qa"]);
    const now = T0 + LEASE;
    const result = await expire(store, { now, retry: { maxAttempts: 1, delaysMs: [SECOND] } });
    expect(byId(result.expired)).toEqual(queues.map((q) => ({ jobId: `p-${q}`, state: "deadLettered" })));
    for (const q of queues) {
      for (const id of [`c-${q}`, `g-${q}`]) {
        const job = await store.getJob(id);
        expect(job, id).toMatchObject({ state: "cancelled", terminalAt: now });
        expect(job!.terminalCause, id).toContain(id.startsWith("c-") ? `p-${q}` : `c-${q}`);
        expect((await store.getJobHistory(id)).map((t) => t.state), id).toEqual(["awaitingParents", "cancelled"]);
      }
      expect(await store.getJob(`any-${q}`), `any-${q}`).toMatchObject({ state: "scheduled", dueAt: now, terminalAt: null });
    }
    expect(await store.getJob("late")).toMatchObject({ state: "leased", leaseExpiresAt: T0 + SECOND + LEASE });
    expect(await store.getJob("late-kid")).toMatchObject({ state: "awaitingParents" });
    expect(byId((await claimJobs(store, { queues: ["kids"], now })).map((j) => ({ jobId: j.id })))).toEqual(
      queues.map((q) => ({ jobId: `any-${q}` })),
    );
  });

  clause("expiry: a rescheduled expiry leaves onSuccess children waiting", async () => {
    const store = await ctx.store();
    await enqueueJobs(store, [newJob("p"), newJob("kid", { parentIds: ["p"] })]);
    await claimOnly(store, "p", T0);
    expect(await expire(store, { now: T0 + LEASE })).toEqual({ expired: [{ jobId: "p", state: "scheduled" }] });
    expect(await store.getJob("kid")).toMatchObject({ state: "awaitingParents", terminalAt: null });
  });

  clause("expiry: a lease with a pending cancel request expires to cancelled and clears the flag", async () => {
    const store = await ctx.store();
    await leaseJob(store, "j1");
    expect(await store.cancelJob({ jobId: "j1", actor: "alice", now: T0 + SECOND })).toEqual({ status: "cancelRequested" });
    const now = T0 + LEASE;
    expect(await expire(store, { now })).toEqual({ expired: [{ jobId: "j1", state: "cancelled" }] });
    expect(await store.getJob("j1")).toMatchObject({
      state: "cancelled",
      cancelRequested: false,
      leaseOwner: null,
      leaseExpiresAt: null,
      terminalAt: now,
    });
    expect(await claimJobs(store, { now: now + 100 * LEASE })).toEqual([]);
  });

  clause("expiry: the expiry transition records the claimed attempt, at now, without failure detail", async () => {
    const store = await ctx.store();
    await leaseInTurn(store, "retried", "dead");
    const now = T0 + LEASE + 1;
    await expire(store, { now, max: 1 }); // the older lease: "retried"
    await expire(store, { now, max: 1, retry: { maxAttempts: 1, delaysMs: [] } });
    const retried = await store.getJobHistory("retried");
    expect(retried.at(-1)).toEqual(expect.objectContaining({ state: "scheduled", at: now, attempt: 1, failureDetail: null }));
    const dead = await store.getJobHistory("dead");
    expect(dead.at(-1)).toEqual(expect.objectContaining({ state: "deadLettered", at: now, attempt: 1, failureDetail: null }));
  });

  clause("expiry: an expired lease frees the job's concurrency slot", async () => {
    const store = await ctx.store();
    await store.setConcurrencyLimit({ queue: "default", limit: 1, actor: "ops", now: T0 });
    await enqueueJobs(store, [newJob("first"), newJob("second")]);
    expect((await claimJobs(store)).map((j) => j.id)).toEqual(["first"]);
    const now = T0 + LEASE;
    expect(await claimJobs(store, { workerId: "w2", now: now - 1 })).toEqual([]);
    expect(await expire(store, { now })).toEqual({ expired: [{ jobId: "first", state: "scheduled" }] });
    expect((await claimJobs(store, { workerId: "w2", now })).map((j) => j.id)).toEqual(["second"]);
  });

  clause("expiry: the result names each disposed job with the state it entered, and nothing else", async () => {
    const store = await ctx.store();
    await enqueueJobs(store, [newJob("spent"), newJob("dead", { queue: "q2" }), newJob("stop"), newJob("live")]);
    expect(await claimJobs(store, { max: 2 })).toHaveLength(2); // spent, stop
    expect(await claimJobs(store, { queues: ["q2"] })).toHaveLength(1);
    expect(await store.cancelJob({ jobId: "stop", actor: "alice", now: T0 })).toEqual({ status: "cancelRequested" });
    await claimJobs(store, { now: T0 + SECOND }); // live: expires one second after the others
    const result = await expire(store, { now: T0 + LEASE, retry: { maxAttempts: 1, delaysMs: [SECOND] } });
    expect(byId(result.expired)).toEqual([
      { jobId: "dead", state: "deadLettered" },
      { jobId: "spent", state: "deadLettered" },
      { jobId: "stop", state: "cancelled" },
    ]);
    for (const { jobId, state } of result.expired) expect(await store.getJob(jobId), jobId).toMatchObject({ state });
    expect(await store.getJob("live")).toMatchObject({ state: "leased" });
  });

  clause("expiry: a malformed request throws InvalidInputError naming the field and disposes of nothing", async () => {
    const store = await ctx.store();
    await leaseJob(store, "j1");
    const before = await readBack(store, "j1");
    const now = T0 + LEASE;
    const cases: [Partial<ExpireLeasesRequest>, string][] = [
      [{ max: 0 }, "max"],
      [{ max: 1.5 }, "max"],
      [{ retry: { maxAttempts: 0, delaysMs: [SECOND] } }, "retry.maxAttempts"],
      [{ retry: { maxAttempts: 3, delaysMs: [SECOND, -1] } }, "retry.delaysMs[1]"],
      [{ now: T0 + 0.5 }, "now"],
    ];
    for (const [request, field] of cases) {
      await expectBelayError(() => expire(store, { now, ...request }), "BELAY_INVALID_INPUT", { field });
      expect(await readBack(store, "j1"), field).toEqual(before);
    }
  });
}
