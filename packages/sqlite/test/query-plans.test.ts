import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SqliteStore } from "../src/index.js";
import { planOf, preparedBy, recordPreparedStatements } from "./support/plans.js";

// The time-ordered scans — claims, lease expiry, minting, retention — and every other statement
// of the hot operations must read an index: EXPLAIN QUERY PLAN shows no SCAN of a job table.
// The statements are the store's own: each operation runs on a fresh store whose prepared
// statements are recorded as the connection prepares them.

const T = Date.UTC(2026, 0, 1);
const MINUTE = 60_000;
const dir = mkdtempSync(join(tmpdir(), "belay-sqlite-plans-"));
const path = join(dir, "plans.db");
afterAll(() => rmSync(dir, { recursive: true, force: true }));

recordPreparedStatements();

/** The SQL a fresh store prepares while running `operation` (each statement is prepared once per connection). */
const statementsOf = (operation: (store: SqliteStore) => Promise<unknown>): Promise<string[]> =>
  preparedBy(() => new SqliteStore({ path }), operation, /^(BEGIN|COMMIT|ROLLBACK|SAVEPOINT|RELEASE)\b|sqlite_master/);

/** A SCAN of anything but a JSON list parameter (`json_each`) reads a whole table or index. */
const isFullScan = (detail: string) => /^SCAN /.test(detail) && !/json_each/.test(detail);

const plans = new Map<string, { sql: string; plan: string[] }[]>();

describe("sqlite: query plans", () => {
  beforeAll(async () => {
    // Enough rows in every state, analysed, so the planner chooses with real statistics.
    const seed = new SqliteStore({ path });
    await seed.migrate();
    await seed.upsertSchedule({
      schedule: { id: "tick", cron: "* * * * *", timeZone: "UTC", jobName: "tick", queue: "cron", payload: "{}", catchUp: "skip", noOverlap: false },
      now: T,
    });
    await seed.setConcurrencyLimit({ queue: "limited", limit: 5, actor: "test", now: T });
    await seed.enqueueWorkflow({ workflow: { id: "wf", name: "wf", jobs: [{ id: "wa", jobName: "w", queue: "q0", payload: "{}", dueAt: T }] }, now: T });
    for (let batch = 0; batch < 10; batch++) {
      const jobs = Array.from({ length: 500 }, (_, i) => ({
        id: `seed-${batch}-${i}`,
        jobName: "seed.job",
        queue: `q${i % 4}`,
        payload: "{}",
        dueAt: T + i * 1_000,
        tags: i % 7 === 0 ? [{ key: "tenant", value: `t${i % 3}` }] : [],
      }));
      await seed.enqueue({ jobs, now: T });
    }
    for (let round = 0; round < 20; round++) {
      const { jobs } = await seed.claim({ workerId: "w", queues: ["q0", "q1", "q2", "q3"], max: 32, leaseMs: MINUTE, now: T + 10 * MINUTE });
      await seed.reportOutcomes({
        reports: jobs.slice(0, 24).map((job, i) => ({
          jobId: job.id,
          workerId: "w",
          attempt: job.attempt,
          outcome: i % 3 === 0 ? { type: "failed" as const, retryAt: null } : { type: "succeeded" as const },
        })),
        now: T + 10 * MINUTE,
      });
    }
    await seed.close();
    const db = new Database(path);
    db.exec("ANALYZE");
    db.close();

    const operations: Record<string, (store: SqliteStore) => Promise<unknown>> = {
      enqueue: (s) =>
        s.enqueue({
          jobs: [
            { id: "p1", jobName: "x", queue: "q0", payload: "{}", dueAt: T, tags: [{ key: "", value: "urgent" }] },
            { id: "c1", jobName: "x", queue: "q0", payload: "{}", dueAt: T, parentIds: ["p1", "seed-0-1"] },
          ],
          now: T,
        }),
      claim: (s) => s.claim({ workerId: "w2", queues: ["limited", "q1", "q2"], max: 8, leaseMs: MINUTE, now: T + 20 * MINUTE }),
      reportOutcomes: async (s) => {
        const { jobs } = await s.claim({ workerId: "w3", queues: ["q0"], max: 2, leaseMs: MINUTE, now: T + 20 * MINUTE });
        await s.reportOutcomes({
          reports: jobs.map((job, i) => ({
            jobId: job.id,
            workerId: "w3",
            attempt: job.attempt,
            outcome: i === 0 ? { type: "succeeded" as const, output: "1" } : { type: "failed" as const, retryAt: null, failureDetail: "x" },
            addTags: [{ key: "result", value: "ok" }],
          })),
          now: T + 20 * MINUTE,
        });
      },
      heartbeat: (s) => s.heartbeat({ workerId: "w", leases: [{ jobId: "seed-0-2", attempt: 1 }], leaseMs: MINUTE, now: T + 10 * MINUTE }),
      release: (s) => s.release({ workerId: "w", leases: [{ jobId: "seed-0-3", attempt: 1 }], now: T + 10 * MINUTE }),
      expireLeases: async (s) => {
        const retry = { maxAttempts: 1, delaysMs: [0] };
        await s.expireLeases({ now: T + 30 * MINUTE, max: 4, queues: ["q1", "q2"], retry });
        await s.expireLeases({ now: T + 30 * MINUTE, max: 4, retry });
      },
      mintDue: (s) =>
        s.mintDue({ decisions: [{ scheduleId: "tick", expectedCursor: T, newCursor: T + 2 * MINUTE, mint: [T + MINUTE, T + 2 * MINUTE], skip: [] }], now: T }),
      triggerSchedule: (s) => s.triggerSchedule({ scheduleId: "tick", jobId: "manual", actor: "ops", now: T }),
      cancelJob: (s) => s.cancelJob({ jobId: "p1", actor: "ops", now: T + MINUTE }),
      requeueJob: (s) => s.requeueJob({ jobId: "seed-0-0", actor: "ops", now: T + MINUTE }),
      purgeTerminal: async (s) => {
        await s.purgeTerminal({ retentionClass: "succeededOrCancelled", before: T + 60 * MINUTE, max: 50 });
        await s.purgeTerminal({ retentionClass: "deadLetteredOrQuarantined", before: T + 60 * MINUTE, max: 50 });
      },
    };
    const db2 = new Database(path, { readonly: true });
    for (const [name, operation] of Object.entries(operations)) {
      const statements = await statementsOf(operation);
      plans.set(name, statements.map((sql) => ({ sql, plan: planOf(db2, sql) })));
    }
    db2.close();
  }, 60_000);

  it("no statement of a hot operation scans a table", () => {
    expect([...plans.keys()].sort()).toEqual(
      ["cancelJob", "claim", "enqueue", "expireLeases", "heartbeat", "mintDue", "purgeTerminal", "release", "reportOutcomes", "requeueJob", "triggerSchedule"].sort(),
    );
    for (const [operation, statements] of plans) {
      expect(statements.length, operation).toBeGreaterThan(0);
      for (const { sql, plan } of statements) {
        expect(plan.filter(isFullScan), `${operation}: ${sql.replace(/\s+/g, " ")}\n${plan.join("\n")}`).toEqual([]);
      }
    }
  });

  /** The plan of the one statement of `operation` whose SQL matches `pattern`. */
  function planMatching(operation: string, pattern: RegExp): string {
    const found = plans.get(operation)!.filter((s) => pattern.test(s.sql));
    expect(found, `${operation} ${pattern}`).toHaveLength(1);
    return found[0]!.plan.join(" | ");
  }

  it("claims read the partial index of due jobs per queue, in order, without sorting", () => {
    const claim = planMatching("claim", /^UPDATE\s+"belay_jobs"\s+SET state = 2/);
    expect(claim).toMatch(/SEARCH belay_jobs USING COVERING INDEX belay_jobs_due \(queue=\? AND due_at<\?\)/);
    expect(claim).not.toMatch(/TEMP B-TREE FOR ORDER BY/);
    expect(planMatching("claim", /min\(due_at\)/)).toMatch(/belay_jobs_due \(queue=\?\)/);
    expect(planMatching("claim", /count\(\*\) AS leased/)).toMatch(/belay_jobs_leased \(queue=\?\)/);
  });

  it("lease expiry reads the partial lease indexes by expiry, per queue and across queues", () => {
    const perQueue = planMatching("expireLeases", /queue = \? AND lease_expires_at <= \?/);
    expect(perQueue).toMatch(/belay_jobs_leased \(queue=\? AND lease_expires_at<\?\)/);
    expect(perQueue).not.toMatch(/TEMP B-TREE FOR ORDER BY/);
    const anywhere = planMatching("expireLeases", /state = 2 AND lease_expires_at <= \?/);
    expect(anywhere).toMatch(/belay_jobs_lease_expiry \(lease_expires_at<\?\)/);
    expect(anywhere).not.toMatch(/TEMP B-TREE FOR ORDER BY/);
  });

  it("retention reads each class's partial index by terminal time", () => {
    const done = planMatching("purgeTerminal", /state IN \(3, 4\)/);
    expect(done).toMatch(/belay_jobs_done \(terminal_at/);
    expect(done).not.toMatch(/TEMP B-TREE FOR ORDER BY/);
    const failed = planMatching("purgeTerminal", /state IN \(5, 6\)/);
    expect(failed).toMatch(/belay_jobs_failed \(terminal_at/);
    expect(failed).not.toMatch(/TEMP B-TREE FOR ORDER BY/);
  });

  it("listings and facets by ids start from the unique index on id, whatever else the filter names", async () => {
    const ids = ["seed-0-1", "seed-3-7", "wa"];
    const statements = await statementsOf(async (s) => {
      await s.listJobs({ ids, scheduleId: "tick", workflowId: "wf", states: ["scheduled"], queues: ["q0"], order: "newestFirst" });
      await s.facetTags({ key: "tenant", scope: { ids, queues: ["q0"] } });
    });
    const db = new Database(path, { readonly: true });
    try {
      expect(statements).toHaveLength(2);
      for (const sql of statements) {
        const plan = planOf(db, sql);
        expect(plan.filter(isFullScan), sql).toEqual([]);
        expect(plan.join(" | "), sql).toMatch(/^SEARCH j USING (COVERING )?INDEX sqlite_autoindex_belay_jobs_1 \(id=\?\)/);
      }
    } finally {
      db.close();
    }
  });

  it("minting reads its schedule by key, probes its live instances by index, and compares-and-sets the cursor by key", () => {
    const read = planMatching("mintDue", /^SELECT s\.job_name, s\.queue, s\.payload, s\.tags, s\.cursor/);
    expect(read).toMatch(/SEARCH .*schedules.* \(id=\?\)/);
    expect(read).toMatch(/SEARCH j USING (COVERING )?INDEX \S+ \(schedule_id=\? AND state<\?\)/);
    expect(planMatching("mintDue", /SET cursor = \?, skipped_ticks = \?/)).toMatch(/SEARCH .*schedules.* \(id=\?\)/);
  });
});
