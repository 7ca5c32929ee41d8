import pg from "pg";
import { describe, expect, it } from "vitest";
import { PROMISE_SCHEMA_VERSION, PostgresPromiseStore, PostgresStore, SCHEMA_VERSION } from "../src/index.js";
import { MIGRATIONS, PROMISE_MIGRATIONS } from "../src/migrations/index.js";

const PROMISE_VERSIONS = PROMISE_MIGRATIONS.map(({ version, requires }) => ({ version, requires }));
import { pgTarget, testDatabase, testPool } from "./pg-target.js";

// The promise tables are a second surface of the schema: their own numbered migrations and
// version table, under the job tables' migration lock. Either store's migrate() creates only its
// own surface; the two run side by side in one schema, in either order, at once.

const target = await pgTarget("promise-migrations.test.ts");
const url = target.url;
const T = 1_800_000_000_000;

describe.skipIf(url === undefined)(`postgres promise migrations (${target.reason})`, () => {
  const { pool, schema: newSchema } = testDatabase(target);

  const fresh = (prefix: string) => {
    const schema = newSchema(prefix);
    return schema;
  };
  const tables = async (schema: string) =>
    (await pool.query("SELECT tablename FROM pg_tables WHERE schemaname = $1 ORDER BY tablename", [schema])).rows.map((r) => r.tablename as string);
  const versions = async (schema: string, table: string) =>
    (await pool.query(`SELECT version, requires FROM "${schema}".${table} ORDER BY version`)).rows;

  const PROMISE_TABLES = ["callbacks", "listeners", "outbox", "promise_migrations", "promise_schedules", "promises", "tasks"];

  it("the promise store's migrate() creates only the promise tables; the job store's adds its own beside them", async () => {
    const schema = fresh("psurface");
    const promises = new PostgresPromiseStore({ pool, schema });
    expect(await promises.migrate()).toEqual({ fromVersion: 0, toVersion: PROMISE_SCHEMA_VERSION });
    expect(await tables(schema)).toEqual(PROMISE_TABLES);
    expect(await versions(schema, "promise_migrations")).toEqual(PROMISE_VERSIONS);

    const jobs = new PostgresStore({ pool, schema, hints: false });
    await expect(jobs.getJob("j")).rejects.toMatchObject({ code: "BELAY_SCHEMA_NOT_MIGRATED" });
    expect(await jobs.migrate()).toEqual({ fromVersion: 0, toVersion: SCHEMA_VERSION });
    expect(await promises.migrate(), "idempotent").toEqual({ fromVersion: PROMISE_SCHEMA_VERSION, toVersion: PROMISE_SCHEMA_VERSION });
    expect(await jobs.migrate(), "idempotent").toEqual({ fromVersion: SCHEMA_VERSION, toVersion: SCHEMA_VERSION });
    expect(await versions(schema, "promise_migrations"), "the job migration wrote no promise version").toEqual(PROMISE_VERSIONS);
    expect((await versions(schema, "schema_migrations")).map((r) => r.version)).toEqual(MIGRATIONS.map((m) => m.version));

    // Both surfaces at work in one schema.
    await jobs.enqueue({ jobs: [{ id: "j1", jobName: "a.job", queue: "q", payload: "{}", dueAt: T }], now: T });
    expect(await promises.handle({ kind: "promise.create", id: "p1", timeoutAt: T + 60_000, tags: { "resonate:target": "poll://any@w" } }, T)).toMatchObject({ status: 200 });
    expect(await jobs.getJob("j1")).toMatchObject({ state: "scheduled" });
    expect(await promises.handle({ kind: "task.get", id: "p1" }, T)).toMatchObject({ status: 200, data: { task: { state: "pending" } } });
    await jobs.close();
    await promises.close();
  });

  it("in the other order: a job schema gains the promise tables, and its jobs are untouched", async () => {
    const schema = fresh("porder");
    const jobs = new PostgresStore({ pool, schema, hints: false });
    await jobs.migrate();
    const jobTables = await tables(schema);
    await jobs.enqueue({ jobs: [{ id: "j1", jobName: "a.job", queue: "q", payload: "{}", dueAt: T }], now: T });
    const promises = new PostgresPromiseStore({ pool, schema });
    await expect(promises.handle({ kind: "promise.get", id: "p" }, T)).rejects.toMatchObject({ code: "BELAY_SCHEMA_NOT_MIGRATED" });
    expect(await promises.migrate()).toEqual({ fromVersion: 0, toVersion: PROMISE_SCHEMA_VERSION });
    expect(await tables(schema)).toEqual([...jobTables, ...PROMISE_TABLES].sort());
    expect(await jobs.getJob("j1")).toMatchObject({ id: "j1", state: "scheduled" });
    await jobs.close();
    await promises.close();
  });

  it("six stores (three of each surface, each with its own connections) migrating one empty schema at once all succeed, each surface created once", async () => {
    const schema = fresh("pconcurrent");
    const pools = Array.from({ length: 6 }, () => testPool(url!, 2));
    try {
      const stores = pools.map((p, i) => (i % 2 === 0 ? new PostgresPromiseStore({ pool: p, schema }) : new PostgresStore({ pool: p, schema, hints: false })));
      const results = await Promise.all(stores.map((s) => s.migrate()));
      const promiseResults = results.filter((_, i) => i % 2 === 0);
      const jobResults = results.filter((_, i) => i % 2 === 1);
      expect(promiseResults.filter((r) => r.fromVersion === 0), "the promise tables were created once").toHaveLength(1);
      expect(jobResults.filter((r) => r.fromVersion === 0), "the job tables were created once").toHaveLength(1);
      expect(promiseResults.every((r) => r.toVersion === PROMISE_SCHEMA_VERSION)).toBe(true);
      expect(jobResults.every((r) => r.toVersion === SCHEMA_VERSION)).toBe(true);
      expect(await versions(schema, "promise_migrations")).toEqual(PROMISE_VERSIONS);
      for (const s of stores) await s.close();
    } finally {
      for (const p of pools) await p.end();
    }
  });

  it("promise tables migrated by a newer release: usable while its migrations were additive, refused once they require more", async () => {
    const schema = fresh("pnewer");
    const store = new PostgresPromiseStore({ pool, schema });
    await store.migrate();
    await pool.query(`INSERT INTO "${schema}".promise_migrations (version, requires) VALUES (${PROMISE_SCHEMA_VERSION + 1}, 1)`);
    const additive = new PostgresPromiseStore({ pool, schema });
    expect(await additive.handle({ kind: "promise.get", id: "p" }, T)).toMatchObject({ status: 404 });
    await expect(additive.migrate()).rejects.toMatchObject({ code: "BELAY_SCHEMA_VERSION_UNKNOWN" });
    await pool.query(`INSERT INTO "${schema}".promise_migrations (version, requires) VALUES (${PROMISE_SCHEMA_VERSION + 2}, ${PROMISE_SCHEMA_VERSION + 2})`);
    const refused = new PostgresPromiseStore({ pool, schema });
    await expect(refused.handle({ kind: "promise.get", id: "p" }, T)).rejects.toMatchObject({ code: "BELAY_SCHEMA_VERSION_UNKNOWN" });
    for (const s of [store, additive, refused]) await s.close();
  });

  it("checks its config, naming the field", () => {
    expect(() => new PostgresPromiseStore({} as never)).toThrow(expect.objectContaining({ code: "BELAY_INVALID_INPUT", field: "pool" }));
    expect(() => new PostgresPromiseStore({ pool, schema: "no spaces" })).toThrow(expect.objectContaining({ field: "schema" }));
    expect(() => new PostgresPromiseStore({ pool, attempts: 0 })).toThrow(expect.objectContaining({ field: "attempts" }));
    expect(() => new PostgresPromiseStore({ pool, settings: { retryTimeoutMs: 0 } })).toThrow(expect.objectContaining({ code: "BELAY_INVALID_INPUT" }));
    expect(new PostgresPromiseStore({ connectionString: url!, schema: "some_schema" }).schema).toBe("some_schema");
    void pg;
  });
});
