// Diagnostics of PostgresPromiseStore on its own throwaway cluster (not part of `pnpm
// bench:promises`): the benchmark's lifecycles and fan-outs at one caller through a traced pool,
// then per operation kind the round trips and their client-side latency, and per statement
// (pg_stat_statements with planning time) calls, plans, plan and execution time, rows and WAL.
// The cluster runs PostgreSQL's defaults (fsync on) plus pg_stat_statements.
//
//   cd bench && npx tsx --conditions=@belay/source src/tools/probe-promises.ts [--lifecycles 2000] [--fanouts 100]
import { PostgresPromiseStore } from "@belay/postgres";
import pg from "pg";
import { log, throwawayCluster } from "../infra.js";
import { type PromiseTarget, fanOut, lifecycle } from "../promises/shapes.js";

const arg = (name: string, dflt: string): string => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1]! : dflt;
};
const LIFECYCLES = Number(arg("lifecycles", "2000"));
const FANOUTS = Number(arg("fanouts", "100"));

/** Statement kinds by their text: the first words, or the CTE names of a shaped statement. */
function kindOf(text: string): string {
  const t = text.replace(/\s+/g, " ").trim();
  if (/^(BEGIN|COMMIT|ROLLBACK)/i.test(t)) return t.split(" ")[0]!.toUpperCase();
  const ctes = [...t.matchAll(/(?:WITH|,) (\w+) AS (?:MATERIALIZED )?\(/gi)].map((m) => m[1]).slice(0, 6);
  return `${t.slice(0, 40)}${ctes.length ? ` [${ctes.join(",")}]` : ""} (${t.length} chars)`;
}

interface Stat {
  n: number;
  ms: number[];
}
const statements = new Map<string, Stat>();
/** One text and its values per statement kind, for EXPLAIN. */
const samples = new Map<string, { text: string; values: unknown[] }>();
const perOp = new Map<string, { ops: number; queries: number; ms: number[] }>();
let queriesInOp = 0;

const wrapped = new WeakSet<object>();

function tracedPool(pool: pg.Pool): pg.Pool {
  return new Proxy(pool, {
    get(target, prop, receiver) {
      if (prop !== "connect") return Reflect.get(target, prop, receiver);
      return async () => {
        const client = await target.connect();
        // The pool hands the same client out again: wrap its query once.
        if (wrapped.has(client)) return client;
        wrapped.add(client);
        const query = client.query.bind(client) as (config: unknown, values?: unknown) => Promise<unknown>;
        (client as unknown as { query: unknown }).query = async (config: unknown, values?: unknown) => {
          const text = typeof config === "string" ? config : (config as { text: string }).text;
          const kind = kindOf(text);
          if (!samples.has(kind) && typeof config === "object") samples.set(kind, { text, values: (config as { values?: unknown[] }).values ?? [] });
          const t = performance.now();
          try {
            return await query(config, values);
          } finally {
            queriesInOp++;
            const s = statements.get(kind) ?? { n: 0, ms: [] };
            s.n++;
            s.ms.push(performance.now() - t);
            statements.set(kind, s);
          }
        };
        return client;
      };
    },
  });
}

const pctl = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]! : 0;
};
const f2 = (x: number) => x.toFixed(3);

async function section(side: pg.Client, title: string, count: number, body: (target: PromiseTarget) => Promise<void>, target: PromiseTarget): Promise<string> {
  statements.clear();
  perOp.clear();
  await side.query("select pg_stat_statements_reset()");
  const t = performance.now();
  await body(target);
  const ms = performance.now() - t;
  const out = [`## ${title}`, "", `${count} in ${Math.round(ms)} ms (${(count / (ms / 1000)).toFixed(1)}/s)`, ""];
  out.push("| operation | calls | statements per call | p50 ms | p99 ms |", "|---|---:|---:|---:|---:|");
  for (const [kind, s] of perOp) out.push(`| ${kind} | ${s.ops} | ${(s.queries / s.ops).toFixed(2)} | ${f2(pctl(s.ms, 50))} | ${f2(pctl(s.ms, 99))} |`);
  out.push("", "| statement (client side) | calls | p50 ms | p99 ms | total ms |", "|---|---:|---:|---:|---:|");
  for (const [kind, s] of [...statements].sort((a, b) => b[1].ms.reduce((x, y) => x + y, 0) - a[1].ms.reduce((x, y) => x + y, 0))) {
    out.push(`| ${kind.replaceAll("|", "\\|")} | ${s.n} | ${f2(pctl(s.ms, 50))} | ${f2(pctl(s.ms, 99))} | ${Math.round(s.ms.reduce((a, b) => a + b, 0))} |`);
  }
  const { rows } = await side.query(
    `select calls, plans, total_plan_time, total_exec_time, rows, wal_records, wal_bytes, query
       from pg_stat_statements where dbid = (select oid from pg_database where datname = 'probe')
        and query not ilike '%pg_stat_statements%'
      order by total_plan_time + total_exec_time desc limit 12`,
  );
  out.push("", "| statement (server: pg_stat_statements) | calls | plans | plan ms/plan | exec ms/call | rows/call | WAL bytes/call |", "|---|---:|---:|---:|---:|---:|---:|");
  for (const r of rows) {
    out.push(
      `| ${kindOf(r.query as string).replaceAll("|", "\\|")} | ${r.calls} | ${r.plans} | ${f2(Number(r.total_plan_time) / Math.max(1, Number(r.plans)))} | ${f2(Number(r.total_exec_time) / Number(r.calls))} | ${(Number(r.rows) / Number(r.calls)).toFixed(1)} | ${Math.round(Number(r.wal_bytes) / Number(r.calls))} |`,
    );
  }
  out.push("");
  return out.join("\n");
}

/**
 * EXPLAIN (ANALYZE, BUFFERS) of one sample of each statement kind under its generic plan (the
 * plan the store's prepared statements settle on), in a transaction rolled back: the locks and
 * writes it makes are undone.
 */
async function explainAll(side: pg.Client): Promise<string> {
  const out = ["## Plans of the hot statements (generic plan, EXPLAIN ANALYZE, rolled back)", ""];
  const literal = (v: unknown): string => {
    if (v === null || v === undefined) return "NULL";
    const text = Array.isArray(v) ? `{${v.map((x) => (x === null ? "NULL" : `"${String(x).replaceAll("\\", "\\\\").replaceAll('"', '\\"')}"`)).join(",")}}` : typeof v === "object" ? JSON.stringify(v) : String(v);
    return side.escapeLiteral(text);
  };
  for (const [kind, { text, values }] of samples) {
    if (/^(BEGIN|COMMIT|ROLLBACK)/.test(kind)) continue;
    try {
      await side.query("BEGIN");
      await side.query("SET LOCAL plan_cache_mode = force_generic_plan");
      await side.query(`PREPARE probe_stmt AS ${text}`);
      const args = values.length ? `(${values.map(literal).join(", ")})` : "";
      await side.query("SAVEPOINT analyzed");
      let rows: Record<string, string>[];
      let how = "ANALYZE";
      try {
        rows = (await side.query(`EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING ON) EXECUTE probe_stmt${args}`)).rows;
      } catch {
        // Run again, an insert meets its own row (the sample's id exists): the plan alone.
        await side.query("ROLLBACK TO SAVEPOINT analyzed");
        rows = (await side.query(`EXPLAIN (COSTS OFF) EXECUTE probe_stmt${args}`)).rows;
        how = "plan only: the sample's insert conflicts when run again";
      }
      out.push(`### ${kind} (${how})`, "", "```", ...rows.map((r) => r["QUERY PLAN"]!), "```", "");
    } catch (error) {
      out.push(`### ${kind}`, "", `EXPLAIN failed: ${error instanceof Error ? error.message : String(error)}`, "");
    } finally {
      await side.query("ROLLBACK").catch(() => undefined);
      await side.query("DEALLOCATE ALL").catch(() => undefined);
    }
  }
  return out.join("\n");
}

const { cluster, startWithStatements, cleanup } = throwawayCluster("belay-probe-promises-", Number(arg("pg-port", "55434")));
try {
  const { url, side } = await startWithStatements("probe");
  const pool = new pg.Pool({ connectionString: url, max: 10 });
  pool.on("error", () => undefined);
  const store = new PostgresPromiseStore({ pool: tracedPool(pool) });
  await store.migrate();
  samples.clear();
  const target: PromiseTarget = {
    name: "postgres",
    handle: async (request, now) => {
      queriesInOp = 0;
      const t = performance.now();
      const answer = await store.handle(request, now);
      const s = perOp.get(request.kind) ?? { ops: 0, queries: 0, ms: [] };
      s.ops++;
      s.queries += queriesInOp;
      s.ms.push(performance.now() - t);
      perOp.set(request.kind, s);
      return answer;
    },
    close: () => store.close(),
  };
  // Warm-up: generic plans chosen, caches filled.
  for (let i = 0; i < 200; i++) await lifecycle(target, `warm-${i}`, null);
  for (let i = 0; i < 10; i++) await fanOut(target, `warmf-${i}`, null);
  const report = [`# PostgresPromiseStore probe — ${new Date().toISOString()}`, "", `${cluster.version}; every setting default plus pg_stat_statements; one caller.`, ""];
  report.push(await section(side, "lifecycles (create → acquire → fulfill)", LIFECYCLES, async (t) => { for (let i = 0; i < LIFECYCLES; i++) await lifecycle(t, `lc-${i}`, null); }, target));
  report.push(await section(side, "fan-outs (root + 10 children, 34 operations)", FANOUTS, async (t) => { for (let i = 0; i < FANOUTS; i++) await fanOut(t, `fo-${i}`, null); }, target));
  report.push(await explainAll(side));
  console.log(report.join("\n"));
  await store.close();
  await pool.end();
  await side.end();
} catch (error) {
  log(`error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
  process.exitCode = 1;
} finally {
  cleanup();
}
