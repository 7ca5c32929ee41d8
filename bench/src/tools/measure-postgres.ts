// Quick before/after measurement of @belay/postgres's processing hot path (not part of
// `pnpm bench`). For each round and each pool size: a fresh schema, N no-op jobs enqueued in
// batches of 1,000 (not timed), then one Worker (library defaults, one group, poolSize C) runs
// until every job is `succeeded`. Per trial it records:
//  - jobs/s (first handler start → every job succeeded in the store, as the bench does);
//  - client CPU (this process) and server CPU (the private cluster's process tree) per 1k jobs;
//  - WAL bytes per 1k jobs and commits (xact_commit) per 1k jobs;
//  - WAL records and full-page images per job; jobs-table updates and how many were HOT;
//  - claim / report sizes and round trips (a proxy over the store);
//  - pg_stat_statements: calls, plans, plan and execution time per call of the hot statements.
//
// It starts its own throwaway PostgreSQL 15 cluster (defaults: fsync on; plus pg_stat_statements
// with track_planning), so WAL and statement statistics are this run's only.
//
// Options: --shape probe (default: one store loads and processes, CHECKPOINT before processing,
// so every first page write is a full-page image) or bench (a store of its own loads, as `pnpm
// bench` does, no CHECKPOINT); --analyze on (VACUUM ANALYZE after loading: the statistics a busy
// table has once autovacuum has seen it) or off (default, as the bench); --history to measure
// what the history policy costs (never to compare systems: the default is what users get).
//
//   cd bench && npx tsx --conditions=@belay/source src/tools/measure-postgres.ts [--jobs 10000] [--concurrency 10,50] [--rounds 3] [--shape bench] [--analyze on] [--label before] [--json out.json] [--walstats on] [--fillfactor 50]
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { Client, Worker, defineJob, request } from "@belay/core";
import { PostgresStore } from "@belay/postgres";
import type pg from "pg";
import { log, processTreeCpuMs, throwawayCluster, walPosition, walSince } from "../infra.js";
import { type StoreCallStats, tracedJobStore } from "../traced-store.js";

const arg = (name: string, dflt: string): string => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1]! : dflt;
};
const JOBS = Number(arg("jobs", "10000"));
const CONC = arg("concurrency", "10,50").split(",").map(Number);
const ROUNDS = Number(arg("rounds", "3"));
const LABEL = arg("label", "");
const JSON_OUT = arg("json", "");
const STATEMENTS = arg("statements", "on") === "on";
/** `on`: VACUUM ANALYZE the loaded table before processing (steady-state statistics); the bench does not. */
const ANALYZE = arg("analyze", "off") === "on";
/** An experiment: the jobs table's fillfactor for this run (migration 5 sets 50). */
const FILLFACTOR = Math.trunc(Number(arg("fillfactor", "0"))) || null;
/** `on`: print the processing window's WAL by record type (pg_walinspect): which writes the bytes are. */
const WAL_STATS = arg("walstats", "off") === "on";
/** The store's history policy (default: the library default, transitions and failure detail). Only for measuring what history costs. */
/** `bench`: load through a store of its own, closed before the worker's store opens, and no CHECKPOINT before processing (as `pnpm bench` does). */
const SHAPE = arg("shape", "probe");
const HISTORY = arg("history", "transitionsAndFailureDetail") as "off" | "transitions" | "transitionsAndFailureDetail";
const now = () => performance.timeOrigin + performance.now();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
// ---- main ---------------------------------------------------------------------------------

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const pctl = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]! : 0;
};
const r1 = (x: number) => Math.round(x * 10) / 10;

const { cluster, startWithStatements, cleanup } = throwawayCluster("belay-measure-", Number(arg("pg-port", "55441")));

interface Trial {
  round: number;
  concurrency: number;
  jobsPerS: number;
  clientCpuPer1k: number;
  serverCpuPer1k: number;
  walKBPer1k: number;
  walRecordsPerJob: number;
  walFpiPer1k: number;
  commitsPer1k: number;
  jobUpdatesPer1k: number;
  hotPct: number;
  /** The jobs table's heap (no indexes) after processing, kB per 1,000 jobs. */
  jobsHeapKBPer1k: number;
  claimsPer1k: number;
  jobsPerClaim: number;
  claimP50: number;
  reportsPer1k: number;
  jobsPerReport: number;
  reportP50: number;
  statements: { kind: string; calls: number; plans: number; planMs: number; execMs: number; walKBPer1k: number }[];
}
const trials: Trial[] = [];

function kindOf(text: string): string {
  if (text.includes("claimed AS (") || /claim/i.test(text.slice(0, 200))) return "claim";
  if (text.includes("ended AS (")) return "reportOutcomes";
  if (text.includes("renewed AS (")) return "heartbeat";
  if (text.includes("expired AS (")) return "expireLeases";
  if (text.includes("pg_notify")) return "notify";
  if (text.includes("victims AS")) return "purge";
  return text.replace(/\s+/g, " ").trim().slice(0, 60);
}

/** Logs the WAL written since `from`, by record type, per job, largest first. */
async function logWalStats(side: pg.Client, from: string): Promise<void> {
  for (const r of (await walSince(side, from)).slice(0, 14)) {
    log(`   wal ${r.kind.padEnd(24)} ${r1(r.n / JOBS)} records/job  ${Math.round(r.bytes / JOBS)} B/job  fpi ${Math.round(r.fpiBytes / JOBS)} B/job`);
  }
}

try {
  const { url, side } = await startWithStatements("m");
  let onJob: () => void = () => undefined;
  const noop = defineJob<{ i: number }>({ name: "bench.noop", queue: "bench", handler: () => onJob() });

  for (let round = 1; round <= ROUNDS; round++) {
    for (const c of CONC) {
      await side.query("drop schema if exists belay cascade");
      let store = new PostgresStore({ connectionString: url, schema: "belay", historyPolicy: HISTORY });
      await store.migrate();
      if (FILLFACTOR) await side.query(`alter table belay.jobs set (fillfactor = ${FILLFACTOR})`);
      const client = new Client({ store });
      for (let s = 0; s < JOBS; s += 1000) {
        await client.enqueueMany(Array.from({ length: Math.min(1000, JOBS - s) }, (_, k) => request(noop, { i: s + k })));
      }
      if (ANALYZE) await side.query("vacuum analyze belay.jobs");
      if (SHAPE === "bench") {
        await store.close();
        store = new PostgresStore({ connectionString: url, schema: "belay", historyPolicy: HISTORY });
      } else {
        await side.query("checkpoint");
      }
      const ops = new Map<string, StoreCallStats>();
      let done = 0;
      let first = 0;
      let cpu0 = process.cpuUsage();
      let srv0 = 0;
      const readCounters = async () => {
        const { rows } = await side.query(`
          select pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::float8 as wal,
                 (select wal_records from pg_stat_wal)::float8 as records, (select wal_fpi from pg_stat_wal)::float8 as fpi,
                 (select xact_commit from pg_stat_database where datname = current_database())::float8 as commits,
                 (select coalesce(sum(n_tup_upd), 0) from pg_stat_user_tables where schemaname = 'belay' and relname = 'jobs')::float8 as upd,
                 (select coalesce(sum(n_tup_hot_upd), 0) from pg_stat_user_tables where schemaname = 'belay' and relname = 'jobs')::float8 as hot`);
        return rows[0] as { wal: number; records: number; fpi: number; commits: number; upd: number; hot: number };
      };
      await side.query("select pg_stat_statements_reset()");
      await side.query("select pg_stat_reset()");
      await side.query("select pg_stat_reset_shared('wal')");
      // WAL, commits and table counters cover the worker's whole life (start to stop); CPU and
      // the rate cover first handler start → every job succeeded.
      const base = await readCounters();
      const baseLsn = await walPosition(side);
      const started = new Promise<void>((resolve) => {
        onJob = () => {
          if (done++ === 0) {
            first = now();
            cpu0 = process.cpuUsage();
            srv0 = processTreeCpuMs(cluster.pid!);
            resolve();
          }
        };
      });
      const worker = new Worker({ store: tracedJobStore(store, ["claim", "reportOutcomes", "heartbeat", "expireLeases"], ops), jobs: [noop], groups: [{ name: "bench", queues: ["bench"], poolSize: c }] });
      await worker.start();
      await started;
      while (done < JOBS) await sleep(5);
      let end = 0;
      for (;;) {
        const { rows } = await side.query("select count(*)::int as n from belay.jobs where state = 3");
        if (rows[0].n >= JOBS) {
          end = now();
          break;
        }
        await sleep(5);
      }
      const cpu = process.cpuUsage(cpu0);
      const srv = processTreeCpuMs(cluster.pid!) - srv0;
      await worker.stop();
      await store.close();
      await sleep(1200); // stats flush (backends flush at exit)
      const after = await readCounters();
      const heapBytes = Number((await side.query("select pg_relation_size('belay.jobs')::float8 as b")).rows[0].b);
      if (WAL_STATS) await logWalStats(side, baseLsn);
      const per1k = (x: number) => (x / JOBS) * 1000;
      const statements: Trial["statements"] = [];
      if (STATEMENTS) {
        const { rows } = await side.query(`
          select calls, plans, total_plan_time, total_exec_time, wal_bytes, query from pg_stat_statements
          where dbid = (select oid from pg_database where datname = current_database()) and query ilike '%belay%'
            and query not ilike '%pg_stat%' and query not ilike '%count(*)::int as n%'
          order by total_plan_time + total_exec_time desc limit 6`);
        for (const r of rows) {
          statements.push({
            kind: kindOf(r.query as string),
            calls: Number(r.calls),
            plans: Number(r.plans),
            planMs: r1((Number(r.total_plan_time) / Math.max(1, Number(r.plans))) * 1000) / 1000,
            execMs: r1((Number(r.total_exec_time) / Math.max(1, Number(r.calls))) * 1000) / 1000,
            walKBPer1k: r1(per1k(Number(r.wal_bytes) / 1024)),
          });
        }
      }
      const claim = ops.get("claim") ?? { calls: 0, jobs: 0, ms: [] };
      const report = ops.get("reportOutcomes") ?? { calls: 0, jobs: 0, ms: [] };
      const trial: Trial = {
        round,
        concurrency: c,
        jobsPerS: Math.round(JOBS / ((end - first) / 1000)),
        clientCpuPer1k: Math.round(per1k((cpu.user + cpu.system) / 1000)),
        serverCpuPer1k: Math.round(per1k(srv)),
        walKBPer1k: Math.round(per1k((after.wal - base.wal) / 1024)),
        walRecordsPerJob: r1((after.records - base.records) / JOBS),
        walFpiPer1k: Math.round(per1k(after.fpi - base.fpi)),
        commitsPer1k: Math.round(per1k(after.commits - base.commits)),
        jobUpdatesPer1k: Math.round(per1k(after.upd - base.upd)),
        hotPct: Math.round(((after.hot - base.hot) / Math.max(1, after.upd - base.upd)) * 100),
        jobsHeapKBPer1k: Math.round(per1k(heapBytes / 1024)),
        claimsPer1k: Math.round(per1k(claim.calls)),
        jobsPerClaim: r1(claim.jobs / Math.max(1, claim.calls)),
        claimP50: r1(pctl(claim.ms, 50)),
        reportsPer1k: Math.round(per1k(report.calls)),
        jobsPerReport: r1(report.jobs / Math.max(1, report.calls)),
        reportP50: r1(pctl(report.ms, 50)),
        statements,
      };
      trials.push(trial);
      log(`round ${round} pool ${c}: ${JSON.stringify({ ...trial, statements: undefined })}`);
      if (STATEMENTS) for (const s of statements) log(`   ${s.kind}: calls ${s.calls} plans ${s.plans} plan ${s.planMs} ms exec ${s.execMs} ms WAL ${s.walKBPer1k} kB/1k`);
      onJob = () => undefined;
    }
  }
  await side.end();
  const keys = ["jobsPerS", "clientCpuPer1k", "serverCpuPer1k", "walKBPer1k", "walRecordsPerJob", "walFpiPer1k", "commitsPer1k", "jobUpdatesPer1k", "hotPct", "jobsHeapKBPer1k", "claimsPer1k", "jobsPerClaim", "claimP50", "reportsPer1k", "jobsPerReport", "reportP50"] as const;
  const lines = [`# measure-postgres ${LABEL} — ${new Date().toISOString()}, ${JOBS} jobs, ${ROUNDS} rounds, analyze ${ANALYZE ? "on" : "off"}, history ${HISTORY}, shape ${SHAPE}`, "", `| metric | ${CONC.map((c) => `pool ${c} median (min–max)`).join(" | ")} |`, `|---|${CONC.map(() => "---:").join("|")}|`];
  for (const k of keys) {
    const cells = CONC.map((c) => {
      const xs = trials.filter((t) => t.concurrency === c).map((t) => t[k]);
      return `${r1(median(xs))} (${Math.min(...xs)}–${Math.max(...xs)})`;
    });
    lines.push(`| ${k} | ${cells.join(" | ")} |`);
  }
  console.log(lines.join("\n"));
  if (JSON_OUT) writeFileSync(JSON_OUT, JSON.stringify({ label: LABEL, jobs: JOBS, trials }, null, 2));
} catch (e) {
  log(`measure failed: ${e instanceof Error ? e.stack : String(e)}`);
  process.exitCode = 1;
} finally {
  cleanup();
}
