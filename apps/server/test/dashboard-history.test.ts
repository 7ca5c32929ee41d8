import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ADMIN, type Harness, harness } from "./helpers.js";

// The job page's timeline says why each transition happened and which worker wrote it (from the
// transitions the store records), not a guess from the sequence of states.

let h: Harness;
beforeEach(async () => {
  h = await harness();
});
afterEach(() => h.close());

describe("dashboard: the job timeline", () => {
  it("names each transition's cause and worker: claimed, retry scheduled, released, lease expired, succeeded", async () => {
    const { store } = h;
    const T0 = Date.UTC(2026, 0, 1);
    await store.enqueue({ jobs: [{ id: "j1", jobName: "email.send", queue: "mail", payload: "{}", dueAt: T0 }], now: T0 });
    const claim = async (workerId: string, now: number) =>
      (await store.claim({ workerId, queues: ["mail"], max: 1, leaseMs: 60_000, now })).jobs[0]!;
    const a = await claim("worker-a", T0);
    await store.reportOutcomes({ reports: [{ jobId: "j1", workerId: "worker-a", attempt: a.attempt, outcome: { type: "failed", retryAt: T0 + 1 } }], now: T0 });
    const b = await claim("worker-b", T0 + 1);
    await store.release({ workerId: "worker-b", leases: [{ jobId: "j1", attempt: b.attempt }], now: T0 + 2 });
    await claim("worker-c", T0 + 2);
    await store.expireLeases({ now: T0 + 2 + 60_000, max: 10, retry: { maxAttempts: 10, delaysMs: [0] } });
    const d = await claim("worker-d", T0 + 70_000);
    await store.reportOutcomes({ reports: [{ jobId: "j1", workerId: "worker-d", attempt: d.attempt, outcome: { type: "succeeded" } }], now: T0 + 70_001 });

    const page = await (await h.request("GET", "/jobs/j1", { token: ADMIN })).text();
    const timeline = page.slice(page.indexOf('<ol class="timeline">'), page.indexOf("</ol>", page.indexOf('<ol class="timeline">')));
    // Newest first.
    const entries = [...timeline.matchAll(/<div class="what">([^<]+)<\/div><div class="muted">([^<]*)<\/div>/g)].map((m) => `${m[1]} | ${m[2]}`);
    expect(entries.map((e) => e.replace(/ · \+[^|]*$/, ""))).toEqual([
      expect.stringMatching(/^Succeeded \| attempt 4 · by worker-d/),
      expect.stringMatching(/^Claimed \| → Executing · attempt 4 · by worker-d/),
      expect.stringMatching(/^Lease expired \| → Scheduled · attempt 3 · lease of worker-c/),
      expect.stringMatching(/^Claimed \| → Executing · attempt 3 · by worker-c/),
      expect.stringMatching(/^Released by a stopping worker \| → Scheduled · attempt 2 · by worker-b/),
      expect.stringMatching(/^Claimed \| → Executing · attempt 2 · by worker-b/),
      expect.stringMatching(/^Retry scheduled \| → Scheduled · attempt 1 · by worker-a/),
      expect.stringMatching(/^Claimed \| → Executing · attempt 1 · by worker-a/),
      expect.stringMatching(/^Enqueued \| → Scheduled/),
    ]);
  });

  it("the API returns each transition's cause and worker", async () => {
    const T0 = Date.UTC(2026, 0, 1);
    await h.store.enqueue({ jobs: [{ id: "j2", jobName: "email.send", queue: "mail", payload: "{}", dueAt: T0 }], now: T0 });
    await h.store.claim({ workerId: "worker-a", queues: ["mail"], max: 1, leaseMs: 60_000, now: T0 });
    const res = await h.json("GET", "/api/v1/jobs/j2", { token: ADMIN });
    expect(res.status).toBe(200);
    expect(res.body.history.map((t: { cause: string; workerId: string | null }) => [t.cause, t.workerId])).toEqual([
      ["enqueued", null],
      ["claimed", "worker-a"],
    ]);
  });
});
