import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SqlitePromiseStore } from "../src/index.js";
import * as rows from "../src/sql/promise-rows.js";
import * as scans from "../src/sql/promise-scans.js";
import { type Tables, tablesFor } from "../src/tables.js";
import { planOf, preparedBy, recordPreparedStatements } from "./support/plans.js";

// The promise surface's timer scans, outbox take (filtered or not) and keyed lookups read their
// index (EXPLAIN QUERY PLAN names it), and no statement of a keyed operation, timer scan or outbox call scans a table:
// the statements are the store's own, recorded as a fresh store's connection prepares them.

const T = Date.UTC(2026, 0, 1);
const dir = mkdtempSync(join(tmpdir(), "belay-sqlite-promise-plans-"));
const path = join(dir, "plans.db");
const t = tablesFor("belay_");
afterAll(() => rmSync(dir, { recursive: true, force: true }));

recordPreparedStatements();

/** A SCAN of anything but a JSON parameter (`json_each`) reads a whole table or index. */
const isFullScan = (detail: string) => /^SCAN /.test(detail) && !/json_each|VIRTUAL TABLE/.test(detail);

const target = { "resonate:target": "poll://any@workers" };
/** Other addresses, so a filtered take has messages to pass over. */
const others = [{ "resonate:target": "poll://any@workers/w7" }, { "resonate:target": "https://hooks.example/belay" }];

/** Many promises in every state, tasks, callbacks, listeners, branches, schedules and messages; analysed. */
async function seed(): Promise<void> {
  const store = new SqlitePromiseStore({ path });
  await store.migrate();
  for (let i = 0; i < 600; i++) {
    const tags: Record<string, string> = { ...(i % 2 === 0 ? target : i % 6 === 1 ? others[i % 12 === 1 ? 0 : 1] : {}), ...(i % 3 === 0 ? { "resonate:branch": `b${i % 30}` } : {}), env: `e${i % 4}` };
    await store.handle({ kind: "promise.create", id: `p${i}`, timeoutAt: T + 60_000 + i * 1_000, tags }, T);
    if (i % 5 === 0) await store.handle({ kind: "promise.settle", id: `p${i}`, state: "resolved" }, T + 1);
    if (i % 10 === 2) await store.handle({ kind: "task.acquire", id: `p${i}`, version: 0, pid: "w1", ttl: 30_000 }, T + 2);
    if (i % 7 === 1) await store.handle({ kind: "promise.register_listener", awaited: `p${i}`, address: `http://l${i % 3}` }, T + 3);
    if (i % 8 === 4 && i > 0) await store.handle({ kind: "promise.register_callback", awaited: `p${i - 1}`, awaiter: `p${i}` }, T + 3);
  }
  for (let i = 0; i < 50; i++) {
    await store.handle({ kind: "schedule.create", id: `s${i}`, cron: "* * * * *", promiseId: "{{.id}}.{{.timestamp}}", promiseTimeout: 60_000, promiseTags: target, nextRunAt: T + i * 60_000 }, T);
  }
  await store.takeOutbox({ now: T + 5, max: 50, leaseMs: 10_000 });
  await store.close();
  const db = new Database(path);
  db.exec("ANALYZE");
  db.close();
}

/** The SQL a fresh store prepares while running `operation` (each statement is prepared once per connection). */
const statementsOf = (operation: (store: SqlitePromiseStore) => Promise<unknown>): Promise<string[]> =>
  preparedBy(() => new SqlitePromiseStore({ path }), operation, /^(BEGIN|COMMIT|ROLLBACK)\b|sqlite_master|promise_migrations/);

describe("sqlite promise store: query plans", () => {
  let db: Database.Database;
  beforeAll(async () => {
    await seed();
    db = new Database(path, { readonly: true });
  });
  afterAll(() => db?.close());

  const uses: [name: string, build: (t: Tables) => string, index: RegExp][] = [
    ["the deadline scan reads the partial index of pending deadlines", scans.selectDuePromises, /USING (COVERING )?INDEX belay_promises_timeout \(timeout_at<\?\)/],
    ["the task timer scan reads the partial index of task timers", scans.selectDueTasks, /USING (COVERING )?INDEX belay_tasks_timer \(timer_at>\? AND timer_at<\?\)/],
    ["the schedule scan reads the schedules' time index", scans.selectDueSchedules, /USING (COVERING )?INDEX belay_promise_schedules_due \(next_run_at<\?\)/],
    ["the outbox take reads the outbox's time index", scans.selectAvailableOutbox, /USING (COVERING )?INDEX belay_outbox_available \(available_at<\?\)/],
    ["a take filtered by address or prefix reads the same time index, covering", scans.selectAvailableOutboxFiltered, /USING COVERING INDEX belay_outbox_available \(available_at<\?\)/],
    ["a take marks each message by its key", scans.markTaken, /USING PRIMARY KEY \(kind=\? AND id=\? AND address=\?\)/],
    ["an acknowledgement finds its message by key", scans.deleteAcknowledged, /USING PRIMARY KEY \(kind=\? AND id=\?\)/],
    ["a release finds its message by key", scans.markReleased, /USING PRIMARY KEY \(kind=\? AND id=\?\)/],
    ["a branch is read from the index of the branch tag", rows.selectBranch, /USING INDEX belay_promises_branch \(branch=\?\)/],
    ["the callbacks on a promise are read by their key (awaited)", rows.selectAwaiters, /SEARCH c USING PRIMARY KEY \(awaited=\?\)/],
    ["the callbacks on a promise are deleted by their key (awaited)", rows.deleteCallbacksOn, /USING PRIMARY KEY \(awaited=\?\)/],
    ["the callbacks of an awaiter are deleted through the awaiter index", rows.deleteCallbacksOf, /USING (COVERING )?INDEX belay_callbacks_awaiter \(awaiter=\?\)/],
    ["a promise and its task are read by id", rows.selectPromise, /SEARCH p USING INDEX sqlite_autoindex_belay_promises_1 \(id=\?\)/],
    ["listeners are read by their key", rows.selectListeners, /USING PRIMARY KEY \(promise_id=\?\)/],
    ["a search by id prefix reads a range of the id index", scans.selectPromisePrefixPage, /SEARCH p USING INDEX sqlite_autoindex_belay_promises_1 \(id>\? AND id<\?\)/],
    ["a description reads the callbacks on a promise by their key", scans.selectAwaitersOf, /USING PRIMARY KEY \(awaited=\?\)/],
    ["a description reads what a task awaits through the awaiter index", scans.selectAwaitedBy, /USING (COVERING )?INDEX belay_callbacks_awaiter \(awaiter=\?\)/],
    ["a description reads a promise's messages by the outbox's key", scans.selectMessagesOf, /USING PRIMARY KEY \(kind=\? AND id=\?\)/],
    ["a task's execute is deleted by its key", rows.deleteExecute, /USING PRIMARY KEY \(kind=\? AND id=\?\)/],
  ];
  for (const [clause, build, index] of uses) {
    it(clause, () => {
      const plan = planOf(db, build(t));
      expect(plan.some((detail) => index.test(detail)), plan.join("\n")).toBe(true);
      expect(plan.filter(isFullScan), plan.join("\n")).toEqual([]);
    });
  }

  it("a take, filtered by prefix or not, walks the time index in its order: no sort, no read of the table", () => {
    for (const build of [scans.selectAvailableOutbox, scans.selectAvailableOutboxFiltered]) {
      const plan = planOf(db, build(t));
      expect(plan.filter((detail) => /TEMP B-TREE/.test(detail)), plan.join("\n")).toEqual([]);
      expect(plan.filter((detail) => /belay_outbox/.test(detail) || / o USING /.test(detail)), plan.join("\n")).toEqual([
        expect.stringMatching(/^SEARCH (belay_outbox|o) USING COVERING INDEX belay_outbox_available \(available_at<\?\)$/),
      ]);
    }
  });

  it("no statement of a keyed operation, timer scan, schedule firing or outbox call scans a table", async () => {
    const statements = await statementsOf(async (store) => {
      const now = T + 10;
      await store.handle({ kind: "promise.create", id: "n1", timeoutAt: now + 60_000, tags: { ...target, "resonate:branch": "b3" } }, now);
      await store.handle({ kind: "promise.create", id: "n2", timeoutAt: now + 60_000, tags: target }, now);
      await store.handle({ kind: "task.acquire", id: "n1", version: 0, pid: "w2", ttl: 30_000 }, now);
      await store.handle({ kind: "task.heartbeat", pid: "w2", tasks: [{ id: "n1", version: 1 }] }, now);
      await store.handle({ kind: "task.fence", id: "n1", version: 1, action: { kind: "promise.create", id: "n1.c", timeoutAt: now + 60_000, tags: target } }, now);
      await store.handle({ kind: "task.suspend", id: "n1", version: 1, actions: [{ kind: "promise.register_callback", awaited: "n1.c", awaiter: "n1" }] }, now);
      await store.handle({ kind: "promise.register_listener", awaited: "n1.c", address: "http://l" }, now);
      await store.handle({ kind: "task.acquire", id: "n1.c", version: 0, pid: "w2", ttl: 30_000 }, now);
      await store.handle({ kind: "task.fulfill", id: "n1.c", version: 1, action: { kind: "promise.settle", id: "n1.c", state: "resolved" } }, now);
      await store.handle({ kind: "task.acquire", id: "n2", version: 0, pid: "w2", ttl: 30_000 }, now);
      await store.handle({ kind: "task.release", id: "n2", version: 1 }, now);
      await store.handle({ kind: "task.halt", id: "n2" }, now);
      await store.handle({ kind: "task.continue", id: "n2" }, now);
      await store.handle({ kind: "promise.settle", id: "p1", state: "rejected" }, now);
      await store.handle({ kind: "schedule.get", id: "s1" }, now);
      await store.handle({ kind: "schedule.delete", id: "s49" }, now);
      const due = await store.dueSchedules({ now: T + 5 * 60_000, max: 10 });
      await store.fireSchedules({ firings: due.map((s) => ({ id: s.id, expectedNextRunAt: s.nextRunAt, nextRunAt: s.nextRunAt + 3_600_000 })), now: T + 5 * 60_000 });
      await store.expireTimers({ now: T + 200_000, max: 50 });
      await store.handle({ kind: "promise.search", prefix: "p1", limit: 5 }, now);
      await store.describePromise("n1", now);
      const filter = { addresses: ["poll://any@workers/w7"], prefixes: ["https://"] };
      const byAddress = await store.takeOutbox({ now: T + 200_000, max: 5, leaseMs: 10_000, filter });
      const byPrefix = await store.takeOutbox({ now: T + 200_000, max: 5, leaseMs: 10_000, filter: { addresses: [], prefixes: ["poll://any@"] } });
      expect(byAddress.length + byPrefix.length).toBeGreaterThan(0);
      await store.releaseOutbox({ deliveries: [...byAddress, ...byPrefix], now: T + 200_001 });
      const taken = await store.takeOutbox({ now: T + 200_001, max: 50, leaseMs: 10_000 });
      await store.acknowledgeOutbox({ deliveries: taken });
    });
    expect(statements.length).toBeGreaterThan(20);
    const scanning = statements.map((sql) => ({ sql, plan: planOf(db, sql) })).filter(({ plan }) => plan.some(isFullScan));
    expect(scanning).toEqual([]);
  });
});
