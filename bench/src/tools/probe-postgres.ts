// Diagnostic probe of @belay/postgres (not part of `pnpm bench`): runs Belay's hot path on its
// own throwaway cluster with an instrumented pool and store, and reports
//  - per store operation: calls, jobs per call (claim: asked vs got), round-trip time;
//  - per SQL statement: calls, time per call (p50/p95), total;
//  - EXPLAIN (ANALYZE, BUFFERS) of the hot statements, taken from live calls (executed on a side
//    connection inside a rolled-back transaction just before the real call, so the plan sees the
//    real data and parameters).
//
//   pnpm --filter @belay/bench exec tsx --conditions=@belay/source src/tools/probe-postgres.ts [--jobs 20000] [--concurrency 10,50] [--out file.md]
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { JobStore } from "@belay/contract";
import { Client, Worker, defineJob, request } from "@belay/core";
import { PostgresStore } from "@belay/postgres";
import pg from "pg";
import { log, throwawayCluster } from "../infra.js";

const arg = (name: string, dflt: string): string => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1]! : dflt;
};
const JOBS = Number(arg("jobs", "20000"));
const CONC = arg("concurrency", "10,50").split(",").map(Number);
const OUT = arg("out", "");
/** Extra session settings for the store's connections, e.g. "-c plan_cache_mode=force_generic_plan". */
const PG_OPTIONS = arg("pg-options", "");
const now = () => performance.timeOrigin + performance.now();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// ---- statement-level tracing --------------------------------------------------------------

function kindOf(text: string): string {
  if (text.includes("claimed AS (")) return "claim";
  if (text.includes("ended AS (")) return "reportOutcomes";
  if (text.includes("renewed AS (")) return "heartbeat";
  if (text.includes("pg_notify")) return "notify (hint)";
  if (/^\s*LISTEN/i.test(text)) return "LISTEN";
  if (/INSERT INTO\s+"?\w+"?\.jobs/i.test(text) || text.includes("inserted AS (")) return "enqueue (insert jobs)";
  if (/^\s*(BEGIN|COMMIT|ROLLBACK)/i.test(text)) return text.trim().split(/\s/)[0]!.toUpperCase();
  return text.replace(/\s+/g, " ").trim().slice(0, 70);
}

interface Stat {
  n: number;
  ms: number[];
}
const stats = new Map<string, Stat>();
const texts = new Map<string, { text: string; values: unknown[] }>();
const explainWanted = new Set<string>();
const explains: { kind: string; label: string; plan: string }[] = [];
let explainLabel = "";
let side: pg.Client | null = null;

function record(map: Map<string, Stat>, key: string, ms: number): void {
  const s = map.get(key) ?? { n: 0, ms: [] };
  s.n++;
  s.ms.push(ms);
  map.set(key, s);
}

async function explain(kind: string, text: string, values: unknown[]): Promise<void> {
  if (side === null) return;
  await side.query("BEGIN");
  try {
    const { rows } = await side.query({ text: `EXPLAIN (ANALYZE, BUFFERS, TIMING ON) ${text}`, values });
    explains.push({ kind, label: explainLabel, plan: rows.map((r) => r["QUERY PLAN"]).join("\n") });
  } catch (e) {
    explains.push({ kind, label: explainLabel, plan: `EXPLAIN failed: ${String(e)}` });
  } finally {
    await side.query("ROLLBACK");
  }
}

function tracedPool(pool: pg.Pool) {
  return {
    async connect() {
      const client = await pool.connect();
      const query = client.query.bind(client) as (c: unknown) => Promise<pg.QueryResult>;
      const traced = Object.create(client) as pg.PoolClient;
      (traced as unknown as { query: unknown }).query = async (config: { text: string; values?: unknown[] }) => {
        const kind = kindOf(config.text);
        if (!texts.has(kind)) texts.set(kind, { text: config.text, values: config.values ?? [] });
        if (explainWanted.has(kind)) {
          explainWanted.delete(kind);
          await explain(kind, config.text, config.values ?? []);
        }
        const t = now();
        try {
          return await query(config);
        } finally {
          record(stats, kind, now() - t);
        }
      };
      return traced;
    },
    end: () => pool.end(),
  };
}

// ---- operation-level tracing --------------------------------------------------------------

interface OpStat {
  calls: number;
  asked: number;
  got: number;
  ms: number[];
  sizes: Map<number, number>;
}
const ops = new Map<string, OpStat>();

function tracedStore(store: JobStore): JobStore {
  const op = (name: string) => {
    let s = ops.get(name);
    if (!s) ops.set(name, (s = { calls: 0, asked: 0, got: 0, ms: [], sizes: new Map() }));
    return s;
  };
  return new Proxy(store, {
    get(target, prop, receiver) {
      const v = Reflect.get(target, prop, receiver) as unknown;
      if (typeof v !== "function") return v;
      const name = String(prop);
      if (!["claim", "reportOutcomes", "heartbeat", "enqueue", "expireLeases", "purgeTerminal", "listSchedules"].includes(name)) return v.bind(target);
      return async (req: Record<string, unknown>) => {
        const s = op(name);
        const t = now();
        const res = (await (v as (r: unknown) => Promise<unknown>).call(target, req)) as unknown;
        s.ms.push(now() - t);
        s.calls++;
        let size = 0;
        if (name === "claim") {
          s.asked += req["max"] as number;
          size = (res as { jobs: unknown[] }).jobs.length;
        } else if (name === "reportOutcomes") size = (req["reports"] as unknown[]).length;
        else if (name === "heartbeat") size = (req["leases"] as unknown[]).length;
        else if (name === "enqueue") size = (req["jobs"] as unknown[]).length;
        s.got += size;
        s.sizes.set(size, (s.sizes.get(size) ?? 0) + 1);
        return res;
      };
    },
  });
}

// ---- report -------------------------------------------------------------------------------

const pctl = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]! : 0;
};
const f1 = (x: number) => (Math.round(x * 10) / 10).toString();

async function serverStats(jobs: number): Promise<string> {
  if (side === null) return "";
  const { rows } = await side.query(`
    select calls, plans, total_plan_time, total_exec_time, rows, shared_blks_hit, shared_blks_dirtied, wal_records, wal_bytes, query
    from pg_stat_statements where dbid = (select oid from pg_database where datname = current_database())
      and query not ilike '%pg_stat_statements%' and query not ilike 'EXPLAIN%'
    order by total_plan_time + total_exec_time desc limit 8`);
  const out = ["", "| server: statement (pg_stat_statements) | calls | plans | plan ms/call | exec ms/call | WAL records per 1k jobs | WAL kB per 1k jobs | dirtied blocks per 1k jobs |", "|---|---:|---:|---:|---:|---:|---:|---:|"];
  for (const r of rows) {
    const per1k = (x: number) => f1((Number(x) / jobs) * 1000);
    out.push(`| ${kindOf(r.query as string)} | ${r.calls} | ${r.plans} | ${(Number(r.total_plan_time) / Math.max(1, Number(r.plans))).toFixed(3)} | ${(Number(r.total_exec_time) / Number(r.calls)).toFixed(3)} | ${per1k(r.wal_records)} | ${f1(Number(r.wal_bytes) / 1024 / jobs * 1000)} | ${per1k(r.shared_blks_dirtied)} |`);
  }
  await side.query("select pg_stat_statements_reset()");
  return out.join("\n");
}

function section(title: string, wallMs: number, jobs: number): string {
  const out = [`## ${title}`, "", `${jobs} jobs in ${f1(wallMs)} ms = ${Math.round(jobs / (wallMs / 1000))} jobs/s`, ""];
  out.push("| store operation | calls | jobs/call | claim asked/call | p50 ms | p95 ms | batch-size histogram (size×calls, top 8) |", "|---|---:|---:|---:|---:|---:|---|");
  for (const [name, s] of ops) {
    const hist = [...s.sizes.entries()].sort((a, b) => b[1] - a[1]).slice(0, 8).map(([k, v]) => `${k}×${v}`).join(" ");
    out.push(`| ${name} | ${s.calls} | ${f1(s.got / s.calls)} | ${name === "claim" ? f1(s.asked / s.calls) : ""} | ${f1(pctl(s.ms, 50))} | ${f1(pctl(s.ms, 95))} | ${hist} |`);
  }
  out.push("", "| SQL statement | calls | per 1k jobs | p50 ms | p95 ms | total ms |", "|---|---:|---:|---:|---:|---:|");
  for (const [k, s] of [...stats.entries()].sort((a, b) => b[1].ms.reduce((x, y) => x + y, 0) - a[1].ms.reduce((x, y) => x + y, 0))) {
    out.push(`| ${k} | ${s.n} | ${f1((s.n / jobs) * 1000)} | ${f1(pctl(s.ms, 50))} | ${f1(pctl(s.ms, 95))} | ${Math.round(s.ms.reduce((a, b) => a + b, 0))} |`);
  }
  out.push("");
  stats.clear();
  ops.clear();
  return out.join("\n");
}

// ---- main ---------------------------------------------------------------------------------

const { startWithStatements, cleanup } = throwawayCluster("belay-probe-", Number(arg("pg-port", "55433")));

const report: string[] = [`# @belay/postgres probe — ${new Date().toISOString()}`, "", `jobs ${JOBS}, concurrency ${CONC.join(",")}`, ""];
try {
  const started = await startWithStatements("probe");
  const url = started.url;
  side = started.side;
  const raw = new pg.Pool({ connectionString: PG_OPTIONS ? `${url}&options=${encodeURIComponent(PG_OPTIONS)}` : url, max: 10 });
  raw.on("error", () => undefined);

  let onJob: () => void = () => undefined;
  const noop = defineJob<{ i: number }>({ name: "bench.noop", queue: "bench", handler: () => onJob() });

  const fresh = async () => {
    await side!.query("drop schema if exists belay cascade");
    const store = new PostgresStore({ pool: tracedPool(raw), schema: "belay" });
    await store.migrate();
    return store;
  };

  /** Counters of the store operations, the statements and pg_stat_statements, back to zero. */
  const resetCounters = async () => {
    stats.clear();
    ops.clear();
    await side!.query("select pg_stat_statements_reset()");
  };
  /** An enqueue phase on a fresh store, timed and reported under `title`, its insert explained. */
  const enqueuePhase = async (title: string, label: string, enqueue: (client: Client) => Promise<void>) => {
    const store = await fresh();
    const client = new Client({ store: tracedStore(store) });
    await resetCounters();
    explainWanted.add("enqueue (insert jobs)");
    explainLabel = label;
    const t = now();
    await enqueue(client);
    report.push(section(title, now() - t, JOBS), await serverStats(JOBS), "");
    await store.close();
  };

  await enqueuePhase("enqueue one by one (10 in flight)", "single enqueue", async (client) => {
    let next = 0;
    await Promise.all(Array.from({ length: 10 }, async () => {
      while (next < JOBS) {
        next++;
        await client.enqueue(noop, { i: next });
      }
    }));
  });
  await enqueuePhase("enqueue batches of 1000", "batch of 1000", async (client) => {
    for (let s = 0; s < JOBS; s += 1000) await client.enqueueMany(Array.from({ length: Math.min(1000, JOBS - s) }, (_, k) => request(noop, { i: s + k })));
  });
  for (const c of CONC) {
    const store = await fresh();
    const client = new Client({ store });
    for (let s = 0; s < JOBS; s += 1000) await client.enqueueMany(Array.from({ length: Math.min(1000, JOBS - s) }, (_, k) => request(noop, { i: s + k })));
    await side.query("vacuum analyze belay.jobs");
    await resetCounters();
    let done = 0;
    let first = 0;
    onJob = () => {
      if (done++ === 0) first = now();
      if (done === 200) {
        explainLabel = `pool ${c}, mid-run`;
        explainWanted.add("claim");
        explainWanted.add("reportOutcomes");
      }
    };
    const worker = new Worker({ store: tracedStore(store), jobs: [noop], groups: [{ name: "bench", queues: ["bench"], poolSize: c }] });
    await worker.start();
    while (done < JOBS) await sleep(5);
    for (;;) {
      const { rows } = await side.query("select count(*)::int as n from belay.jobs where state = 3");
      if (rows[0].n >= JOBS) break;
      await sleep(5);
    }
    const wall = now() - first;
    await worker.stop();
    report.push(section(`process, poolSize ${c}`, wall, JOBS), await serverStats(JOBS), "");
    await store.close();
  }
  await raw.end();
  report.push("## EXPLAIN (ANALYZE, BUFFERS) of live hot statements", "");
  for (const e of explains) report.push(`### ${e.kind} (${e.label})`, "", "```", e.plan, "```", "");
  report.push("## Statement texts", "");
  for (const [k, v] of texts) if (["claim", "reportOutcomes", "enqueue (insert jobs)", "heartbeat"].includes(k)) report.push(`### ${k}`, "", "```sql", v.text.trim(), "```", "");
} catch (e) {
  log(`probe failed: ${e instanceof Error ? e.stack : String(e)}`);
  process.exitCode = 1;
} finally {
  await side?.end().catch(() => undefined);
  cleanup();
}
const md = report.join("\n");
if (OUT) writeFileSync(OUT, md);
console.log(md);
