import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PostgresStore } from "../src/index.js";
import { CLAIM } from "../src/sql/claim.js";
import { INSERT_JOBS } from "../src/sql/enqueue.js";
import { HEARTBEAT, LOCK_EXPIRED_LEASES, RELEASE } from "../src/sql/leases.js";
import { ADVANCE, WALK } from "../src/sql/observers.js";
import { REPORT_OUTCOMES } from "../src/sql/outcomes.js";
import { listJobsQuery } from "../src/sql/reads.js";
import { PURGE, SWEEP_FEED } from "../src/sql/retention.js";
import { LIST_SCHEDULES, MOVE_CURSOR } from "../src/sql/schedules.js";
import { facetTagsQuery } from "../src/sql/tags.js";
import { pgTarget, testDatabase } from "./pg-target.js";
import { type PlanNode, nodes } from "./support/plans.js";

// The time-ordered scans (due claims, lease expiry, schedule minting, retention) must read their
// indexes, in bounded batches, never the table. The table is loaded with enough rows in every
// state that the planner's choice is meaningful, then ANALYZEd; enable_seqscan stays on. Both
// the custom plan (first executions) and the generic plan (what a prepared statement settles
// on) are checked.
//
// The hot statements must also be planned once per connection, not on every call: PostgreSQL
// keeps a prepared statement's generic plan only when it costs no more than the custom plans it
// tried, so their parameters are kept out of the estimates. And their plans must not depend on
// statistics being fresh: a second schema is ANALYZEd right after a bulk enqueue (nothing leased
// yet, the shape every benchmark and every deploy starts from) and then has jobs leased, which
// once made outcome batches and heartbeats walk the whole leased-jobs index.

const target = await pgTarget("explain.test.ts");
const url = target.url;
const NOW = 1_800_000_000_000;

describe.skipIf(url === undefined)(`postgres query plans (${target.reason})`, () => {
  const { pool, schema: newSchema } = testDatabase(target);
  const schema = newSchema("explain");
  const S = `"${schema}"`;
  const staleSchema = newSchema("explain_stale");
  const STALE = `"${staleSchema}"`;
  let client: pg.PoolClient;

  beforeAll(async () => {
    const store = new PostgresStore({ pool, schema });
    await store.migrate();
    await store.close();
    // 120,000 jobs over 20 queues: most of them finished (the usual shape of a busy queue
    // table between purges), some due, some in the future, some leased, some waiting.
    await pool.query(`
      INSERT INTO ${S}.queues (queue) SELECT 'q' || g FROM generate_series(0, 19) g;
      INSERT INTO ${S}.jobs (id, job_name, queue, state, due_at, attempt, lease_owner, lease_expires_at, enqueued_at,
                             terminal_at, terminal_cause, schedule_id, payload, transition_count)
      SELECT 'job-' || g, 'bench.job', 'q' || (g % 20),
             CASE WHEN g % 100 < 80 THEN 3 WHEN g % 100 < 84 THEN 4 WHEN g % 100 < 86 THEN 5 WHEN g % 100 < 87 THEN 6
                  WHEN g % 100 < 97 THEN 0 WHEN g % 100 < 99 THEN 2 ELSE 1 END,
             ${NOW} - 86400000 + g * 1000,
             CASE WHEN g % 100 BETWEEN 97 AND 98 THEN 1 ELSE 0 END,
             CASE WHEN g % 100 BETWEEN 97 AND 98 THEN 'w' END,
             CASE WHEN g % 100 BETWEEN 97 AND 98 THEN ${NOW} - 60000 + g * 10 END,
             ${NOW} - 86400000,
             CASE WHEN g % 100 < 87 THEN ${NOW} - 86400000 + g * 1000 END,
             CASE WHEN g % 100 < 87 THEN 'done' END,
             CASE WHEN g % 10 = 0 THEN 'sched-' || (g % 50) END,
             '{"n":' || g || '}', 1
      FROM generate_series(1, 120000) g;
      INSERT INTO ${S}.schedules (id, cron, time_zone, job_name, queue, payload, tags, catch_up, no_overlap, cursor, created_at, updated_at)
      SELECT 'sched-' || g, '* * * * *', 'UTC', 'bench.job', 'q0', '{}', '[]', 'skip', false, ${NOW}, ${NOW}, ${NOW}
      FROM generate_series(0, 4999) g;
      INSERT INTO ${S}.feed (xid, first_position, at, positions, job_seqs, ordinals, states, attempts)
      SELECT (1000 + g / 3)::text::xid8, min(g), ${NOW}, array_agg(g ORDER BY g), array_agg(g ORDER BY g), array_agg(1),
             array_agg((g % 7)::int2 ORDER BY g), array_agg(1)
      FROM generate_series(1, 120000) g GROUP BY g / 3;
      INSERT INTO ${S}.observers (id, states, cursor_xid, cursor_position)
      VALUES ('alerts', '{5}', '30000', 90000);
      INSERT INTO ${S}.job_tags (job_seq, key, value) SELECT g, 'tenant', 't' || (g % 20) FROM generate_series(1, 120000, 3) g;
      ANALYZE ${S}.jobs; ANALYZE ${S}.queues; ANALYZE ${S}.schedules; ANALYZE ${S}.feed; ANALYZE ${S}.job_tags;
    `);
    // Statistics from before the first claim: 50,000 scheduled jobs in one queue, ANALYZEd, then
    // 5,000 of them leased (by 50 workers) without a new ANALYZE.
    const stale = new PostgresStore({ pool, schema: staleSchema });
    await stale.migrate();
    await stale.close();
    await pool.query(`
      INSERT INTO ${STALE}.queues (queue) VALUES ('bulk');
      INSERT INTO ${STALE}.jobs (id, job_name, queue, state, due_at, enqueued_at, payload, transition_count)
      SELECT 'job-' || g, 'bench.job', 'bulk', 0, ${NOW} - 60000 + g, ${NOW} - 60000, '{"n":' || g || '}', 1
      FROM generate_series(1, 50000) g;
      INSERT INTO ${STALE}.feed (xid, first_position, at, positions, job_seqs, ordinals, states, attempts)
      SELECT (1000 + g)::text::xid8, g, ${NOW}, ARRAY[g], ARRAY[g], ARRAY[1], ARRAY[0::int2], ARRAY[0] FROM generate_series(1, 50000) g;
      ANALYZE ${STALE}.jobs; ANALYZE ${STALE}.feed; ANALYZE ${STALE}.queues;
      UPDATE ${STALE}.jobs SET state = 2, attempt = 1, lease_owner = 'w' || (seq % 50), lease_expires_at = ${NOW} + 60000 + seq,
                               transition_count = 2
      WHERE seq <= 5000;
    `);
    client = await pool.connect();
  });

  // Before testDatabase's after-hook drops the schemas.
  afterAll(() => client?.release());

  /** The plan of `text` with `values`: custom (values bound) or generic (as a prepared statement settles). */
  async function plan(text: string, values: unknown[], mode: "custom" | "generic"): Promise<PlanNode[]> {
    await client.query(`SET plan_cache_mode = ${mode === "custom" ? "force_custom_plan" : "force_generic_plan"}`);
    await client.query("DEALLOCATE ALL");
    const args = values.map((v) => literal(v)).join(", ");
    await client.query(`PREPARE explained AS ${text}`);
    const { rows } = await client.query(`EXPLAIN (FORMAT JSON) EXECUTE explained${values.length > 0 ? `(${args})` : ""}`);
    await client.query("DEALLOCATE explained");
    return nodes((rows[0]["QUERY PLAN"] as { Plan: PlanNode }[])[0]!.Plan);
  }

  /**
   * Runs `text` as one named prepared statement `times` times (each in a rolled-back
   * transaction, so the data stays as loaded) under the default plan_cache_mode, and returns how
   * PostgreSQL planned the executions.
   */
  let settlings = 0;
  async function planCounts(text: string, values: unknown[], times: number): Promise<{ generic: number; custom: number }> {
    await client.query("RESET plan_cache_mode");
    // A new name each time: pg remembers which names it prepared on this connection.
    const name = `settling_${++settlings}`;
    for (let i = 0; i < times; i++) {
      await client.query("BEGIN");
      try {
        await client.query({ name, text, values });
      } finally {
        await client.query("ROLLBACK");
      }
    }
    const { rows } = await client.query("SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE name = $1", [name]);
    return { generic: Number(rows[0].generic_plans), custom: Number(rows[0].custom_plans) };
  }

  /** An SQL literal of unknown type, so PostgreSQL coerces it to the parameter's type. */
  function literal(value: unknown): string {
    if (value === null) return "NULL";
    if (Array.isArray(value)) {
      const items = value.map((v) => (v === null ? "NULL" : typeof v === "string" ? `"${v.replace(/["\\]/g, "\\$&")}"` : String(v)));
      return client.escapeLiteral(`{${items.join(",")}}`);
    }
    return client.escapeLiteral(String(value));
  }

  /** A one-line outline of a plan, for failure messages. */
  function outline(planNodes: PlanNode[]): string {
    return planNodes.map((n) => [n["Node Type"], n["Relation Name"], n["Index Name"]].filter(Boolean).join(" ")).join(" | ");
  }

  /** The tables that grow with the number of jobs: none may be read whole. */
  const GROWING = new Set(["jobs", "feed", "failure_details", "job_tags", "job_outputs", "job_edges"]);

  function expectIndexed(planNodes: PlanNode[], index: string): void {
    const seqScans = planNodes.filter((n) => GROWING.has(n["Relation Name"] ?? "") && n["Node Type"] === "Seq Scan");
    expect(seqScans.length, `no sequential scan of a growing table in: ${outline(planNodes)}`).toBe(0);
    expect(planNodes.map((n) => n["Index Name"]), `reads ${index}: ${outline(planNodes)}`).toContain(index);
  }

  for (const mode of ["custom", "generic"] as const) {
    it(`claim reads the due-jobs index (${mode} plan)`, async () => {
      const values = [["q3", "q7"], [], 32, NOW, "w1", 60_000, true, 64];
      expectIndexed(await plan(CLAIM(S), values, mode), "jobs_due");
    });

    it(`lease expiry reads the leased-jobs index, for named queues and for all (${mode} plan)`, async () => {
      expectIndexed(await plan(LOCK_EXPIRED_LEASES(S), [["q1", "q2"], NOW, 32], mode), "jobs_leased");
      expectIndexed(await plan(LOCK_EXPIRED_LEASES(S), [null, NOW, 32], mode), "jobs_leased");
    });

    it(`retention reads each class's terminal-time index (${mode} plan)`, async () => {
      expectIndexed(await plan(PURGE(S, "3, 4"), [NOW - 3_600_000, 500], mode), "jobs_ended_succeeded_cancelled");
      expectIndexed(await plan(PURGE(S, "5, 6"), [NOW - 3_600_000, 500], mode), "jobs_ended_dead_quarantined");
    });

    it(`minting moves a cursor by primary key and probes live instances by the schedule index (${mode} plan)`, async () => {
      const cas = await plan(MOVE_CURSOR(S), ["sched-7", NOW, NOW + 60_000, [NOW + 1000], 32], mode);
      expect(cas.map((n) => n["Index Name"]), outline(cas)).toContain("schedules_pkey");
      expectIndexed(await plan(LIST_SCHEDULES(S), [], mode), "jobs_schedule");
    });

    it(`an observer walks the feed from its cursor by the (xid, first_position) key (${mode} plan)`, async () => {
      expectIndexed(await plan(WALK(S), ["alerts", 32, 64], mode), "feed_pkey");
      expectIndexed(await plan(ADVANCE(S), ["alerts", 64], mode), "feed_pkey");
    });

    it(`the purge finds its victims' feed rows, and the sweep walks the feed from its cursor, by the feed's key (${mode} plan)`, async () => {
      expectIndexed(await plan(PURGE(S, "3, 4"), [NOW - 3_600_000, 500], mode), "feed_pkey");
      expectIndexed(await plan(SWEEP_FEED(S), [500], mode), "feed_pkey");
    });

    // The hot path besides claims: none of it may scan a growing table either.
    const ids = Array.from({ length: 32 }, (_, i) => `job-${i * 100 + 97}`);
    it(`an outcome batch finds its jobs by id (${mode} plan)`, async () => {
      const n = ids.length;
      const column = <T>(v: T) => Array.from({ length: n }, () => v);
      const values = [ids, column("w"), column(1), column(0), column(null), column(null), column(null), column(null), column(null), column(true), NOW, true, 64, true, 32];
      expectIndexed(await plan(REPORT_OUTCOMES(S), values, mode), "jobs_id_key");
    });

    it(`a heartbeat and a release find their jobs by id (${mode} plan)`, async () => {
      expectIndexed(await plan(HEARTBEAT(S), [ids, ids.map(() => 1), "w", NOW, 60_000], mode), "jobs_id_key");
      expectIndexed(await plan(RELEASE(S), [ids, ids.map(() => 1), "w", NOW, true, 64], mode), "jobs_id_key");
    });

    it(`with statistics from before the first claim, the hot path still probes by key (${mode} plan)`, async () => {
      const leased = Array.from({ length: 32 }, (_, i) => `job-${i * 150 + 1}`);
      const n = leased.length;
      const column = <T>(v: T) => Array.from({ length: n }, () => v);
      const owner = (id: string) => `w${Number(id.slice(4)) % 50}`;
      const noLeasedWalk = (planNodes: PlanNode[]) =>
        expect(planNodes.map((x) => x["Index Name"]), `no walk of the leased-jobs index: ${outline(planNodes)}`).not.toContain("jobs_leased");
      const claim = await plan(CLAIM(STALE), [["bulk"], [], 32, NOW, "w1", 60_000, true, 64], mode);
      expectIndexed(claim, "jobs_due");
      const report = await plan(
        REPORT_OUTCOMES(STALE),
        [leased, leased.map(owner), column(1), column(0), column(null), column(null), column(null), column(null), column(null), column(true), NOW, true, 64, true, 32],
        mode,
      );
      expectIndexed(report, "jobs_id_key");
      noLeasedWalk(report);
      const heartbeat = await plan(HEARTBEAT(STALE), [leased, column(1), "w1", NOW, 60_000], mode);
      expectIndexed(heartbeat, "jobs_id_key");
      noLeasedWalk(heartbeat);
      const release = await plan(RELEASE(STALE), [leased, column(1), "w1", NOW, true, 64], mode);
      expectIndexed(release, "jobs_id_key");
      noLeasedWalk(release);
      expectIndexed(await plan(LOCK_EXPIRED_LEASES(STALE), [["bulk"], NOW + 61_000, 32], mode), "jobs_leased");
    });

    it(`an enqueue batch checks ids and parents by index (${mode} plan)`, async () => {
      const n = 100;
      const jobs = Array.from({ length: n }, (_, i) => ({ i: `fresh-${i}`, n: "bench.job", q: "q1", p: "{}", d: NOW, s: 0, ...(i === 1 ? { a: ["job-5"] } : {}) }));
      const values = [JSON.stringify(jobs), NOW, true, 0, JSON.stringify([{ c: "fresh-1", p: "job-5" }])];
      expectIndexed(await plan(INSERT_JOBS(S), values, mode), "jobs_id_key");
    });

    it(`an enqueue batch of parents and children is priced below jit_above_cost (${mode} plan)`, async () => {
      // JIT compiling the insert costs more than a small batch's whole statement.
      const jobs = Array.from({ length: 100 }, (_, i) => ({ i: `jit-${i}`, n: "bench.job", q: "q1", p: "{}", d: NOW, s: 1, r: 2, a: ["job-5", "job-6"] }));
      const edges = jobs.flatMap((j) => j.a.map((p) => ({ c: j.i, p })));
      const [root] = await plan(INSERT_JOBS(S), [JSON.stringify(jobs), NOW, true, 0, JSON.stringify(edges)], mode);
      const { rows } = await client.query("SELECT current_setting('jit_above_cost')::float8 AS jit");
      expect(root!["Total Cost"]).toBeLessThan(rows[0].jit);
    });
  }

  // Monitoring statements are built per call and planned with their values (custom plans only).
  it("a listing or a facet by ids starts from the id index, whatever else the filter names", async () => {
    const ids = ["job-5", "job-1234", "job-99999", "missing"];
    const requests = [
      { ids },
      { ids, states: ["scheduled" as const], queues: ["q5"], order: "newestFirst" as const },
      { ids: Array.from({ length: 50 }, (_, i) => `job-${i * 2_000 + 3}`), limit: 10 },
      { ids, scheduleId: "sched-5", tags: [{ key: "tenant", value: "t5" }] },
    ];
    for (const request of requests) {
      const { text, values } = listJobsQuery(S, request, request.limit ?? 50);
      expectIndexed(await plan(text, values, "custom"), "jobs_id_key");
    }
    const facet = facetTagsQuery(S, { key: "tenant", scope: { ids, queues: ["q5"] } });
    expectIndexed(await plan(facet.text, facet.values, "custom"), "jobs_id_key");
  });

  it("claims, outcome batches and heartbeats settle on their generic plan: planned once per connection", async () => {
    // Five custom plans, then the generic one for good — whatever the batch sizes and however
    // much work is due (a claim that PostgreSQL re-planned on every call spent more time
    // planning than executing).
    const ids = Array.from({ length: 32 }, (_, i) => `job-${i * 100 + 97}`);
    const column = <T>(v: T, n = ids.length) => Array.from({ length: n }, () => v);
    const reportValues = (k: number) => [
      ids.slice(0, k), column("w", k), column(1, k), column(0, k), column(null, k), column(null, k), column(null, k),
      column(null, k), column(null, k), column(true, k), NOW, true, 64, true, 32,
    ];
    const settled = { generic: 5, custom: 5 };
    expect(await planCounts(CLAIM(S), [["q3"], [], 1, NOW, "w1", 60_000, true, 64], 10), "claim of one job, one queue").toEqual(settled);
    expect(await planCounts(CLAIM(S), [["q3", "q7", "q9"], [], 32, NOW, "w1", 60_000, false, 64], 10), "claim of 32, three queues").toEqual(settled);
    expect(await planCounts(CLAIM(STALE), [["bulk"], [], 10, NOW, "w1", 60_000, true, 64], 10), "claim with stale statistics").toEqual(settled);
    expect(await planCounts(REPORT_OUTCOMES(S), reportValues(1), 10), "one outcome").toEqual(settled);
    expect(await planCounts(REPORT_OUTCOMES(S), reportValues(32), 10), "32 outcomes").toEqual(settled);
    expect(await planCounts(HEARTBEAT(S), [ids, column(1), "w", NOW, 60_000], 10), "heartbeat").toEqual(settled);
  });

  it("an observer whose cursor is deep in one transaction's many feed rows reads a few rows from the cursor's on", async () => {
    // One transaction that made 2,000 statements (add_job from a trigger on a bulk insert), and an
    // observer whose cursor is on the 1,000th, asking for 8 deliveries: the walk reads a few feed
    // rows from the cursor's row on. Starting at the transaction's first row would read 1,000
    // before it; sorting everything after the cursor would read the other 1,000. (xid 3, the
    // first normal one, is below any horizon.)
    const BIG = 1_000_000;
    await pool.query(`
      INSERT INTO ${S}.feed (xid, first_position, at, positions, job_seqs, ordinals, states, attempts)
      SELECT '3'::xid8, ${BIG} + 3 * i, ${NOW}, ARRAY[${BIG} + 3 * i, ${BIG} + 3 * i + 1, ${BIG} + 3 * i + 2], ARRAY[1, 2, 3],
             ARRAY[1, 1, 1], ARRAY[5, 5, 5]::int2[], ARRAY[1, 1, 1]
      FROM generate_series(0, 1999) i;
      INSERT INTO ${S}.observers (id, states, cursor_xid, cursor_position) VALUES ('deep', '{5}', '3', ${BIG} + 3 * 1000 + 1);
      ANALYZE ${S}.feed;`);
    try {
      for (const mode of ["custom", "generic"] as const) {
        await client.query(`SET plan_cache_mode = ${mode === "custom" ? "force_custom_plan" : "force_generic_plan"}`);
        await client.query("DEALLOCATE ALL");
        await client.query(`PREPARE deep AS ${WALK(S)}`);
        const { rows } = await client.query(`EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE deep('deep', 8, 64)`);
        await client.query("DEALLOCATE deep");
        const planNodes = nodes((rows[0]["QUERY PLAN"] as { Plan: PlanNode }[])[0]!.Plan);
        const feedRead = planNodes
          .filter((n) => n["Relation Name"] === "feed")
          .reduce((sum, n) => sum + Number(n["Actual Rows"] ?? 0) * Number(n["Actual Loops"] ?? 1), 0);
        expect(feedRead, `${mode} plan, feed rows read: ${outline(planNodes)}`).toBeLessThan(50);
        // The cursor's advance (nothing delivered yet: the next entry blocks it) reads as few.
        await client.query(`PREPARE advance AS ${ADVANCE(S)}`);
        const { rows: advanced } = await client.query(`EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE advance('deep', 64)`);
        await client.query("DEALLOCATE advance");
        const advanceNodes = nodes((advanced[0]["QUERY PLAN"] as { Plan: PlanNode }[])[0]!.Plan);
        const advanceRead = advanceNodes
          .filter((n) => n["Relation Name"] === "feed")
          .reduce((sum, n) => sum + Number(n["Actual Rows"] ?? 0) * Number(n["Actual Loops"] ?? 1), 0);
        expect(advanceRead, `${mode} plan, feed rows the advance read: ${outline(advanceNodes)}`).toBeLessThan(50);
      }
    } finally {
      await pool.query(`DELETE FROM ${S}.feed WHERE xid = '3'; DELETE FROM ${S}.observers WHERE id = 'deep'; ANALYZE ${S}.feed;`);
    }
  });
});
