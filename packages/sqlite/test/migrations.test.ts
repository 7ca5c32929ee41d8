import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { JOB_STATE_CODES as S } from "@belay/contract";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { MIGRATIONS, SCHEMA_VERSION, SqliteStore } from "../src/index.js";

// A file created and used at schema version 1 — what a store of that version wrote, row for row —
// migrated to the current version: everything written before reads as "not recorded" (no retry
// policy, no transition cause or worker), and the store goes on working on it.

const dir = mkdtempSync(join(tmpdir(), "belay-sqlite-migrations-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const T = Date.UTC(2026, 0, 1);
const LEASE = 60_000;

/** A file at version 1 (migration 1 alone) with a scheduled job, a leased job and a schedule, as a version-1 store left them. */
function fileAtVersion1(path: string): void {
  const db = new Database(path);
  db.pragma("journal_mode = WAL");
  db.exec(MIGRATIONS[0]!.sql("belay_"));
  db.prepare(`INSERT INTO "belay_migrations" (version) VALUES (1)`).run();
  const insertJob = db.prepare(`INSERT INTO "belay_jobs" (id, job_name, queue, state, due_at, attempt, lease_owner,
    lease_expires_at, enqueued_at, transition_count) VALUES (?, 'test.job', 'default', ?, ?, ?, ?, ?, ?, ?) RETURNING seq`);
  const insertPayload = db.prepare(`INSERT INTO "belay_job_payloads" (job_seq, payload) VALUES (?, '{}')`);
  const insertTransition = db.prepare(`INSERT INTO "belay_transitions" (job_seq, ordinal, at, state, attempt, failure_detail)
    VALUES (?, ?, ?, ?, ?, NULL)`);
  const waiting = insertJob.get("old-waiting", S.scheduled, T, 0, null, null, T, 1) as { seq: number };
  insertPayload.run(waiting.seq);
  insertTransition.run(waiting.seq, 1, T, S.scheduled, 0);
  const leased = insertJob.get("old-leased", S.leased, T, 1, "w-old", T + LEASE, T, 2) as { seq: number };
  insertPayload.run(leased.seq);
  insertTransition.run(leased.seq, 1, T, S.scheduled, 0);
  insertTransition.run(leased.seq, 2, T, S.leased, 1);
  db.prepare(`INSERT INTO "belay_schedules" (id, cron, time_zone, job_name, queue, payload, tags, catch_up, no_overlap,
    cursor, skipped_ticks, created_at, updated_at) VALUES ('old-schedule', '* * * * *', 'UTC', 'test.job', 'default', '{}', '[]', 0, 0, ?, '[]', ?, ?)`)
    .run(T, T, T);
  db.close();
}

const story = async (store: SqliteStore, id: string) =>
  (await store.getJobHistory(id)).map((t) => [t.state, t.cause, t.workerId, t.attempt]);

describe("sqlite: migrations", () => {
  it("migration 2 is additive: it requires nothing newer than version 1", () => {
    expect(MIGRATIONS.slice(0, 2).map((m) => [m.version, m.requires])).toEqual([
      [1, 1],
      [2, 1],
    ]);
  });

  it("a file used at version 1 migrates to 2: old transitions read cause null, old jobs and schedules retry null, and it keeps working", async () => {
    const path = join(dir, "v1.db");
    fileAtVersion1(path);
    const store = new SqliteStore({ path });
    expect(await store.migrate()).toEqual({ fromVersion: 1, toVersion: SCHEMA_VERSION });
    expect(SCHEMA_VERSION).toBeGreaterThanOrEqual(2);

    expect(await story(store, "old-leased")).toEqual([
      ["scheduled", null, null, 0],
      ["leased", null, null, 1],
    ]);
    expect((await store.getJob("old-waiting"))?.retry).toBeNull();
    expect((await store.listJobs({ ids: ["old-waiting", "old-leased"] })).jobs.map((j) => [j.id, j.retry])).toEqual([
      ["old-waiting", null],
      ["old-leased", null],
    ]);
    expect((await store.getSchedule("old-schedule"))?.retry).toBeNull();

    // A lease taken before the migration expires under the sweeper's policy, naming its owner.
    const { expired } = await store.expireLeases({ now: T + LEASE, max: 10, retry: { maxAttempts: 1, delaysMs: [0] } });
    expect(expired).toEqual([{ jobId: "old-leased", state: "deadLettered" }]);
    expect((await story(store, "old-leased")).at(-1)).toEqual(["deadLettered", "leaseExpired", "w-old", 1]);

    const { jobs } = await store.claim({ workerId: "w-new", queues: ["default"], max: 5, leaseMs: LEASE, now: T + LEASE });
    expect(jobs.map((j) => [j.id, j.retry])).toEqual([["old-waiting", null]]);
    const [outcome] = await store.reportOutcomes({
      reports: [{ jobId: "old-waiting", workerId: "w-new", attempt: 1, outcome: { type: "succeeded" } }],
      now: T + LEASE,
    });
    expect(outcome).toEqual({ jobId: "old-waiting", attempt: 1, status: "applied", state: "succeeded" });
    expect(await story(store, "old-waiting")).toEqual([
      ["scheduled", null, null, 0],
      ["leased", "claimed", "w-new", 1],
      ["succeeded", "succeeded", "w-new", 1],
    ]);

    const retry = { maxAttempts: 2, delaysMs: [1_000] };
    await store.enqueue({ jobs: [{ id: "new", jobName: "test.job", queue: "default", payload: "{}", dueAt: T, retry }], now: T });
    expect((await store.getJob("new"))?.retry).toEqual(retry);
    await store.mintDue({ decisions: [{ scheduleId: "old-schedule", expectedCursor: T, newCursor: T + 60_000, mint: [T + 60_000], skip: [] }], now: T });
    const minted = (await store.listJobs({ scheduleId: "old-schedule" })).jobs;
    expect(minted.map((j) => j.retry)).toEqual([null]);
    expect(await story(store, minted[0]!.id)).toEqual([["scheduled", "minted", null, 0]]);
    await store.close();
  });

  it("a store that checked version 1 before another process migrated keeps writing: its rows read as not recorded", async () => {
    const path = join(dir, "rolling.db");
    fileAtVersion1(path);
    const migrator = new SqliteStore({ path });
    await migrator.migrate();
    // A version-1 store's own statements, which name none of the new columns.
    const old = new Database(path);
    const seq = (old.prepare(`INSERT INTO "belay_jobs" (id, job_name, queue, state, due_at, enqueued_at, transition_count)
      VALUES ('by-old', 'test.job', 'default', 0, ?, ?, 1) RETURNING seq`).get(T, T) as { seq: number }).seq;
    old.prepare(`INSERT INTO "belay_job_payloads" (job_seq, payload) VALUES (?, '{}')`).run(seq);
    old.prepare(`INSERT INTO "belay_transitions" (job_seq, ordinal, at, state, attempt, failure_detail) VALUES (?, 1, ?, 0, 0, NULL)`).run(seq, T);
    old.close();
    expect((await migrator.getJob("by-old"))?.retry).toBeNull();
    expect(await story(migrator, "by-old")).toEqual([["scheduled", null, null, 0]]);
    await migrator.close();
  });
});
