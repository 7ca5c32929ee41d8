import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { NewJob } from "@belay/contract";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { type SqliteQueryExecutor, SqliteStore } from "../src/index.js";

// What the conformance suite cannot see: a duplicate or refused request leaves every table of the
// file exactly as it was — no queue row for a queue it names, no consumed AUTOINCREMENT number,
// nothing in a side table.

const dir = mkdtempSync(join(tmpdir(), "belay-sqlite-refused-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;
const T = Date.UTC(2026, 0, 1);
const job = (id: string, fields: Partial<NewJob> = {}): NewJob => ({ id, jobName: "test.job", queue: "default", payload: "{}", dueAt: T, ...fields });

/** Every row of every table in the file (sqlite_sequence included), read on a connection of its own. */
function contents(path: string): Record<string, string[]> {
  const db = new Database(path, { readonly: true });
  try {
    const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").pluck().all() as string[];
    return Object.fromEntries(
      tables.map((table) => [table, (db.prepare(`SELECT * FROM "${table}"`).all() as unknown[]).map((row) => JSON.stringify(row)).sort()]),
    );
  } finally {
    db.close();
  }
}

describe("sqlite: a duplicate or refused request writes nothing", () => {
  it("enqueue and workflows, on the store's connection, in the caller's transaction and through an executor", async () => {
    const path = join(dir, `store-${++files}.db`);
    const store = new SqliteStore({ path });
    await store.migrate();
    await store.setConcurrencyLimit({ queue: "default", limit: 4, actor: "op", now: T });
    await store.enqueue({ jobs: [job("j1", { tags: [{ key: "team", value: "a" }] })], now: T });
    await store.enqueueWorkflow({ workflow: { id: "wf", name: "wf", jobs: [job("w1")] }, now: T });
    await store.upsertSchedule({
      schedule: { id: "s", cron: "* * * * *", timeZone: "UTC", jobName: "test.job", queue: "default", payload: "{}", catchUp: "skip", noOverlap: false },
      now: T,
    });
    await store.triggerSchedule({ scheduleId: "s", jobId: "manual", actor: "op", now: T });
    const before = contents(path);
    expect(before.belay_queues).toHaveLength(1);

    const fresh = { queue: "brand-new", tags: [{ key: "team", value: "new" }], retry: { maxAttempts: 2, delaysMs: [1] } };
    expect(await store.enqueue({ jobs: [job("j1", fresh)], now: T + 1 })).toMatchObject([{ status: "duplicate" }]);
    expect((await store.enqueue({ jobs: [job("j2", fresh), job("j3", { parentIds: ["missing"] })], now: T })).map((r) => r.status)).toEqual([
      "notWritten",
      "rejected",
    ]);
    expect((await store.enqueue({ jobs: [job("j4", fresh), job("j5", { retry: { maxAttempts: 0, delaysMs: [1] } })], now: T })).map((r) => r.status)).toEqual([
      "notWritten",
      "rejected",
    ]);
    expect(await store.enqueueWorkflow({ workflow: { id: "wf", name: "again", jobs: [job("w2", fresh)] }, now: T })).toMatchObject({ status: "duplicate" });
    expect(await store.enqueueWorkflow({ workflow: { id: "wf2", name: "taken", jobs: [job("w3", fresh), job("j1", fresh)] }, now: T })).toMatchObject({
      status: "rejected",
    });
    expect(await store.triggerSchedule({ scheduleId: "s", jobId: "manual", actor: "op", now: T + 1 })).toEqual({ status: "triggered", jobId: "manual" });

    const db = new Database(path);
    db.exec("BEGIN IMMEDIATE");
    expect(await store.enqueue({ jobs: [job("j1", fresh)], now: T, tx: db })).toMatchObject([{ status: "duplicate" }]);
    expect((await store.enqueue({ jobs: [job("j6", fresh), job("j7", { parentIds: ["missing"] })], now: T, tx: db })).map((r) => r.status)).toEqual([
      "notWritten",
      "rejected",
    ]);
    db.exec("COMMIT");
    db.exec("BEGIN IMMEDIATE");
    const executor: SqliteQueryExecutor = {
      async query(sql, values) {
        const statement = db.prepare(sql);
        if (statement.reader) return statement.all(...values) as Record<string, unknown>[];
        statement.run(...values);
        return [];
      },
    };
    expect((await store.enqueueThrough(executor, { jobs: [job("j1", fresh)], now: T })).result).toMatchObject([{ status: "duplicate" }]);
    const through = await store.enqueueWorkflowThrough(executor, { workflow: { id: "wf", name: "again", jobs: [job("w4", fresh)] }, now: T });
    expect(through.result).toMatchObject({ status: "duplicate" });
    db.exec("COMMIT");
    db.close();

    expect(contents(path)).toEqual(before);
    await store.close();
  });
});
