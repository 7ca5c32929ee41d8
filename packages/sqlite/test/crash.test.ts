import { isTerminalState } from "@belay/contract";
import { describe, expect, it } from "vitest";
import { SqliteStore } from "../src/index.js";
import { killedMidLoad } from "./support/killed-child.js";

// Durable before acknowledged: a process enqueueing and processing in a loop is killed with
// SIGKILL; every enqueue it acknowledged is in the file, and a new worker finishes every job.

const killed = killedMidLoad("crash-worker", "belay-sqlite-crash-", (path) => new SqliteStore({ path }));

describe("sqlite: a process killed mid-load", () => {
  it("keeps every acknowledged enqueue, and a new worker drains every job to a terminal state", async () => {
    const { acknowledged, store } = await killed();
    for (const id of acknowledged) expect(await store.getJob(id), id).not.toBeNull();

    // The dead process's leases run for another minute: sweep and claim as of after they lapse.
    const later = Date.now() + 10 * 60_000;
    const retry = { maxAttempts: 5, delaysMs: [0] };
    for (let rounds = 0; ; rounds++) {
      expect(rounds, "the drain ends").toBeLessThan(10_000);
      const { expired } = await store.expireLeases({ now: later, max: 32, retry });
      const { jobs } = await store.claim({ workerId: "survivor", queues: ["default"], max: 32, leaseMs: 60_000, now: later });
      if (jobs.length === 0 && expired.length === 0) break;
      const results = await store.reportOutcomes({
        reports: jobs.map((job) => ({ jobId: job.id, workerId: "survivor", attempt: job.attempt, outcome: { type: "succeeded" as const } })),
        now: later,
      });
      expect(results.every((r) => r.status === "applied")).toBe(true);
    }
    const counts = await store.countJobs();
    const total = counts.reduce((n, c) => n + c.count, 0);
    expect(total).toBeGreaterThanOrEqual(acknowledged.length);
    expect(counts.every((c) => isTerminalState(c.state)), JSON.stringify(counts)).toBe(true);
    expect(counts).toEqual([{ queue: "default", state: "succeeded", count: total }]);
    console.log(`killed after ${acknowledged.length} acknowledged enqueues; ${total} jobs in the file, all succeeded after the drain`);
    await store.close();
  }, 120_000);
});
