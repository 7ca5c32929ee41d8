import { NO_EFFECTS, type PromiseEffects, type PromiseRow, type RowKey, type TaskRow } from "@belay/contract";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PostgresPromiseStore } from "../src/index.js";
import type { RowGuards } from "../src/promise-row-cache.js";
import type { PromiseSession } from "../src/promise-session.js";
import { SqlCache, type Statement } from "../src/session.js";
import { TransactionMemo, applyPromiseEffects, loadPromiseRows } from "../src/sql/promise-rows.js";
import { ACKNOWLEDGE_OUTBOX, DESCRIBE_PROMISE, DUE_SCHEDULES, DUE_TIMERS, PROMISE_PAGE, RELEASE_OUTBOX, TAKE_OUTBOX, TASK_PAGE } from "../src/sql/promise-scans.js";
import { pgTarget, testDatabase } from "./pg-target.js";
import { type PlanNode, nodes } from "./support/plans.js";

// The promise surface's scans and lookups read their indexes, never a growing table whole: the
// timer scans (deadlines, task timers, schedules), the outbox take, loads by id, by awaited
// promise and by branch, and the writes by id and by awaiter. A schema holds enough rows in every
// state for the planner's choice to mean something (ANALYZEd, enable_seqscan on); both the custom
// and the generic plan (what a prepared statement settles on) are checked. Then the deadline
// scan's cost, measured, must stay flat while pending promises grow from 1,000 to 1,000,000 with
// the number due fixed.

const target = await pgTarget("promise-explain.test.ts");
const url = target.url;
const NOW = 1_800_000_000_000;

const GROWING = new Set(["promises", "tasks", "callbacks", "listeners", "outbox", "promise_schedules"]);

/** Captures the statement a function of `sql/promise-rows.ts` would run, with its values, without running it. */
async function captured(run: (session: PromiseSession) => Promise<unknown>): Promise<{ text: string; values: readonly unknown[] }[]> {
  const out: { text: string; values: readonly unknown[] }[] = [];
  const query = async (statement: Statement, values: readonly unknown[] = []) => {
    out.push({ text: statement.text, values });
    return [];
  };
  const session: PromiseSession = {
    transactional: true,
    callerTransaction: false,
    step: async () => undefined,
    query,
    finish: async (statement, values) => void (await query(statement, values)),
    begun: true,
  };
  await run(session);
  return out;
}

describe.skipIf(url === undefined)(`postgres promise query plans (${target.reason})`, () => {
  const { pool, schema: newSchema } = testDatabase(target);
  const schema = newSchema("pexplain");
  const S = `"${schema}"`;
  const flatSchema = newSchema("pflat");
  let client: pg.PoolClient;
  const sql = new SqlCache(S);

  beforeAll(async () => {
    for (const name of [schema, flatSchema]) {
      const store = new PostgresPromiseStore({ pool, schema: name });
      await store.migrate();
      await store.close();
    }
    // 200,000 promises: most settled, the pending ones mostly far from their deadlines, half with
    // tasks (the settled ones' fulfilled), a fifth on 4,000 branches; callbacks, listeners, an
    // outbox mostly leased to the future (for 40 worker groups and 100 clients), and schedules
    // mostly not due.
    await pool.query(`
      INSERT INTO ${S}.promises (id, state, param, value, tags, timeout_at, created_at, settled_at, revision)
      SELECT 'p' || g, CASE WHEN g % 10 < 7 THEN 1 ELSE 0 END, '{}', '{}',
             CASE WHEN g % 5 = 0 THEN jsonb_build_object('resonate:target', 'poll://any@w', 'resonate:branch', 'b' || (g / 50))
                  ELSE '{"resonate:target":"poll://any@w"}'::jsonb END,
             CASE WHEN g % 1000 = 7 THEN ${NOW} - g ELSE ${NOW} + 3600000 + g * 100 END, ${NOW} - 86400000,
             CASE WHEN g % 10 < 7 THEN ${NOW} - 1000 END, 1
      FROM generate_series(1, 200000) g;
      INSERT INTO ${S}.tasks (id, state, version, resumes, pid, ttl, timer_at)
      SELECT 'p' || g, CASE WHEN g % 10 < 7 THEN 4 WHEN g % 10 = 7 THEN 1 ELSE 0 END, 1, 0,
             CASE WHEN g % 10 = 7 THEN 'w' END, CASE WHEN g % 10 = 7 THEN 60000 END,
             CASE WHEN g % 10 < 7 THEN NULL WHEN g % 2000 = 8 THEN ${NOW} - g ELSE ${NOW} + 60000 + g END
      FROM generate_series(2, 200000, 2) g;
      INSERT INTO ${S}.callbacks (awaited, awaiter) SELECT 'p' || (g * 3), 'p' || (g * 3 + 2) FROM generate_series(1, 60000) g;
      INSERT INTO ${S}.listeners (promise_id, address) SELECT 'p' || (g * 7), 'poll://uni@clients/c' || (g % 100) FROM generate_series(1, 25000) g;
      INSERT INTO ${S}.outbox (kind, id, address, version, available_at, revision, created_at, takes)
      SELECT g % 2, 'p' || g, CASE WHEN g % 2 = 0 THEN 'poll://any@w' || (g % 40) ELSE 'poll://uni@clients/c' || (g % 100) END, 1,
             CASE WHEN g % 500 = 0 THEN ${NOW} - g ELSE ${NOW} + 30000 + g END, g, ${NOW} - 60000, g % 3
      FROM generate_series(1, 80000) g;
      INSERT INTO ${S}.promise_schedules (id, cron, promise_id, promise_timeout, promise_param, promise_tags, created_at, next_run_at)
      SELECT 's' || g, '* * * * *', 's' || g || '.{{.timestamp}}', 60000, '{}', '{}', ${NOW}, CASE WHEN g % 100 = 0 THEN ${NOW} ELSE ${NOW} + g * 1000 END
      FROM generate_series(1, 20000) g;
      ANALYZE ${S}.promises; ANALYZE ${S}.tasks; ANALYZE ${S}.callbacks; ANALYZE ${S}.listeners; ANALYZE ${S}.outbox; ANALYZE ${S}.promise_schedules;
    `);
    client = await pool.connect();
  }, 300_000);

  // Before testDatabase's after-hook drops the schemas.
  afterAll(() => client?.release());

  function literal(value: unknown): string {
    if (value === null || value === undefined) return "NULL";
    if (Array.isArray(value)) {
      const items = value.map((v) => (v === null ? "NULL" : typeof v === "string" ? `"${v.replace(/["\\]/g, "\\$&")}"` : String(v)));
      return client.escapeLiteral(`{${items.join(",")}}`);
    }
    return client.escapeLiteral(String(value));
  }

  /** The plan of `text` with `values`, custom or generic; with `analyze`, run (in a rolled-back transaction) and measured. */
  async function plan(text: string, values: readonly unknown[], mode: "custom" | "generic", analyze = false): Promise<{ nodes: PlanNode[]; root: Record<string, unknown> }> {
    await client.query(`SET plan_cache_mode = ${mode === "custom" ? "force_custom_plan" : "force_generic_plan"}`);
    await client.query("DEALLOCATE ALL");
    await client.query(`PREPARE explained AS ${text}`);
    try {
      await client.query("BEGIN");
      const args = values.length > 0 ? `(${values.map(literal).join(", ")})` : "";
      const { rows } = await client.query(`EXPLAIN (FORMAT JSON${analyze ? ", ANALYZE, BUFFERS" : ""}) EXECUTE explained${args}`);
      const root = (rows[0]["QUERY PLAN"] as Record<string, unknown>[])[0]!;
      return { nodes: nodes(root["Plan"] as PlanNode), root };
    } finally {
      await client.query("ROLLBACK");
      await client.query("DEALLOCATE explained");
    }
  }

  const outline = (planNodes: PlanNode[]) => planNodes.map((n) => [n["Node Type"], n["Relation Name"], n["Index Name"]].filter(Boolean).join(" ")).join(" | ");

  function expectIndexed(planNodes: PlanNode[], ...indexes: string[]): void {
    const seqScans = planNodes.filter((n) => GROWING.has(n["Relation Name"] ?? "") && n["Node Type"] === "Seq Scan");
    expect(seqScans.length, `no sequential scan of a growing table in: ${outline(planNodes)}`).toBe(0);
    for (const index of indexes) expect(planNodes.map((n) => n["Index Name"]), `reads ${index}: ${outline(planNodes)}`).toContain(index);
  }

  const promise = (id: string): PromiseRow => ({ id, state: "pending", param: {}, value: {}, tags: {}, timeoutAt: NOW + 60_000, createdAt: NOW, settledAt: null });
  const task = (id: string): TaskRow => ({ id, state: "acquired", version: 1, resumes: 0, pid: "w", ttl: 60_000, timerAt: NOW + 60_000 });
  const load = async (keys: RowKey[]) => (await captured((session) => loadPromiseRows(session, sql, keys, new TransactionMemo())))[0]!;
  const apply = async (effects: Partial<PromiseEffects>, guards: RowGuards | null = null) =>
    (await captured((session) => {
      const memo = new TransactionMemo();
      memo.guards = guards;
      return applyPromiseEffects(session, sql, { ...NO_EFFECTS, ...effects }, memo);
    }))[0]!;

  for (const mode of ["custom", "generic"] as const) {
    it(`the timeout scan reads the pending-deadline and task-timer indexes (${mode} plan)`, async () => {
      expectIndexed((await plan(DUE_TIMERS(S), [NOW, 100], mode)).nodes, "promises_timeout", "tasks_timer");
    });

    it(`the outbox take reads the available-at index, filtered or not, locking only what passes; its acknowledgement and release the key (${mode} plan)`, async () => {
      expectIndexed((await plan(TAKE_OUTBOX(S), [NOW, 100, NOW + 30_000, true, [], []], mode)).nodes, "outbox_available");
      // A filter is a condition of the index scan, below the row locks (FOR UPDATE SKIP LOCKED):
      // a row the taker cannot deliver is passed over unlocked.
      const filtered = (await plan(TAKE_OUTBOX(S), [NOW, 100, NOW + 30_000, false, ["poll://any@w2"], ["poll://uni@clients/", "https://"]], mode)).nodes;
      expectIndexed(filtered, "outbox_available");
      const lockRows = filtered.find((n) => n["Node Type"] === "LockRows");
      expect(lockRows, `the take locks its rows: ${outline(filtered)}`).toBeDefined();
      const scan = nodes(lockRows!).find((n) => n["Index Name"] === "outbox_available");
      expect(scan, `the availability index is read below the row locks: ${outline(filtered)}`).toBeDefined();
      expect(scan!.Filter, "the address filter is applied by the index scan").toMatch(/address/);
      const refs = [[0, 1], ["p10", "p11"], ["poll://any@w10", "poll://uni@clients/c11"], [10, 11]];
      expectIndexed((await plan(ACKNOWLEDGE_OUTBOX(S), refs, mode)).nodes, "outbox_pkey");
      expectIndexed((await plan(RELEASE_OUTBOX(S), [...refs, NOW], mode)).nodes, "outbox_pkey");
    });

    it(`describePromise reads each table by its key or index (${mode} plan)`, async () => {
      const planNodes = (await plan(DESCRIBE_PROMISE(S), ["p21"], mode)).nodes;
      expectIndexed(planNodes, "promises_pkey", "tasks_pkey", "callbacks_pkey", "callbacks_awaiter", "listeners_pkey", "outbox_pkey");
    });

    it(`due schedules read the next-run index (${mode} plan)`, async () => {
      expectIndexed((await plan(DUE_SCHEDULES(S), [NOW, 100], mode)).nodes, "promise_schedules_next_run");
    });

    it(`a load by id locks promises and tasks by their keys; callbacks by awaited, listeners by promise (${mode} plan)`, async () => {
      const byId = await load([{ kind: "promise", id: "p10" }, { kind: "promise", id: "p11" }]);
      expectIndexed((await plan(byId.text, byId.values, mode)).nodes, "promises_pkey", "tasks_pkey");
      const chain = await load([{ kind: "promise", id: "p9" }, { kind: "awaiters", promiseId: "p9" }, { kind: "listeners", promiseId: "p9" }]);
      expectIndexed((await plan(chain.text, chain.values, mode)).nodes, "promises_pkey", "tasks_pkey", "callbacks_pkey", "listeners_pkey");
    });

    it(`a preload reads the branch index (${mode} plan)`, async () => {
      const branch = await load([{ kind: "branch", branch: "b42" }]);
      expectIndexed((await plan(branch.text, branch.values, mode)).nodes, "promises_branch");
    });

    it(`a settle's write finds rows by key and the callbacks of its task by the awaiter index (${mode} plan)`, async () => {
      const settle = await apply({
        promises: [{ row: { ...promise("p19"), state: "resolved", settledAt: NOW }, insert: false }],
        tasks: [{ row: { ...task("p19"), state: "fulfilled", pid: null, ttl: null, timerAt: null }, insert: false }],
        callbacksOnDeleted: ["p19"],
        callbacksOfDeleted: ["p19"],
        listenersDeleted: ["p19"],
        executesDeleted: ["p19"],
        outbox: [{ kind: "unblock", id: "p19", address: "poll://uni@clients/c1", availableAt: NOW }],
      });
      expectIndexed((await plan(settle.text, settle.values, mode)).nodes, "promises_pkey", "tasks_pkey", "callbacks_pkey", "callbacks_awaiter", "listeners_pkey", "outbox_pkey");
      const register = await apply({ callbacksAdded: [{ awaited: "p21", awaiter: "p22" }], listenersAdded: [{ promiseId: "p21", address: "poll://uni@clients/c2" }] });
      expectIndexed((await plan(register.text, register.values, mode)).nodes, "promises_pkey");
    });

    it(`a write decided on remembered rows locks them by key and checks the branch by its index (${mode} plan)`, async () => {
      const acquired = { ...task("p20"), version: 2, pid: "w2" };
      const one = await apply(
        { tasks: [{ row: acquired, insert: false }], executesDeleted: ["p20"] },
        { promises: [{ id: "p20", revision: 1 }], tasks: [{ ...task("p20"), state: "pending", pid: null, ttl: null }], absentTasks: [], branch: { name: "b0", members: ["p20:1"] } },
      );
      expectIndexed((await plan(one.text, one.values, mode)).nodes, "promises_pkey", "tasks_pkey", "promises_branch", "outbox_pkey");
      const several = await apply(
        { tasks: [{ row: acquired, insert: false }, { row: { ...acquired, id: "p22" }, insert: false }] },
        { promises: [{ id: "p20", revision: 1 }, { id: "p22", revision: 1 }], tasks: [task("p20"), task("p22")], absentTasks: ["p21"], branch: null },
      );
      expectIndexed((await plan(several.text, several.values, mode)).nodes, "promises_pkey", "tasks_pkey");
    });

    it(`search pages walk the keys from their cursors (${mode} plan)`, async () => {
      expectIndexed((await plan(PROMISE_PAGE(S), ["p5000", "{}", [0], NOW, 101, ""], mode)).nodes, "promises_pkey");
      // A prefix page walks the prefix's key range only: both bounds are index conditions.
      const prefixed = (await plan(PROMISE_PAGE(S, true), ["", "{}", null, NOW, 101, "p12", "p13"], mode)).nodes;
      expectIndexed(prefixed, "promises_pkey");
      const range = prefixed.find((n) => n["Index Name"] === "promises_pkey") as PlanNode & { "Index Cond"?: string };
      expect(range["Index Cond"], "both bounds of the prefix's range bound the key scan").toMatch(/<.*>=|>=.*</);
      expectIndexed((await plan(TASK_PAGE(S), ["p5000", [0], false, NOW, 101], mode)).nodes, "tasks_pkey");
    });
  }

  it("the deadline scan's cost stays flat from 1,000 to 1,000,000 pending promises, 100 of them due", async () => {
    const F = `"${flatSchema}"`;
    // No autovacuum on these tables: a vacuum that marks the due rows' pages all-visible makes each
    // row lock clear its visibility-map bit, one more page per row (206 instead of 106), and when it
    // runs depends on the machine's load, not on the scan.
    await pool.query(`ALTER TABLE ${F}.promises SET (autovacuum_enabled = off); ALTER TABLE ${F}.tasks SET (autovacuum_enabled = off)`);
    // 100 due deadlines, always the same; the rest pending far in the future.
    await pool.query(`INSERT INTO ${F}.promises (id, state, param, value, tags, timeout_at, created_at, revision)
                      SELECT 'due' || g, 0, '{}', '{}', '{}', ${NOW} - g, ${NOW} - 86400000, 1 FROM generate_series(1, 100) g`);
    // Tasks with timers too (none due): the same statement takes both kinds of timer.
    await pool.query(`INSERT INTO ${F}.tasks (id, state, version, resumes, timer_at)
                      SELECT 'f' || g, 0, 0, 0, ${NOW} + 60000 + g FROM generate_series(1, 10000) g`);
    const figures: { pending: number; ms: number; buffers: number; cost: number }[] = [];
    let pending = 100;
    for (const size of [1_000, 10_000, 100_000, 1_000_000]) {
      await pool.query(`INSERT INTO ${F}.promises (id, state, param, value, tags, timeout_at, created_at, revision)
                        SELECT 'f' || g, 0, '{}', '{}', '{}', ${NOW} + 3600000 + g, ${NOW}, 1 FROM generate_series(${pending - 100 + 1}, ${size - 100}) g`);
      pending = size;
      await pool.query(`ANALYZE ${F}.promises; ANALYZE ${F}.tasks`);
      const runs: { ms: number; buffers: number; cost: number }[] = [];
      for (let i = 0; i < 7; i++) {
        const { nodes: planNodes, root } = await plan(DUE_TIMERS(F), [NOW, 100], "generic", true);
        expectIndexed(planNodes, "promises_timeout", "tasks_timer");
        const top = root["Plan"] as PlanNode & { "Total Cost": number };
        runs.push({ ms: root["Execution Time"] as number, buffers: (top["Shared Hit Blocks"] ?? 0) + (top["Shared Read Blocks"] ?? 0), cost: top["Total Cost"] });
      }
      // The median run by pages touched; its time is reported, never asserted (a test does not
      // judge wall-clock time).
      runs.sort((a, b) => a.buffers - b.buffers);
      figures.push({ pending: size, ...runs[3]! });
    }
    console.info(
      `[deadline scan, 100 due, max 100, generic plan]\n${figures.map((f) => `${f.pending.toLocaleString("en")} pending: ${f.ms.toFixed(3)} ms, ${f.buffers} buffers, planner cost ${f.cost.toFixed(1)}`).join("\n")}`,
    );
    const [small, , , large] = figures;
    // Pages touched: the due entries' index pages and heap pages, not the pending ones behind them.
    expect(large!.buffers, "buffers touched at 1,000,000 vs 1,000 pending").toBeLessThanOrEqual(small!.buffers + 10);
  }, 600_000);
});
