import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { isTerminalState } from "@belay/contract";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SqliteStore } from "../src/index.js";
import { bundleFixture } from "./support/bundle.js";
import { acknowledgedBeforeKill } from "./support/killed-child.js";

// Durable before acknowledged: a process enqueueing and processing in a loop is killed with
// SIGKILL; every enqueue it acknowledged is in the file, and a new worker finishes every job.

const dir = mkdtempSync(join(tmpdir(), "belay-sqlite-crash-"));
let script: string;

beforeAll(async () => {
  script = await bundleFixture("crash-worker");
}, 60_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("sqlite: a process killed mid-load", () => {
  it("keeps every acknowledged enqueue, and a new worker drains every job to a terminal state", async () => {
    const path = join(dir, "crash.db");
    const acknowledged = await acknowledgedBeforeKill(script, [path], 3_000);

    const check = new Database(path, { readonly: true });
    expect(check.pragma("integrity_check", { simple: true })).toBe("ok");
    check.close();

    const store = new SqliteStore({ path });
    await store.migrate();
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
