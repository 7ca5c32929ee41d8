import { describe, expect, it } from "vitest";
import { PostgresStore } from "../src/index.js";
import { MIGRATIONS, SCHEMA_VERSION } from "../src/migrations/index.js";
import { migrateSchema } from "../src/migrate.js";
import { Executor } from "../src/session.js";
import { pgTarget, testDatabase } from "./pg-target.js";

// Upgrades: a database as an older release left it — created by its migrations only, holding
// rows that release wrote — migrates to this version and keeps working, its old rows read as
// what they are (no retry policy of their own, transitions from before causes were recorded).

const target = await pgTarget("migrations.test.ts");
const url = target.url;
const T = 1_800_000_000_000;

describe.skipIf(url === undefined)(`postgres migrations (${target.reason})`, () => {
  const { pool, schema: newSchema } = testDatabase(target);

  it("a version-1 database with jobs, transitions and a schedule migrates to 2 and keeps working", async () => {
    const schema = newSchema("upgrade");
    const S = `"${schema}"`;
    expect(await migrateSchema(new Executor(pool, () => null), S, schema, 1)).toEqual({ fromVersion: 0, toVersion: 1 });
    // What version 1 wrote: a due job, a job leased by w-old, their transitions, a schedule.
    await pool.query(`
      INSERT INTO ${S}.queues (queue) VALUES ('default');
      INSERT INTO ${S}.jobs (id, job_name, queue, state, due_at, attempt, lease_owner, lease_expires_at, enqueued_at, transition_count, payload)
      VALUES ('old-due', 'test.job', 'default', 0, ${T}, 0, NULL, NULL, ${T}, 1, '{}'),
             ('old-leased', 'test.job', 'default', 2, ${T}, 1, 'w-old', ${T + 1_000}, ${T}, 2, '{}');
      INSERT INTO ${S}.transitions (xid, job_seq, ordinal, at, state, attempt)
      SELECT pg_current_xact_id(), j.seq, o.ordinal, ${T}, o.state, o.attempt
      FROM ${S}.jobs j JOIN (VALUES ('old-due', 1, 0, 0), ('old-leased', 1, 0, 0), ('old-leased', 2, 2, 1)) AS o(id, ordinal, state, attempt) ON o.id = j.id;
      INSERT INTO ${S}.schedules (id, cron, time_zone, job_name, queue, payload, tags, catch_up, no_overlap, cursor, created_at, updated_at)
      VALUES ('old-schedule', '* * * * *', 'UTC', 'test.job', 'default', '{}', '[]', 'skip', false, ${T}, ${T}, ${T});
    `);
    const store = new PostgresStore({ pool, schema, hints: false });
    try {
      expect(await store.getJob("old-due").catch((error: { code?: string }) => error.code)).toBe("BELAY_SCHEMA_NOT_MIGRATED");
      const fresh = new PostgresStore({ pool, schema, hints: false });
      expect(await fresh.migrate()).toEqual({ fromVersion: 1, toVersion: SCHEMA_VERSION });
      await fresh.close();
      const { rows: versions } = await pool.query(`SELECT version, requires FROM ${S}.schema_migrations ORDER BY version`);
      expect(versions, "additive: requires stays 1").toEqual(MIGRATIONS.map((m) => ({ version: m.version, requires: 1 })));
      const { rows: indexes } = await pool.query("SELECT indexdef FROM pg_indexes WHERE schemaname = $1", [schema]);
      expect(indexes.filter((i) => /retry|cause|worker_id/.test(i.indexdef as string)), "the new columns are in no index").toEqual([]);
      const { rows: options } = await pool.query("SELECT reloptions FROM pg_class WHERE oid = $1::regclass", [`${S}.jobs`]);
      expect(options[0]?.reloptions, "migration 5 leaves room on each page for a job's updates").toEqual(["fillfactor=50"]);

      const upgraded = new PostgresStore({ pool, schema, hints: false });
      expect(await upgraded.getJob("old-due")).toMatchObject({ state: "scheduled", retry: null });
      expect((await upgraded.getSchedule("old-schedule"))?.retry).toBeNull();
      expect(await upgraded.getJobHistory("old-leased")).toMatchObject([
        { state: "scheduled", cause: null, workerId: null, attempt: 0 },
        { state: "leased", cause: null, workerId: null, attempt: 1 },
      ]);

      // The old lease lapses under the sweeper's policy (the job has none of its own), naming its owner.
      const { expired } = await upgraded.expireLeases({ now: T + 1_000, max: 10, retry: { maxAttempts: 1, delaysMs: [0] } });
      expect(expired).toEqual([{ jobId: "old-leased", state: "deadLettered" }]);
      // The old due job runs as any other; its new transitions carry their causes.
      const [claimed] = (await upgraded.claim({ workerId: "w-new", queues: ["default"], max: 5, leaseMs: 60_000, now: T + 1_000 })).jobs;
      expect(claimed).toMatchObject({ id: "old-due", retry: null, attempt: 1 });
      expect(
        await upgraded.reportOutcomes({ reports: [{ jobId: "old-due", workerId: "w-new", attempt: 1, outcome: { type: "succeeded" } }], now: T + 2_000 }),
      ).toEqual([{ jobId: "old-due", attempt: 1, status: "applied", state: "succeeded" }]);
      const story = async (id: string) => (await upgraded.getJobHistory(id)).map((t) => [t.state, t.cause, t.workerId, t.attempt]);
      expect(await story("old-leased")).toEqual([
        ["scheduled", null, null, 0],
        ["leased", null, null, 1],
        ["deadLettered", "leaseExpired", "w-old", 1],
      ]);
      expect(await story("old-due")).toEqual([
        ["scheduled", null, null, 0],
        ["leased", "claimed", "w-new", 1],
        ["succeeded", "succeeded", "w-new", 1],
      ]);

      // New jobs and schedules store their retry policies beside the old rows.
      const own = { maxAttempts: 3, delaysMs: [10, 20] };
      await upgraded.enqueue({ jobs: [{ id: "new", jobName: "test.job", queue: "default", payload: "{}", dueAt: T, retry: own }], now: T });
      expect((await upgraded.listJobs({ ids: ["new", "old-due"] })).jobs.map((j) => [j.id, j.retry])).toEqual([
        ["old-due", null],
        ["new", own],
      ]);
      await upgraded.upsertSchedule({
        schedule: { id: "old-schedule", cron: "* * * * *", timeZone: "UTC", jobName: "test.job", queue: "default", payload: "{}", catchUp: "skip", noOverlap: false, retry: own },
        now: T,
      });
      expect((await upgraded.getSchedule("old-schedule"))?.retry).toEqual(own);
      await upgraded.close();
    } finally {
      await store.close();
    }
  });
});
