// One system of `pnpm bench:promises`, in its own child process (started by main.ts with
// BENCH_PROMISES_CONFIG). For each shape and caller count, a cell: a fresh store (a new SQLite
// file, a fresh PostgreSQL schema, a new SDK server), the live roots if any, a warm-up, then the
// measured window. Writes one `@@bench {json}` line per cell on stdout; asserts nothing.
import { join } from "node:path";
import type { PromiseStore } from "@belay/contract";
import pg from "pg";
import { processTreeCpuMs } from "../infra.js";
import { latencyPercentiles, p50PerKind, round2 } from "../stats.js";
import type { PromiseChildConfig } from "./config.js";
import { sdkServerTarget } from "./sdk-server.js";
import { type OpTimes, type PromiseTarget, SHAPES, type ShapeName, createLiveRoots, runShape } from "./shapes.js";

const cfg = JSON.parse(process.env["BENCH_PROMISES_CONFIG"] ?? "null") as PromiseChildConfig | null;
if (cfg === null) throw new Error("BENCH_PROMISES_CONFIG is not set: the runner is started by src/promises/main.ts");
const config: PromiseChildConfig = cfg;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const say = (message: string) => process.stderr.write(`${message}\n`);

function emit(record: Record<string, unknown>): void {
  process.stdout.write(`@@bench ${JSON.stringify({ system: config.system, run: config.run, live_roots: config.liveRoots, ...record })}\n`);
}

function storeTarget(store: PromiseStore): PromiseTarget {
  return { name: store.capabilities.name, handle: (request, now) => store.handle(request, now), close: () => store.close() };
}

/**
 * A PostgreSQL pool as the store makes its own from `connectionString`: its default size, and
 * pipelining connections (`pg`'s `pipeline: true`: BEGIN goes out with an operation's load and
 * COMMIT with its write) — every connection opened before the window.
 */
async function openPool(connectionString: string): Promise<pg.Pool> {
  const pool = new pg.Pool({ connectionString, max: 10, ...(process.env["BENCH_PG_PIPELINE"] === "0" ? {} : { pipeline: true }) } as pg.PoolConfig);
  pool.on("error", () => undefined);
  const clients = await Promise.all(Array.from({ length: 10 }, () => pool.connect()));
  for (const client of clients) client.release();
  return pool;
}

interface ServerCounters {
  readonly commits: number;
  readonly walBytes: number;
  readonly cpuMs: number;
}

/** Commits of the benchmark's database, the cluster's WAL position and its CPU time (read from outside the store's connections). */
async function serverCounters(admin: pg.Client): Promise<ServerCounters> {
  const { rows } = await admin.query(
    `select (select xact_commit from pg_stat_database where datname = $1)::float8 as commits,
            pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::float8 as wal`,
    [config.pg!.database],
  );
  return { commits: rows[0].commits, walBytes: rows[0].wal, cpuMs: processTreeCpuMs(config.pg!.postmasterPid) };
}

/** Runs lifecycles of `shape` on `callers` lanes until `seconds` have passed and `minLifecycles` completed (or the cap). */
async function drive(target: PromiseTarget, shape: ShapeName, callers: number, prefix: string, seconds: number, minLifecycles: number, capSeconds: number, latencies: number[] | null, times: OpTimes | null) {
  let completed = 0;
  const t0 = performance.now();
  const lanes = Array.from({ length: callers }, async (_, lane) => {
    for (let k = 0; ; k++) {
      const elapsed = (performance.now() - t0) / 1000;
      if (elapsed >= capSeconds || (elapsed >= seconds && completed >= minLifecycles)) return;
      const started = performance.now();
      await runShape(shape, target, `${prefix}-${lane}-${k}`, times);
      latencies?.push(performance.now() - started);
      completed++;
    }
  });
  await Promise.all(lanes);
  return { completed, ms: performance.now() - t0 };
}

async function cell(shape: ShapeName, callers: number): Promise<void> {
  const tag = `${config.system} ${shape} @${callers}${config.liveRoots ? ` (${config.liveRoots} live roots)` : ""}`;
  let target: PromiseTarget | null = null;
  let admin: pg.Client | null = null;
  let pool: pg.Pool | null = null;
  const extra: Record<string, unknown> = {};
  try {
    // ---- a fresh store ----
    let reopen: (() => Promise<PromiseTarget>) | null = null;
    if (config.system === "sqlite") {
      const { SqlitePromiseStore } = await import("@belay/sqlite");
      const path = join(config.scratch, `promises-${config.label}-run${config.run}-${shape}-c${callers}.db`);
      const store = new SqlitePromiseStore({ path });
      await store.migrate();
      target = storeTarget(store);
      extra["sqlite"] = { path, synchronous: "normal (default)", journal: "WAL" };
    } else if (config.system === "postgres") {
      const { PostgresPromiseStore } = await import("@belay/postgres");
      const pgc = config.pg!;
      admin = new pg.Client({ connectionString: pgc.adminConnectionString });
      await admin.connect();
      const owner = new pg.Client({ connectionString: pgc.connectionString });
      await owner.connect();
      await owner.query("drop schema if exists belay cascade");
      await owner.end();
      pool = await openPool(pgc.connectionString);
      // BENCH_PG_ROW_CACHE=0 turns the store's row cache off (every settling operation loads), for A/B runs.
      const cacheSetting = process.env["BENCH_PG_ROW_CACHE"];
      // BENCH_PG_GROUP_COMMIT=0 turns group commit off (every operation commits on its own), for A/B runs.
      const groupSetting = process.env["BENCH_PG_GROUP_COMMIT"];
      const options = {
        ...(cacheSetting === undefined ? {} : { rowCache: Number(cacheSetting) }),
        ...(groupSetting === undefined ? {} : { groupCommit: Number(groupSetting) }),
      };
      const store = new PostgresPromiseStore({ pool, ...options });
      await store.migrate();
      target = storeTarget(store);
      extra["postgres"] = { pipeline: process.env["BENCH_PG_PIPELINE"] !== "0", rowCache: cacheSetting === undefined ? "default (4096)" : Number(cacheSetting), groupCommit: groupSetting === undefined ? "default (2)" : Number(groupSetting) };
      // The measured window gets a pool of its own, opened after the warm-up's backends have
      // exited (and so flushed their statistics): the commit count is the window's.
      reopen = async () => {
        pool = await openPool(pgc.connectionString);
        return storeTarget(new PostgresPromiseStore({ pool, ...options }));
      };
    } else {
      target = sdkServerTarget();
    }

    // ---- live roots, warm-up ----
    if (config.liveRoots > 0) {
      const t = performance.now();
      await createLiveRoots(target, config.liveRoots);
      say(`  ${tag}: ${config.liveRoots} live roots created in ${Math.round(performance.now() - t)} ms`);
    }
    if (config.warmupSeconds > 0) await drive(target, shape, callers, "warm", config.warmupSeconds, 0, config.warmupSeconds * 3, null, null);
    if (reopen !== null) {
      await target.close();
      await pool!.end();
      await sleep(300);
      target = null;
    }
    if (admin !== null) await admin.query("checkpoint");
    await sleep(config.cellPauseMs);
    const before = admin === null ? null : await serverCounters(admin);
    if (reopen !== null) target = await reopen();
    const sizesBefore = "sizes" in target! ? (target as ReturnType<typeof sdkServerTarget>).sizes() : null;

    // ---- the window ----
    const latencies: number[] = [];
    const times: OpTimes = new Map();
    const cpu0 = process.cpuUsage();
    const tStart = performance.timeOrigin + performance.now();
    const { completed, ms } = await drive(target!, shape, callers, "m", config.seconds, config.minLifecycles, config.seconds * 4, latencies, times);
    const cpu = process.cpuUsage(cpu0);
    const tEnd = performance.timeOrigin + performance.now();
    if (sizesBefore !== null) extra["sdk_sizes"] = { before: sizesBefore, after: (target as ReturnType<typeof sdkServerTarget>).sizes() };
    if (reopen !== null) {
      await target!.close();
      await pool!.end();
      pool = null;
      target = null;
      await sleep(300);
    }
    if (admin !== null && before !== null) {
      const after = await serverCounters(admin);
      extra["server"] = {
        commits: after.commits - before.commits,
        commits_per_lifecycle: round2((after.commits - before.commits) / completed),
        wal_bytes: after.walBytes - before.walBytes,
        wal_kb_per_lifecycle: round2((after.walBytes - before.walBytes) / 1024 / completed),
        cpu_ms: Math.round(after.cpuMs - before.cpuMs),
        cpu_ms_per_lifecycle: round2((after.cpuMs - before.cpuMs) / completed),
      };
    }
    const ops = completed * SHAPES[shape].ops;
    const clientCpuMs = (cpu.user + cpu.system) / 1000;
    const record = {
      shape,
      callers,
      lifecycles: completed,
      ops,
      ms: Math.round(ms),
      lifecycles_per_s: round2(completed / (ms / 1000)),
      ops_per_s: round2(ops / (ms / 1000)),
      ...latencyPercentiles(latencies),
      op_p50_ms: p50PerKind(times),
      commits_per_lifecycle: SHAPES[shape].commits,
      client_cpu_ms: Math.round(clientCpuMs),
      client_cpu_ms_per_lifecycle: round2(clientCpuMs / completed),
      t_start: tStart,
      t_end: tEnd,
      ...extra,
    };
    emit(record);
    say(`  ${tag}: ${record.lifecycles_per_s} lifecycles/s, ${record.ops_per_s} ops/s, p50 ${record.p50_ms} ms, p99 ${record.p99_ms} ms (${completed} lifecycles)`);
  } catch (error) {
    const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    say(`  ${tag} FAILED: ${message}`);
    emit({ shape, callers, error: message });
  } finally {
    await target?.close().catch(() => undefined);
    await (pool as pg.Pool | null)?.end().catch(() => undefined);
    await admin?.end().catch(() => undefined);
  }
}

for (const shape of config.shapes) for (const callers of config.callers) await cell(shape, callers);
