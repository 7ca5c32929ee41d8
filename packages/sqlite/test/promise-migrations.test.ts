import { execFile } from "node:child_process";
import { promisify } from "node:util";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { MIGRATIONS, PROMISE_MIGRATIONS, PROMISE_SCHEMA_VERSION, SCHEMA_VERSION, SqlitePromiseStore, SqliteStore } from "../src/index.js";
import { fixtureScript } from "./support/bundle.js";
import { databaseFiles } from "./support/files.js";

// The promise surface has its own numbered migrations and version table under the job schema's
// prefix: either class's migrate() creates only its own tables, both live in one file and run side
// by side, and each migrate() is idempotent and safe to run concurrently (in one process or many).

const { fresh } = databaseFiles("belay-sqlite-promise-migrations-", "m");
const T = Date.UTC(2026, 0, 1);
const target = { "resonate:target": "poll://any@workers" };

/** A fresh file with both surfaces migrated, jobs first. */
async function bothMigrated(): Promise<{ path: string; jobs: SqliteStore; promises: SqlitePromiseStore }> {
  const path = fresh();
  const jobs = new SqliteStore({ path });
  const promises = new SqlitePromiseStore({ path });
  await jobs.migrate();
  await promises.migrate();
  return { path, jobs, promises };
}

/** Every table and index of the file, by name (SQLite's own excluded). */
function schemaOf(path: string): string[] {
  const db = new Database(path, { readonly: true });
  try {
    const names = db.prepare("SELECT type || ' ' || name AS name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY name").all() as { name: string }[];
    return names.map((row) => row.name);
  } finally {
    db.close();
  }
}

const PROMISE_TABLES = ["promise_migrations", "promises", "tasks", "callbacks", "listeners", "outbox", "outbox_revision", "promise_schedules"];
const isPromiseObject = (name: string) =>
  PROMISE_TABLES.some((table) => name === `table belay_${table}`) || /^index belay_(promises|tasks|callbacks|outbox|promise_schedules)_/.test(name);

describe("sqlite: the promise surface's migrations", () => {
  it("are numbered on their own, starting at 1", () => {
    expect(PROMISE_MIGRATIONS.map((m) => [m.version, m.requires])).toEqual([[1, 1]]);
    expect(PROMISE_SCHEMA_VERSION).toBe(1);
  });

  it("each class's migrate() creates only its own surface; both live in one file and run side by side", async () => {
    const path = fresh();
    const jobs = new SqliteStore({ path });
    expect(await jobs.migrate()).toEqual({ fromVersion: 0, toVersion: SCHEMA_VERSION });
    const jobSchema = schemaOf(path);
    expect(jobSchema.filter(isPromiseObject)).toEqual([]);

    const promises = new SqlitePromiseStore({ path });
    await expect(promises.handle({ kind: "promise.get", id: "p" }, T)).rejects.toMatchObject({ code: "BELAY_SCHEMA_NOT_MIGRATED" });
    expect(await promises.migrate()).toEqual({ fromVersion: 0, toVersion: PROMISE_SCHEMA_VERSION });
    const both = schemaOf(path);
    expect(both.filter((name) => !isPromiseObject(name))).toEqual(jobSchema);
    expect(both.filter(isPromiseObject).length).toBeGreaterThanOrEqual(PROMISE_TABLES.length);

    // A file where only the promise surface exists: the job store still says "migrate first".
    const other = fresh();
    const onlyPromises = new SqlitePromiseStore({ path: other });
    await onlyPromises.migrate();
    expect(schemaOf(other).every(isPromiseObject)).toBe(true);
    const noJobs = new SqliteStore({ path: other });
    await expect(noJobs.getJob("x")).rejects.toMatchObject({ code: "BELAY_SCHEMA_NOT_MIGRATED" });
    await Promise.all([onlyPromises.close(), noJobs.close()]);

    // Side by side on one file: each surface's writes and reads, interleaved.
    await jobs.enqueue({ jobs: [{ id: "j1", jobName: "job", queue: "q", payload: "{}", dueAt: T }], now: T });
    expect(await promises.handle({ kind: "promise.create", id: "p1", timeoutAt: T + 60_000, tags: target }, T)).toMatchObject({ status: 200 });
    const { jobs: claimed } = await jobs.claim({ workerId: "w", queues: ["q"], max: 1, leaseMs: 60_000, now: T });
    expect(claimed.map((job) => job.id)).toEqual(["j1"]);
    expect(await promises.handle({ kind: "task.acquire", id: "p1", version: 0, pid: "w", ttl: 60_000 }, T)).toMatchObject({ status: 200 });
    expect(await jobs.getJob("j1")).toMatchObject({ state: "leased" });
    expect(await promises.handle({ kind: "promise.get", id: "p1" }, T)).toMatchObject({ status: 200, data: { promise: { state: "pending" } } });
    await Promise.all([jobs.close(), promises.close()]);
  });

  it("two prefixes in one file are two independent promise surfaces", async () => {
    const path = fresh();
    const a = new SqlitePromiseStore({ path, tablePrefix: "a_" });
    const b = new SqlitePromiseStore({ path, tablePrefix: "b_" });
    await a.migrate();
    await expect(b.handle({ kind: "promise.get", id: "p" }, T)).rejects.toMatchObject({ code: "BELAY_SCHEMA_NOT_MIGRATED" });
    await b.migrate();
    await a.handle({ kind: "promise.create", id: "p", timeoutAt: T + 1_000 }, T);
    expect(await b.handle({ kind: "promise.get", id: "p" }, T)).toMatchObject({ status: 404 });
    await Promise.all([a.close(), b.close()]);
  });

  it("migrate() is idempotent: a second call changes nothing and reports the version", async () => {
    const { path, jobs, promises } = await bothMigrated();
    await promises.handle({ kind: "promise.create", id: "kept", timeoutAt: T + 60_000, tags: target }, T);
    const before = schemaOf(path);
    expect(await promises.migrate()).toEqual({ fromVersion: PROMISE_SCHEMA_VERSION, toVersion: PROMISE_SCHEMA_VERSION });
    expect(await jobs.migrate()).toEqual({ fromVersion: SCHEMA_VERSION, toVersion: SCHEMA_VERSION });
    const again = new SqlitePromiseStore({ path });
    expect(await again.migrate()).toEqual({ fromVersion: PROMISE_SCHEMA_VERSION, toVersion: PROMISE_SCHEMA_VERSION });
    expect(schemaOf(path)).toEqual(before);
    expect(await again.handle({ kind: "promise.get", id: "kept" }, T)).toMatchObject({ status: 200 });
    await Promise.all([jobs.close(), promises.close(), again.close()]);
  });

  it("concurrent migrate() calls waiting on the file's write lock apply each migration once", async () => {
    const path = fresh();
    // Created empty first, so the holder can take the write lock before any store migrates.
    const holder = new Database(path);
    holder.pragma("journal_mode = WAL");
    holder.exec("BEGIN IMMEDIATE");
    const stores = [new SqliteStore({ path }), new SqlitePromiseStore({ path }), new SqliteStore({ path }), new SqlitePromiseStore({ path })];
    const running = stores.map((store) => store.migrate());
    // Every call has read version 0 without the lock and now waits for it.
    await new Promise((resolve) => setTimeout(resolve, 100));
    holder.exec("COMMIT");
    holder.close();
    const results = await Promise.all(running);
    const fromZero = (offset: number) => [results[offset]!, results[offset + 2]!].filter((r) => r.fromVersion === 0).length;
    expect(fromZero(0)).toBe(1);
    expect(fromZero(1)).toBe(1);
    expect(results.map((r) => r.toVersion)).toEqual([SCHEMA_VERSION, PROMISE_SCHEMA_VERSION, SCHEMA_VERSION, PROMISE_SCHEMA_VERSION]);
    const db = new Database(path, { readonly: true });
    expect(db.prepare(`SELECT version FROM "belay_migrations" ORDER BY version`).all()).toEqual(MIGRATIONS.map((m) => ({ version: m.version })));
    expect(db.prepare(`SELECT version FROM "belay_promise_migrations" ORDER BY version`).all()).toEqual(PROMISE_MIGRATIONS.map((m) => ({ version: m.version })));
    db.close();
    await Promise.all(stores.map((store) => store.close()));
  });

  describe("across processes", () => {
    const fixture = fixtureScript("migrate-both");

    it("four processes migrating both surfaces of a fresh file at once each apply every migration once", async () => {
      const path = fresh();
      const run = promisify(execFile);
      const outputs = await Promise.all(
        (["jobs-first", "promises-first", "jobs-first", "promises-first"] as const).map((order) => run(process.execPath, [fixture.script, path, order])),
      );
      const results = outputs.map(({ stdout }) => JSON.parse(stdout) as { jobs: { fromVersion: number }; promises: { fromVersion: number } });
      expect(results.filter((r) => r.jobs.fromVersion === 0)).toHaveLength(1);
      expect(results.filter((r) => r.promises.fromVersion === 0)).toHaveLength(1);
      const db = new Database(path, { readonly: true });
      expect(db.prepare(`SELECT count(*) AS n FROM "belay_migrations"`).get()).toEqual({ n: MIGRATIONS.length });
      expect(db.prepare(`SELECT count(*) AS n FROM "belay_promise_migrations"`).get()).toEqual({ n: PROMISE_MIGRATIONS.length });
      db.close();
    }, 60_000);
  });

  it("a promise schema newer than the package is refused, and the job surface is not affected", async () => {
    const { path, jobs, promises } = await bothMigrated();
    await promises.close();
    const db = new Database(path);
    db.prepare(`INSERT INTO "belay_promise_migrations" (version) VALUES (?)`).run(PROMISE_SCHEMA_VERSION + 1);
    db.close();
    const newer = new SqlitePromiseStore({ path });
    await expect(newer.migrate()).rejects.toMatchObject({ code: "BELAY_SCHEMA_VERSION_UNKNOWN" });
    await expect(newer.handle({ kind: "promise.get", id: "p" }, T)).rejects.toMatchObject({ code: "BELAY_SCHEMA_VERSION_UNKNOWN" });
    expect(await jobs.migrate()).toEqual({ fromVersion: SCHEMA_VERSION, toVersion: SCHEMA_VERSION });
    expect(await jobs.getJob("none")).toBeNull();
    await Promise.all([jobs.close(), newer.close()]);
  });
});
