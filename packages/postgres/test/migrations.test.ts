import { JOB_STATE_CODES as ST, TRANSITION_CAUSE_CODES as CA } from "@belay/contract";
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
      expect(versions, "each migration records what it requires").toEqual(MIGRATIONS.map((m) => ({ version: m.version, requires: m.requires })));
      expect(versions.at(-1), "migration 6 drops the transitions every store of version 5 writes").toEqual({ version: 6, requires: 6 });
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
  it("a version-5 database's transitions move into the rows and the feed: histories, observer cursors and the purge keep working", async () => {
    const schema = newSchema("feed_upgrade");
    const S = `"${schema}"`;
    expect(await migrateSchema(new Executor(pool, () => null), S, schema, 5)).toEqual({ fromVersion: 0, toVersion: 5 });
    // What version 5 wrote: job a failed once (with detail), ran again and succeeded; job b waits.
    // Each transition in a transaction of its own, as version 5's statements wrote them.
    await pool.query(`
      INSERT INTO ${S}.queues (queue) VALUES ('default');
      INSERT INTO ${S}.jobs (id, job_name, queue, state, due_at, attempt, enqueued_at, terminal_at, transition_count, payload)
      VALUES ('a', 'test.job', 'default', ${ST.succeeded}, ${T}, 2, ${T}, ${T + 40}, 5, '{}'), ('b', 'test.job', 'default', 0, ${T + 3_600_000}, 0, ${T}, NULL, 1, '{}')`);
    const steps: [id: string, ordinal: number, state: number, attempt: number, cause: number, worker: string | null, detail: string | null][] = [
      ["a", 1, ST.scheduled, 0, CA.enqueued, null, null],
      ["b", 1, ST.scheduled, 0, CA.enqueued, null, null],
      ["a", 2, ST.leased, 1, CA.claimed, "w-old", null],
      ["a", 3, ST.scheduled, 1, CA.retryScheduled, "w-old", "boom\nat line 1"],
      ["a", 4, ST.leased, 2, CA.claimed, "w-old", null],
      ["a", 5, ST.succeeded, 2, CA.succeeded, "w-old", null],
    ];
    for (const [i, [id, ordinal, state, attempt, cause, worker, detail]] of steps.entries()) {
      await pool.query(
        `INSERT INTO ${S}.transitions (xid, job_seq, ordinal, at, state, attempt, cause, worker_id, failure_detail)
         SELECT pg_current_xact_id(), seq, $2, $3, $4, $5, $6, $7, $8 FROM ${S}.jobs WHERE id = $1`,
        [id, ordinal, T + 10 * i, state, attempt, cause, worker, detail],
      );
    }
    const { rows: log } = await pool.query(
      `SELECT t.xid::text AS xid, t.position::int AS position, j.id FROM ${S}.transitions t JOIN ${S}.jobs j ON j.seq = t.job_seq ORDER BY t.xid, t.position`,
    );
    // An observer of every state whose cursor stands after the first three transitions.
    await pool.query(
      `INSERT INTO ${S}.observers (id, states, cursor_xid, cursor_position) VALUES ('o', '{0,1,2,3,4,5,6,7}', $1::xid8, $2)`,
      [log[2].xid, log[2].position],
    );

    const store = new PostgresStore({ pool, schema, hints: false });
    try {
      expect(await store.migrate()).toEqual({ fromVersion: 5, toVersion: SCHEMA_VERSION });
      const { rows: tables } = await pool.query("SELECT table_name FROM information_schema.tables WHERE table_schema = $1 AND table_name = 'transitions'", [schema]);
      expect(tables, "the transitions table is gone").toEqual([]);

      // Each history reads back as it was written, positions included.
      const history = await store.getJobHistory("a");
      expect(history.map((t) => [t.ordinal, t.position, t.at, t.state, t.attempt, t.cause, t.workerId, t.failureDetail])).toEqual([
        [1, log[0].position, T, "scheduled", 0, "enqueued", null, null],
        [2, log[2].position, T + 20, "leased", 1, "claimed", "w-old", null],
        [3, log[3].position, T + 30, "scheduled", 1, "retryScheduled", "w-old", "boom\nat line 1"],
        [4, log[4].position, T + 40, "leased", 2, "claimed", "w-old", null],
        [5, log[5].position, T + 50, "succeeded", 2, "succeeded", "w-old", null],
      ]);

      // The observer goes on from its cursor: the old transitions after it, then a new one after them.
      await store.enqueue({ jobs: [{ id: "c", jobName: "test.job", queue: "default", payload: "{}", dueAt: T + 3_600_000 }], now: T + 100 });
      const claimed = await store.claimObserverDeliveries({ observerId: "o", workerId: "w", now: T + 200, leaseMs: 60_000, max: 10 });
      expect(claimed.status).toBe("acquired");
      const deliveries = claimed.status === "acquired" ? claimed.deliveries : [];
      expect(deliveries.map((d) => [d.jobId, d.state, d.failureDetail])).toEqual([
        ["a", "scheduled", "boom\nat line 1"],
        ["a", "leased", null],
        ["a", "succeeded", null],
        ["c", "scheduled", null],
      ]);
      expect(deliveries.slice(0, 3).map((d) => d.position)).toEqual([log[3].position, log[4].position, log[5].position]);
      expect(deliveries[3]!.position, "new positions continue after the old ones").toBeGreaterThan(log[5].position);
      const report = await store.reportObserverDeliveries({
        observerId: "o", workerId: "w", now: T + 300, outcomes: deliveries.map((d) => ({ position: d.position, outcome: "delivered" as const })),
      });
      expect(report).toEqual({ status: "applied", cursor: deliveries[3]!.position });

      // add_job writes the new way too.
      const { rows: added } = await pool.query(`SELECT ${S}.add_job('test.job', job_id => 'by-sql', run_at => now() + interval '1 hour') AS id`);
      expect(added[0].id).toBe("by-sql");
      expect((await store.getJobHistory("by-sql")).map((t) => [t.ordinal, t.state, t.cause])).toEqual([[1, "scheduled", "enqueued"]]);

      // Purging a takes its feed rows and failure detail with it; b's and c's stay.
      const feedOf = async (id: string) =>
        (await pool.query(`SELECT count(*)::int AS n FROM ${S}.feed f JOIN ${S}.jobs j ON j.seq = ANY(f.job_seqs) WHERE j.id = $1`, [id])).rows[0].n as number;
      const { rows: before } = await pool.query(`SELECT count(*)::int AS n FROM ${S}.feed`);
      expect(await feedOf("a")).toBe(5);
      expect(await store.purgeTerminal({ retentionClass: "succeededOrCancelled", before: T + 1_000, max: 10 })).toEqual({ purged: 1 });
      const { rows: after } = await pool.query(`SELECT count(*)::int AS n, (SELECT count(*)::int FROM ${S}.failure_details) AS details FROM ${S}.feed`);
      expect(after[0]).toEqual({ n: before[0].n - 5, details: 0 });
      expect(await feedOf("b")).toBe(1);
    } finally {
      await store.close();
    }
  });
});
