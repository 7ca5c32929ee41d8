import { type ChildProcess, fork } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { NewJob } from "@belay/contract";
import { describe, expect, it } from "vitest";
import { testDir } from "../../../tests/support/fixtures.mjs";
import { SCHEMA_VERSION, SqliteStore } from "../src/index.js";
import type { Execution } from "./fixtures/drain-worker.js";
import { fixtureScript } from "./support/bundle.js";

// Four OS processes share one file and drain 10,000 jobs, each with several in-process slots.
// The children are TypeScript bundled by tsup (test/support/bundle.ts) and run by plain `node`.

const PROCESSES = 4;
const LIMIT = 3;
const dir = testDir("belay-sqlite-multi-");
const path = join(dir, "shared.db");
const fixture = fixtureScript("drain-worker");

/** 10,000 jobs: 1,000 on the limited queue, 100 flaky (first attempt abandoned), 50 long with heartbeats. */
function workload(): NewJob[] {
  return Array.from({ length: 10_000 }, (_, i) => {
    const id = `j-${String(i).padStart(5, "0")}`;
    if (i % 10 === 0) return { id, jobName: "limited.job", queue: "limited", payload: '{"work":2}', dueAt: 0 };
    if (i % 100 === 1) return { id, jobName: "flaky.job", queue: "flaky", payload: '{"work":0}', dueAt: 0 };
    const payload = i % 200 === 7 ? '{"work":0,"beat":true}' : `{"work":${i % 3 === 0 ? 1 : 0}}`;
    return { id, jobName: "plain.job", queue: "default", payload, dueAt: 0 };
  });
}

function exited(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => child.once("exit", (code) => resolve(code)));
}

/** The most intervals open at once (an interval ending exactly when another starts does not overlap it). */
function maxOverlap(intervals: readonly { start: number; end: number }[]): number {
  const events = intervals.flatMap((i) => [
    { at: i.start, delta: 1 },
    { at: i.end, delta: -1 },
  ]);
  events.sort((a, b) => a.at - b.at || a.delta - b.delta);
  let open = 0;
  let max = 0;
  for (const event of events) max = Math.max(max, (open += event.delta));
  return max;
}

describe("sqlite: several processes on one file", () => {
  it("4 processes drain 10,000 jobs: each succeeds exactly once, no lease is overlapped, the limit of 3 holds", async () => {
    const logs = Array.from({ length: PROCESSES }, (_, i) => join(dir, `worker-${i}.json`));
    const children = logs.map((log, i) =>
      fork(fixture.script, [path, String(i), "10000", log], { execArgv: [], stdio: ["ignore", "inherit", "inherit", "ipc"] }),
    );
    const exits = children.map(exited);
    try {
      // All four race to create the schema: exactly one applies the migration.
      const migrations = await Promise.all(
        children.map((child) => new Promise<{ fromVersion: number; toVersion: number }>((resolve) => child.once("message", resolve))),
      );
      expect(migrations.filter((m) => m.fromVersion === 0)).toHaveLength(1);
      expect(migrations.every((m) => m.toVersion === SCHEMA_VERSION)).toBe(true);

      const store = new SqliteStore({ path });
      await store.setConcurrencyLimit({ queue: "limited", limit: LIMIT, actor: "test", now: Date.now() });
      const jobs = workload().map((job) => ({ ...job, dueAt: Date.now() }));
      for (let i = 0; i < jobs.length; i += 1_000) {
        const results = await store.enqueue({ jobs: jobs.slice(i, i + 1_000), now: Date.now() });
        expect(results.every((r) => r.status === "created")).toBe(true);
      }
      for (const child of children) child.send("go");
      expect(await Promise.all(exits)).toEqual([0, 0, 0, 0]);

      const executions = logs.flatMap((log) => JSON.parse(readFileSync(log, "utf8")) as Execution[]);
      // In the store: every job succeeded, and its attempt counts every claim any process logged.
      expect(await store.countJobs()).toEqual([
        { queue: "default", state: "succeeded", count: 8_900 },
        { queue: "flaky", state: "succeeded", count: 100 },
        { queue: "limited", state: "succeeded", count: 1_000 },
      ]);
      const byJob = new Map<string, Execution[]>();
      for (const execution of executions) byJob.set(execution.job, [...(byJob.get(execution.job) ?? []), execution]);
      expect(byJob.size).toBe(10_000);
      let rerun = 0;
      for (const [jobId, runs] of byJob) {
        expect(runs.filter((r) => r.outcome === "applied"), jobId).toHaveLength(1);
        expect((await store.getJob(jobId))!.attempt, jobId).toBe(runs.length);
        // A new claim only ever starts after the previous lease (as last renewed) was dead.
        runs.sort((a, b) => a.attempt - b.attempt);
        for (let k = 1; k < runs.length; k++) {
          expect(runs[k]!.claimNow, `${jobId} attempt ${runs[k]!.attempt}`).toBeGreaterThanOrEqual(runs[k - 1]!.leaseExpiresAt);
        }
        rerun += runs.length - 1;
      }
      // Every flaky job's abandoned first attempt was fenced out and its job run again.
      const flaky = executions.filter((e) => e.queue === "flaky");
      expect(flaky.filter((e) => e.attempt === 1).every((e) => e.outcome === "stale")).toBe(true);
      expect(rerun).toBeGreaterThanOrEqual(100);
      // The limit held across processes, and was actually reached.
      const limited = maxOverlap(executions.filter((e) => e.queue === "limited"));
      expect(limited).toBeLessThanOrEqual(LIMIT);
      expect(limited).toBeGreaterThanOrEqual(2);
      // Every process did a share of the work.
      for (let i = 0; i < PROCESSES; i++) {
        expect(executions.filter((e) => e.worker.startsWith(`p${i}-`) && e.outcome === "applied").length, `process ${i}`).toBeGreaterThan(0);
      }
      console.log(
        `drained 10,000 jobs across ${PROCESSES} processes: ${executions.length} executions, ${rerun} re-runs, ` +
          `at most ${limited} limited jobs at once`,
      );
      await store.close();
    } finally {
      for (const child of children) if (child.exitCode === null) child.kill("SIGKILL");
    }
  }, 240_000);
});
