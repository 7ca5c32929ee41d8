import { type JobStore, TransientStoreError } from "@belay/contract";
import { type AnyJobDefinition, defineJob, JobAbortedError, PermanentJobError, request, type WorkerEvent } from "@belay/core";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { createTestHarness, type TestHarness, type TestHarnessOptions } from "../src/index.js";

/** A promise with its resolver, for handlers the test holds open. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

/** A job whose one attempt fails, so it is dead-lettered at once. */
function doomedJob(name: string, message: string) {
  return defineJob({
    name,
    retry: { maxAttempts: 1 },
    handler: () => {
      throw new Error(message);
    },
  });
}

let harness: TestHarness | undefined;
afterEach(async () => {
  await harness?.stop({ timeoutMs: 1_000 });
  harness = undefined;
});

/** A harness (the test's) running `job` with `worker` options, the job enqueued once and the clock advanced `ms`. */
async function runOnce(job: AnyJobDefinition, ms: number, worker: TestHarnessOptions["worker"] = {}): Promise<{ h: TestHarness; id: string }> {
  const h = (harness = await createTestHarness({ jobs: [job], worker }));
  const { id } = await h.client.enqueue(job, undefined);
  await h.advance(ms);
  return { h, id };
}

describe("worker on the memory store", () => {
  it("never runs more handlers than the pool size, even when a burst of 10x the pool is due", async () => {
    let running = 0;
    let peak = 0;
    const gates: (() => void)[] = [];
    const job = defineJob({
      name: "burst",
      handler: async () => {
        running++;
        peak = Math.max(peak, running);
        await new Promise<void>((resolve) => gates.push(resolve));
        running--;
      },
    });
    harness = await createTestHarness({ jobs: [job], worker: { groups: [{ name: "g", queues: ["default"], poolSize: 5 }] } });
    await harness.client.enqueueMany(Array.from({ length: 50 }, () => request(job, undefined)));
    let finished = 0;
    while (finished < 50) {
      await harness.advance(0);
      expect(running).toBeLessThanOrEqual(5);
      const open = gates.splice(0);
      expect(open.length, "the worker keeps its pool busy").toBeGreaterThan(0);
      for (const release of open) release();
      finished += open.length;
    }
    await harness.advance(0);
    expect(peak).toBe(5);
    expect((await harness.jobs({ states: ["succeeded"] })).length).toBe(50);
  });

  it("never records an outcome for an execution whose lease was lost", async () => {
    const release = gate();
    let abortReason: unknown;
    const job = defineJob({
      name: "slow",
      handler: async (_: void, ctx) => {
        ctx.signal.addEventListener("abort", () => (abortReason = ctx.signal.reason));
        await release.promise;
        return { done: true };
      },
    });
    const { h, id } = await runOnce(job, 0, { leaseMs: 3_000, maintenanceIntervalMs: 600_000 });
    expect((await h.job(id)).state).toBe("leased");
    // Another node's sweep decides the lease is gone (its clock says so): the job is rescheduled.
    await h.store.expireLeases({ now: h.now() + 10_000, max: 10, retry: { maxAttempts: 5, delaysMs: [60_000] } });
    await h.advance(1_000); // the next heartbeat learns the lease is lost
    expect(abortReason).toBeInstanceOf(JobAbortedError);
    expect((abortReason as JobAbortedError).reason).toBe("leaseLost");
    release.open();
    await h.advance(0);
    const history = await h.history(id);
    expect(history.map((t) => t.state)).toEqual(["scheduled", "leased", "scheduled"]);
    expect(await h.store.getJobOutput(id)).toBeNull();
  });

  it("lets running handlers finish on a graceful stop and records their outcomes", async () => {
    const release = gate();
    const job = defineJob({ name: "finishing", handler: async () => release.promise.then(() => "ok") });
    harness = await createTestHarness({ jobs: [job] });
    const receipts = await Promise.all([1, 2, 3].map(() => harness!.client.enqueue(job, undefined)));
    await harness.advance(0);
    const stopping = harness.worker.stop({ timeoutMs: 10_000 });
    await harness.settle();
    expect(harness.worker.health().status).toBe("stopping");
    release.open();
    await harness.settle();
    await stopping;
    for (const { id } of receipts) {
      expect((await harness.job(id)).state).toBe("succeeded");
      expect(await harness.store.getJobOutput(id)).toBe('"ok"');
    }
    expect(harness.worker.health().status).toBe("stopped");
    harness = undefined;
  });

  it("aborts handlers still running at the stop deadline and releases their jobs without counting the attempt", async () => {
    let reason: unknown;
    const job = defineJob({
      name: "stuck",
      handler: (_: void, ctx) =>
        new Promise((_, reject) => ctx.signal.addEventListener("abort", () => reject((reason = ctx.signal.reason)))),
    });
    const { h } = await runOnce(job, 0);
    await h.stop({ timeoutMs: 5_000 });
    harness = undefined;
    expect((reason as JobAbortedError).reason).toBe("stopping");
  });

  it("releases at the deadline: the job is scheduled again at once, attempt not counted", async () => {
    const job = defineJob({ name: "stuck2", handler: () => new Promise<void>(() => {}) });
    const h = await createTestHarness({ jobs: [job] });
    const { id } = await h.client.enqueue(job, undefined);
    await h.advance(0);
    await h.stop({ timeoutMs: 2_000 });
    const record = await h.job(id);
    expect(record).toMatchObject({ state: "scheduled", attempt: 1, releases: 1, dueAt: h.now() });
  });

  it("delivers a cancel to a running job through its AbortSignal and ends it cancelled", async () => {
    let sawAbort = false;
    const job = defineJob({
      name: "cancellable",
      handler: (_: void, ctx) =>
        new Promise<void>((_, reject) =>
          ctx.signal.addEventListener("abort", () => {
            sawAbort = true;
            reject(ctx.signal.reason);
          }),
        ),
    });
    const { h, id } = await runOnce(job, 0, { leaseMs: 3_000 });
    expect(await h.client.cancel(id, { actor: "alice" })).toEqual({ status: "cancelRequested" });
    await h.advance(1_000); // next heartbeat carries the request
    expect(sawAbort).toBe(true);
    const record = await h.job(id);
    expect(record.state).toBe("cancelled");
    expect(record.terminalCause).toContain("alice");
  });

  it("cancels a child whose parent fails, and runs its on-any-terminal sibling", async () => {
    const ran: string[] = [];
    const parent = doomedJob("parent", "parent broke");
    const child = defineJob({ name: "child", handler: (label: string) => void ran.push(label) });
    harness = await createTestHarness({ jobs: [parent, child] });
    const p = await harness.client.enqueue(parent, undefined);
    const strict = await harness.client.enqueue(child, "strict", { parents: [p] });
    const lenient = await harness.client.enqueue(child, "lenient", { parents: [p], dependencyMode: "onAnyTerminal" });
    await harness.advance(0);
    expect((await harness.job(p.id)).state).toBe("deadLettered");
    expect((await harness.job(strict.id)).state).toBe("cancelled");
    expect((await harness.job(lenient.id)).state).toBe("succeeded");
    expect(ran).toEqual(["lenient"]);
  });

  it("retries three times then dead-letters, on the retry policy's schedule", async () => {
    const attempts: number[] = [];
    const times: number[] = [];
    const job = defineJob({
      name: "flaky",
      retry: { maxAttempts: 3, delaysMs: [10_000, 20_000] },
      handler: (_: void, ctx) => {
        attempts.push(ctx.attempt);
        times.push(harness!.now());
        throw new Error(`attempt ${ctx.attempt} failed`);
      },
    });
    harness = await createTestHarness({ jobs: [job] });
    const start = harness.now();
    const { id } = await harness.client.enqueue(job, undefined);
    await harness.advance(60_000);
    expect(attempts).toEqual([1, 2, 3]);
    expect(times.map((t) => t - start)).toEqual([0, 10_000, 30_000]);
    const record = await harness.job(id);
    expect(record.state).toBe("deadLettered");
    const failures = (await harness.history(id)).filter((t) => t.failureDetail !== null);
    expect(failures.map((t) => t.failureDetail?.split("\n")[0])).toEqual([
      "Error: attempt 1 failed",
      "Error: attempt 2 failed",
      "Error: attempt 3 failed",
    ]);
  });

  it("dead-letters at once on a PermanentJobError", async () => {
    const job = defineJob({
      name: "hopeless",
      handler: () => {
        throw new PermanentJobError("no such account");
      },
    });
    const { h, id } = await runOnce(job, 0);
    expect(await h.job(id)).toMatchObject({ state: "deadLettered", attempt: 1 });
  });

  it("runs a nightly schedule 30 times in a 30-day month, each at its tick", async () => {
    const runs: number[] = [];
    const nightly = defineJob({ name: "nightly", handler: (_: { report: string }, ctx) => void runs.push(ctx.dueAt) });
    harness = await createTestHarness({ jobs: [nightly], start: Date.UTC(2026, 3, 1) }); // April 2026: 30 days
    await harness.client.upsertSchedule({ id: "nightly", cron: "0 3 * * *", timeZone: "Europe/Berlin", job: nightly, payload: { report: "daily" } });
    await harness.advance(30 * 86_400_000);
    expect(runs).toHaveLength(30);
    // 03:00 in Berlin is 01:00Z in summer time.
    expect(new Date(runs[0]!).toISOString()).toBe("2026-04-01T01:00:00.000Z");
    expect(new Date(runs[29]!).toISOString()).toBe("2026-04-30T01:00:00.000Z");
  });

  it("quarantines jobs with unknown names or invalid payloads and never runs them", async () => {
    let ran = 0;
    const typed = defineJob({ name: "typed", schema: z.object({ n: z.number() }), handler: () => void ran++ });
    harness = await createTestHarness({ jobs: [typed] });
    await harness.store.enqueue({
      jobs: [
        { id: "ghost", jobName: "nobody.handles.this", queue: "default", payload: "{}", dueAt: harness.now() },
        { id: "bad", jobName: "typed", queue: "default", payload: '{"n":"not a number"}', dueAt: harness.now() },
        { id: "garbled", jobName: "typed", queue: "default", payload: "{not json", dueAt: harness.now() },
      ],
      now: harness.now(),
    });
    await harness.advance(0);
    for (const id of ["ghost", "bad", "garbled"]) expect((await harness.job(id)).state).toBe("quarantined");
    expect((await harness.job("ghost")).terminalCause).toContain("no handler");
    expect(ran).toBe(0);
  });

  it("passes validated payloads, stores outputs and lets children read their parents' typed output", async () => {
    const fetchUser = defineJob({
      name: "user.fetch",
      schema: z.object({ id: z.string() }),
      handler: ({ id }) => ({ id, email: `${id}@example.com` }),
    });
    let seen: { id: string; email: string } | null = null;
    const sendMail = defineJob({
      name: "user.mail",
      handler: async (_: void, ctx) => {
        seen = await ctx.parentOutput(fetchUser);
        ctx.addTags("mailed", "channel=email");
      },
    });
    harness = await createTestHarness({ jobs: [fetchUser, sendMail] });
    const parent = await harness.client.enqueue(fetchUser, { id: "u7" });
    const child = await harness.client.enqueue(sendMail, undefined, { parents: [parent] });
    await harness.advance(0);
    expect(seen).toEqual({ id: "u7", email: "u7@example.com" });
    expect((await harness.job(child.id)).tags).toEqual([
      { key: "", value: "mailed" },
      { key: "channel", value: "email" },
    ]);
  });

  it("tells observers about dead-lettered jobs, at least once", async () => {
    const seen: string[] = [];
    const job = doomedJob("doomed", "nope");
    const { h, id } = await runOnce(job, 2_000, { observers: [{ id: "pager", states: ["deadLettered"], handle: (d) => void seen.push(d.jobId) }] });
    expect(seen).toEqual([id]);
    expect((await h.store.getObserver("pager"))?.pending).toBe(0);
  });

  it("marks a pump degraded on transient store faults and recovers; halts it on other faults", async () => {
    const events: WorkerEvent[] = [];
    const job = defineJob({ name: "steady", handler: () => {} });
    harness = await createTestHarness({ jobs: [job], worker: { onEvent: (e) => events.push(e) } });
    const store = harness.store as JobStore;
    const realClaim = store.claim.bind(store);
    let failures = 2;
    (store as { claim: JobStore["claim"] }).claim = async (request) => {
      if (failures-- > 0) throw new TransientStoreError("database is busy");
      return realClaim(request);
    };
    const { id } = await harness.client.enqueue(job, undefined);
    await harness.advance(0);
    expect(harness.worker.health().status).toBe("degraded");
    await harness.advance(5_000);
    expect((await harness.job(id)).state).toBe("succeeded");
    expect(harness.worker.health().status).toBe("running");
    expect(events.filter((e) => e.type === "storeFault").length).toBeGreaterThanOrEqual(2);

    (store as { claim: JobStore["claim"] }).claim = async () => {
      throw new Error("relation belay_jobs does not exist");
    };
    await harness.client.enqueue(job, undefined);
    await harness.advance(2_000);
    const health = harness.worker.health();
    expect(health.status).toBe("halted");
    expect(health.ready).toBe(false);
    expect(health.groups[0]!.pumps[0]!.halted).toContain("does not exist");
  });
});
