import { symlinkSync } from "node:fs";
import { basename, join } from "node:path";
import { type NewJob, isBelayError } from "@belay/contract";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { type SqliteQueryExecutor, SqliteStore } from "../src/index.js";
import { SCHEMA_VERSION } from "../src/migrations/index.js";
import { databaseFiles } from "./support/files.js";

// What the conformance suite cannot see: configuration, the schema version check, connection
// setup, wake-up hints, the caller's-transaction rules and lock errors.

const { dir, fresh: freshPath } = databaseFiles("belay-sqlite-store-", "store");
const T = Date.UTC(2026, 0, 1);
const job = (id: string, fields: Partial<NewJob> = {}): NewJob => ({ id, jobName: "test.job", queue: "default", payload: "{}", dueAt: T, ...fields });

async function migrated(path = freshPath(), config: Partial<ConstructorParameters<typeof SqliteStore>[0]> = {}): Promise<SqliteStore> {
  const store = new SqliteStore({ path, ...config });
  await store.migrate();
  return store;
}

/** A migrated store on a fresh file, and the file's path. */
async function migratedFile(): Promise<{ path: string; store: SqliteStore }> {
  const path = freshPath();
  return { path, store: await migrated(path) };
}

async function errorOf(action: () => unknown): Promise<unknown> {
  try {
    await action();
  } catch (error) {
    return error;
  }
  throw new Error("expected an error");
}

describe("sqlite: configuration and schema", () => {
  it("the table prefix is 1-64 letters, digits or underscores", async () => {
    for (const tablePrefix of ["", "a-b", "x".repeat(65), 'x"; DROP TABLE t; --', "é"]) {
      const error = await errorOf(() => new SqliteStore({ path: freshPath(), tablePrefix }));
      expect(error, tablePrefix).toMatchObject({ code: "BELAY_INVALID_INPUT", field: "tablePrefix" });
    }
    const store = await migrated(freshPath(), { tablePrefix: `${"x".repeat(63)}_` });
    expect((await store.enqueue({ jobs: [job("a")], now: T }))[0]).toMatchObject({ status: "created" });
    await store.close();
    await expect(errorOf(() => new SqliteStore({ path: freshPath(), busyTimeoutMs: -1 }))).resolves.toMatchObject({ field: "busyTimeoutMs" });
    await expect(errorOf(() => new SqliteStore({ path: freshPath(), synchronous: "off" as never }))).resolves.toMatchObject({ field: "synchronous" });
  });

  it("operations before migrate throw SchemaNotMigratedError; migrate creates the schema once", async () => {
    const path = freshPath();
    const store = new SqliteStore({ path });
    for (const action of [() => store.enqueue({ jobs: [job("a")], now: T }), () => store.getJob("a"), () => store.countJobs()]) {
      expect(await errorOf(action)).toMatchObject({ code: "BELAY_SCHEMA_NOT_MIGRATED" });
    }
    expect(await store.migrate()).toEqual({ fromVersion: 0, toVersion: SCHEMA_VERSION });
    expect(await store.migrate()).toEqual({ fromVersion: SCHEMA_VERSION, toVersion: SCHEMA_VERSION });
    expect(await new SqliteStore({ path }).migrate()).toEqual({ fromVersion: SCHEMA_VERSION, toVersion: SCHEMA_VERSION });
    expect((await store.enqueue({ jobs: [job("a")], now: T }))[0]).toMatchObject({ status: "created" });
    await store.close();
  });

  it("a schema newer than the store knows is refused by migrate and by every operation", async () => {
    const path = freshPath();
    (await migrated(path)).close();
    const db = new Database(path);
    db.prepare(`INSERT INTO "belay_migrations" (version) VALUES (?)`).run(SCHEMA_VERSION + 1);
    db.close();
    const store = new SqliteStore({ path });
    expect(await errorOf(() => store.migrate())).toMatchObject({ code: "BELAY_SCHEMA_VERSION_UNKNOWN", found: SCHEMA_VERSION + 1, supported: SCHEMA_VERSION });
    expect(await errorOf(() => store.claim({ workerId: "w", queues: ["default"], max: 1, leaseMs: 1_000, now: T }))).toMatchObject({
      code: "BELAY_SCHEMA_VERSION_UNKNOWN",
    });
    await store.close();
  });

  it("two table prefixes share one file and never see each other's jobs", async () => {
    const path = freshPath();
    const a = await migrated(path, { tablePrefix: "app_a_" });
    const b = await migrated(path, { tablePrefix: "app_b_" });
    await a.enqueue({ jobs: [job("only-a")], now: T });
    expect(await b.getJob("only-a")).toBeNull();
    expect((await b.enqueue({ jobs: [job("only-a")], now: T }))[0]).toMatchObject({ status: "created" });
    expect((await a.listJobs()).jobs.map((j) => j.id)).toEqual(["only-a"]);
    await a.close();
    await b.close();
  });

  it("sets up each connection: WAL, foreign keys, busy timeout, synchronous NORMAL by default and FULL on request", async () => {
    const pragmas: string[] = [];
    const pragma = Database.prototype.pragma;
    Database.prototype.pragma = function (this: Database.Database, source: string, options?: Database.PragmaOptions) {
      pragmas.push(source);
      return pragma.call(this, source, options);
    } as typeof pragma;
    try {
      const normal = new SqliteStore({ path: freshPath() });
      const full = new SqliteStore({ path: freshPath(), synchronous: "full", busyTimeoutMs: 5 });
      await normal.close();
      await full.close();
    } finally {
      Database.prototype.pragma = pragma;
    }
    expect(pragmas).toEqual([
      "journal_mode = WAL",
      "synchronous = NORMAL",
      "foreign_keys = ON",
      "busy_timeout = 20",
      "journal_mode = WAL",
      "synchronous = FULL",
      "foreign_keys = ON",
      "busy_timeout = 5",
    ]);
    const path = freshPath();
    await (await migrated(path)).close();
    const check = new Database(path);
    expect(check.pragma("journal_mode", { simple: true })).toBe("wal");
    check.close();
  });

  it("a closed store refuses work; close is idempotent", async () => {
    const store = await migrated();
    await store.close();
    await store.close();
    expect(await errorOf(() => store.getJob("a"))).toMatchObject({ code: "BELAY_STORE_CLOSED" });
    expect(await errorOf(() => store.migrate())).toMatchObject({ code: "BELAY_STORE_CLOSED" });
  });
});

describe("sqlite: wake-up hints", () => {
  it("hint queues that got a job due now, after the store's own commits only", async () => {
    const { path, store } = await migratedFile();
    const hints: string[] = [];
    const unsubscribe = store.subscribeHints((queue) => hints.push(queue));
    store.subscribeHints(() => {
      throw new Error("a failing listener changes nothing");
    });
    const take = () => hints.splice(0).sort();

    await store.enqueue({ jobs: [job("now", { queue: "q1" }), job("later", { queue: "q2", dueAt: T + 60_000 })], now: T });
    expect(take()).toEqual(["q1"]);
    const [claimed] = (await store.claim({ workerId: "w", queues: ["q1"], max: 1, leaseMs: 60_000, now: T })).jobs;
    expect(take()).toEqual([]);
    await store.release({ workerId: "w", leases: [{ jobId: "now", attempt: claimed!.attempt }], now: T + 1 });
    expect(take()).toEqual(["q1"]);
    const [again] = (await store.claim({ workerId: "w", queues: ["q1"], max: 1, leaseMs: 60_000, now: T + 1 })).jobs;
    const fail = (retryAt: number | null) =>
      store.reportOutcomes({ reports: [{ jobId: "now", workerId: "w", attempt: again!.attempt, outcome: { type: "failed", retryAt } }], now: T + 2 });
    await fail(T + 2);
    expect(take(), "a retry due now").toEqual(["q1"]);

    await store.upsertSchedule({
      schedule: { id: "s", cron: "* * * * *", timeZone: "UTC", jobName: "tick", queue: "cron", payload: "{}", catchUp: "skip", noOverlap: false },
      now: T,
    });
    await store.mintDue({ decisions: [{ scheduleId: "s", expectedCursor: T, newCursor: T + 60_000, mint: [T + 60_000], skip: [] }], now: T });
    expect(take(), "a tick in the future").toEqual([]);
    await store.triggerSchedule({ scheduleId: "s", jobId: "manual", actor: "ops", now: T });
    expect(take()).toEqual(["cron"]);

    const caller = new Database(path);
    caller.exec("BEGIN");
    await store.enqueue({ jobs: [job("in-tx", { queue: "q3" })], now: T, tx: caller });
    caller.exec("COMMIT");
    caller.close();
    expect(take(), "never for a caller's transaction").toEqual([]);

    unsubscribe();
    await store.enqueue({ jobs: [job("unheard", { queue: "q1" })], now: T });
    expect(take()).toEqual([]);
    await store.close();
  });
});

describe("sqlite: enqueue in the caller's transaction", () => {
  /** A migrated store on a fresh file, and the application's connection to it with an `orders` table, in a transaction. */
  async function inAppTransaction(): Promise<{ store: SqliteStore; db: Database.Database }> {
    const { path, store } = await migratedFile();
    const db = new Database(path);
    db.exec("CREATE TABLE IF NOT EXISTS orders (id TEXT PRIMARY KEY)");
    db.exec("BEGIN");
    return { store, db };
  }

  it("commits and rolls back with the application's own writes", async () => {
    const { store, db } = await inAppTransaction();
    db.prepare("INSERT INTO orders (id) VALUES (?)").run("o1");
    expect(await store.enqueue({ jobs: [job("ship-o1")], now: T, tx: db })).toMatchObject([{ status: "created" }]);
    expect(await store.getJob("ship-o1"), "invisible before the commit").toBeNull();
    db.exec("COMMIT");
    expect(await store.getJob("ship-o1")).toMatchObject({ state: "scheduled" });

    db.exec("BEGIN");
    db.prepare("INSERT INTO orders (id) VALUES (?)").run("o2");
    await store.enqueueWorkflow({ workflow: { id: "wf-o2", name: "ship", jobs: [job("pack-o2"), job("ship-o2", { parentIds: ["pack-o2"] })] }, now: T, tx: db });
    db.exec("ROLLBACK");
    expect(await store.getJob("pack-o2")).toBeNull();
    expect(await store.getWorkflow("wf-o2")).toBeNull();
    expect(db.prepare("SELECT id FROM orders").pluck().all()).toEqual(["o1"]);
    db.close();
    await store.close();
  });

  it("a rejected batch leaves the caller's transaction and its earlier writes intact", async () => {
    const { store, db } = await inAppTransaction();
    db.prepare("INSERT INTO orders (id) VALUES (?)").run("o1");
    await store.enqueue({ jobs: [job("first")], now: T, tx: db });
    const results = await store.enqueue({ jobs: [job("second"), job("orphan", { parentIds: ["ghost"] })], now: T, tx: db });
    expect(results.map((r) => r.status)).toEqual(["notWritten", "rejected"]);
    expect(db.inTransaction).toBe(true);
    db.exec("COMMIT");
    expect(db.prepare("SELECT id FROM orders").pluck().all()).toEqual(["o1"]);
    expect((await store.listJobs()).jobs.map((j) => j.id)).toEqual(["first"]);
    db.close();
    await store.close();
  });

  it("refuses a handle that is not a connection, closed, outside a transaction, or on another file", async () => {
    const { path, store } = await migratedFile();
    const other = new Database(freshPath());
    other.exec("BEGIN");
    const idle = new Database(path);
    const closed = new Database(path);
    closed.close();
    const memory = new Database(":memory:");
    memory.exec("BEGIN");
    for (const [tx, reason] of [
      [{}, "a plain object"],
      [idle, "no transaction"],
      [closed, "closed"],
      [other, "another file"],
      [memory, "in memory"],
    ] as const) {
      expect(await errorOf(() => store.enqueue({ jobs: [job("x")], now: T, tx })), reason).toMatchObject({ code: "BELAY_INVALID_TRANSACTION" });
    }
    expect(await store.getJob("x")).toBeNull();
    for (const db of [other, idle, memory]) db.close();
    await store.close();
  });

  it("overlapping calls on the caller's connection never interleave inside each other's savepoints", async () => {
    const { store, db } = await inAppTransaction();
    const calls = await Promise.all([
      store.enqueue({ jobs: [job("one"), job("two")], now: T, tx: db }),
      store.enqueue({ jobs: [job("three"), job("orphan", { parentIds: ["ghost"] })], now: T, tx: db }),
      store.enqueueWorkflow({ workflow: { id: "wf", name: "wf", jobs: [job("four")] }, now: T, tx: db }),
    ]);
    expect(calls[1].map((r) => r.status)).toEqual(["notWritten", "rejected"]);
    db.exec("COMMIT");
    expect((await store.listJobs()).jobs.map((j) => j.id)).toEqual(["one", "two", "four"]);
    db.close();
    await store.close();
  });

  it("accepts a connection that reaches the same file through another path", async () => {
    const { path, store } = await migratedFile();
    const link = join(dir, `link-${basename(path)}`);
    symlinkSync(path, link);
    const db = new Database(link);
    db.exec("BEGIN");
    expect(await store.enqueue({ jobs: [job("via-link")], now: T, tx: db })).toMatchObject([{ status: "created" }]);
    db.exec("COMMIT");
    db.close();
    expect(await store.getJob("via-link")).not.toBeNull();
    await store.close();
  });
});

describe("sqlite: enqueue through a caller's executor (enqueueThrough)", () => {
  /** An async executor on the application's own connection, as a driver like Kysely's would be. */
  function executorOn(db: Database.Database): SqliteQueryExecutor & { readonly statements: string[] } {
    const statements: string[] = [];
    return {
      statements,
      async query(sql, values) {
        statements.push(sql);
        await Promise.resolve();
        const statement = db.prepare(sql);
        if (statement.reader) return statement.all(...values) as Record<string, unknown>[];
        statement.run(...values);
        return [];
      },
    };
  }

  it("writes with the store's own SQL inside the caller's transaction; hints wait for afterCommit", async () => {
    const { path, store } = await migratedFile();
    const heard: string[] = [];
    store.subscribeHints((queue) => heard.push(queue));
    const db = new Database(path);
    db.exec("BEGIN");
    const executor = executorOn(db);
    const { result, afterCommit } = await store.enqueueThrough(executor, { jobs: [job("a", { queue: "mail" }), job("b", { parentIds: ["a"] })], now: T });
    expect(result).toMatchObject([
      { id: "a", status: "created", state: "scheduled", seq: expect.any(Number) },
      { id: "b", status: "created", state: "awaitingParents", seq: expect.any(Number) },
    ]);
    const savepoints = executor.statements.filter((sql) => /belay_enqueue/.test(sql));
    expect(savepoints).toEqual([expect.stringMatching(/^SAVEPOINT belay_enqueue_\d+$/), expect.stringMatching(/^RELEASE belay_enqueue_\d+$/)]);
    expect(savepoints[1]!.split(" ")[1]).toBe(savepoints[0]!.split(" ")[1]);
    expect(await store.getJob("a"), "invisible before the commit").toBeNull();
    db.exec("COMMIT");
    expect(heard, "no hint until told of the commit").toEqual([]);
    afterCommit();
    expect(heard).toEqual(["mail"]);
    expect(await store.getDependencies("b")).toMatchObject({ parents: [{ jobId: "a" }] });

    db.exec("BEGIN");
    const flow = await store.enqueueWorkflowThrough(executorOn(db), { workflow: { id: "wf", name: "wf", jobs: [job("m1"), job("m2", { parentIds: ["m1"] })] }, now: T });
    expect(flow.result).toMatchObject({ status: "created", jobs: [{ id: "m1" }, { id: "m2", state: "awaitingParents" }] });
    db.exec("ROLLBACK");
    expect(await store.getWorkflow("wf")).toBeNull();
    db.close();
    await store.close();
  });

  it("reads integers the caller's driver returns as bigint", async () => {
    const { path, store } = await migratedFile();
    const db = new Database(path);
    db.defaultSafeIntegers(true);
    db.exec("BEGIN");
    await store.enqueueThrough(executorOn(db), { jobs: [job("p")], now: T });
    const { result } = await store.enqueueThrough(executorOn(db), { jobs: [job("p"), job("c", { parentIds: ["p"] })], now: T });
    expect(result).toMatchObject([{ status: "duplicate", state: "scheduled" }, { status: "created", seq: expect.any(Number) }]);
    db.exec("COMMIT");
    db.close();
    await store.close();
  });

  it("refuses an executor outside a transaction (leaving none open), on another file or in memory", async () => {
    const { path, store } = await migratedFile();
    const idle = new Database(path);
    const other = new Database(freshPath());
    other.exec("BEGIN");
    const memory = new Database(":memory:");
    memory.exec("BEGIN");
    for (const [db, reason] of [
      [idle, "no transaction"],
      [other, "another file"],
      [memory, "in memory"],
    ] as const) {
      const error = await errorOf(() => store.enqueueThrough(executorOn(db), { jobs: [job("x")], now: T }));
      expect(error, reason).toMatchObject({ code: "BELAY_INVALID_TRANSACTION" });
    }
    expect(idle.inTransaction, "the probe leaves no transaction behind").toBe(false);
    const broken = { query: async () => Promise.reject(new Error("connection lost")) };
    expect(await errorOf(() => store.enqueueThrough(broken, { jobs: [job("x")], now: T }))).toMatchObject({ code: "BELAY_INVALID_TRANSACTION" });
    expect(await errorOf(() => store.enqueueThrough({} as never, { jobs: [job("x")], now: T }))).toMatchObject({ code: "BELAY_INVALID_TRANSACTION" });
    expect(await store.getJob("x")).toBeNull();
    for (const db of [idle, other, memory]) db.close();
    await store.close();
  });
});

describe("sqlite: the write lock", () => {
  it("a write that cannot get the lock within busyTimeoutMs throws TransientStoreError and commits nothing", async () => {
    const path = freshPath();
    const store = await migrated(path, { busyTimeoutMs: 60 });
    const holder = new Database(path);
    holder.exec("BEGIN IMMEDIATE");
    const error = await errorOf(() => store.enqueue({ jobs: [job("blocked")], now: T }));
    expect(isBelayError(error, "BELAY_TRANSIENT_STORE")).toBe(true);
    holder.exec("ROLLBACK");
    expect(await store.getJob("blocked")).toBeNull();
    expect(await store.enqueue({ jobs: [job("blocked")], now: T })).toMatchObject([{ status: "created" }]);
    holder.close();
    await store.close();
  });

  it("waits for the lock without blocking the event loop, so the holder can finish", async () => {
    const { path, store } = await migratedFile();
    const holder = new Database(path);
    holder.exec("BEGIN IMMEDIATE");
    // Released by a timer: only runs if the store's wait yields to the event loop.
    setTimeout(() => holder.exec("COMMIT"), 150);
    expect(await store.enqueue({ jobs: [job("patient")], now: T })).toMatchObject([{ status: "created" }]);
    expect(holder.inTransaction).toBe(false);
    holder.close();
    await store.close();
  });
});
