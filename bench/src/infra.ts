// The throwaway servers: a PostgreSQL 15 cluster (initdb'd in the scratch folder, unix socket
// only, every setting default except where it listens; the same cluster code as the tests', from
// @belay/conformance/postgres) and a private Redis on 127.0.0.1 with AOF everysec. Both are
// started by this process and stopped by PID, also on error and ctrl-c.
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  type PostgresClusterStartOptions, PostgresCluster as SharedPostgresCluster, findPostgresBin, throwawayPostgresCluster,
} from "@belay/conformance/postgres";
import { Redis } from "ioredis";
import pg from "pg";

export const log = (msg: string): void => {
  const t = new Date().toISOString().slice(11, 19);
  process.stderr.write(`[bench ${t}] ${msg}\n`);
};

function run(cmd: string, args: string[], opts: { env?: NodeJS.ProcessEnv; timeoutMs?: number } = {}): string {
  const r = spawnSync(cmd, args, { encoding: "utf8", env: opts.env ?? process.env, timeout: opts.timeoutMs ?? 120_000 });
  if (r.error) throw new Error(`${cmd} ${args.join(" ")}: ${r.error.message}`);
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(" ")} exited ${r.status}: ${(r.stderr || r.stdout).trim().slice(-2000)}`);
  return r.stdout;
}

/** The server binaries: `$PGBIN`, PostgreSQL 15's Debian folder, then wherever the shared lookup finds them. */
export function findPgBin(): string {
  const preferred = [process.env["PGBIN"], "/usr/lib/postgresql/15/bin"].find((c) => c && existsSync(join(c, "pg_ctl")));
  const bin = preferred ?? findPostgresBin();
  if (bin === undefined) throw new Error("PostgreSQL server binaries not found: install postgresql-15 or set PGBIN to the folder holding pg_ctl and initdb");
  return bin;
}

function warnUnless15(version: string): void {
  if (!/\b15\./.test(version)) log(`warning: expected PostgreSQL 15, found ${version}`);
}

/**
 * The benchmark's cluster in `<scratch>/pg`: the tests' cluster of `@belay/conformance/postgres`,
 * every setting default except where it listens (fsync=on, synchronous_commit=on,
 * shared_buffers=128MB, max_connections=100; no TCP listener, a unix socket in the scratch folder).
 */
export class PostgresCluster extends SharedPostgresCluster {
  constructor(scratch: string, port: number, bin: string) {
    super(join(scratch, "pg"), port, bin, log);
  }

  /** `serverOptions`: extra `-c name=value` settings (the harness passes none: defaults only). */
  override start(databases: readonly string[] | PostgresClusterStartOptions = [], serverOptions = ""): void {
    super.start(Array.isArray(databases) ? { databases, serverOptions } : (databases as PostgresClusterStartOptions));
    warnUnless15(this.version);
  }

  /** `CHECKPOINT`: writes every dirty page now, so the next system starts on a clean cluster. */
  checkpoint(): void {
    run("psql", ["-qAt", "-d", "postgres", "-c", "checkpoint"], { env: this.env });
  }
}

/** Whether `pid` runs (a zombie -- exited, not yet reaped by this process -- does not). */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return false;
  }
}

export class RedisServer {
  proc: ChildProcess | null = null;
  pid: number | null = null;
  version = "";

  constructor(
    readonly dir: string,
    readonly port: number,
  ) {}

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    mkdirSync(this.dir, { recursive: true });
    this.version = run("redis-server", ["--version"]).trim();
    // AOF with fsync every second = BullMQ's production persistence advice; RDB snapshots off so
    // background saves do not perturb the runs; noeviction as BullMQ requires. Loopback only.
    this.proc = spawn(
      "redis-server",
      [
        "--bind", "127.0.0.1", "--port", String(this.port), "--protected-mode", "yes", "--dir", this.dir,
        "--save", "", "--appendonly", "yes", "--appendfsync", "everysec", "--maxmemory-policy", "noeviction",
        "--daemonize", "no", "--logfile", join(this.dir, "redis.log"),
      ],
      { detached: true, stdio: "ignore" },
    );
    this.pid = this.proc.pid ?? null;
    this.proc.on("exit", (code, signal) => {
      if (this.pid !== null) log(`redis exited early (code ${code}, signal ${signal}); see ${join(this.dir, "redis.log")}`);
      this.pid = null;
    });
    const client = new Redis({ host: "127.0.0.1", port: this.port, lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0 });
    client.on("error", () => undefined);
    for (let i = 0; ; i++) {
      try {
        await client.connect();
        if ((await client.ping()) === "PONG") break;
      } catch {
        client.disconnect();
      }
      if (i > 100 || this.pid === null) throw new Error(`redis-server did not answer on 127.0.0.1:${this.port}; see ${join(this.dir, "redis.log")}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    client.disconnect();
    log(`redis up: pid ${this.pid}, 127.0.0.1:${this.port} (${this.version.split(" ").slice(0, 3).join(" ")})`);
  }

  stop(): void {
    const pid = this.pid;
    if (pid === null) return;
    this.pid = null;
    try {
      process.kill(pid, "SIGTERM");
    } catch {
      return;
    }
    for (let i = 0; i < 100; i++) {
      if (!alive(pid)) {
        log(`redis (${pid}) stopped`);
        return;
      }
      spawnSync("sleep", ["0.1"]);
    }
    try {
      process.kill(pid, "SIGKILL");
      log(`redis (${pid}) killed`);
    } catch {
      /* gone */
    }
  }
}

/** pgbench: initialises its tables once, then one measurement per call. */
export class Pgbench {
  readonly script: string;
  constructor(
    readonly cluster: PostgresCluster,
    readonly scratch: string,
    readonly opts: { readonly clients: number; readonly seconds: number; readonly scale: number },
  ) {
    this.script = join(scratch, "pgbench-update.sql");
    // One single-row UPDATE per transaction; :scale comes from -D scale=N.
    writeFileSync(this.script, "\\set aid random(1, 100000 * :scale)\nUPDATE pgbench_accounts SET abalance = abalance + 1 WHERE aid = :aid;\n");
  }

  init(): void {
    run("pgbench", ["-i", "-q", "-s", String(this.opts.scale), "bench_pgbench"], { env: this.cluster.env, timeoutMs: 600_000 });
    run("psql", ["-qAt", "-d", "bench_pgbench", "-c", "vacuum analyze", "-c", "checkpoint"], { env: this.cluster.env });
  }

  measure(): { tps: number | null; latency_avg_ms: number | null; error?: string } {
    const { clients, seconds, scale } = this.opts;
    const args = ["-n", "-M", "prepared", "-c", String(clients), "-j", "2", "-T", String(seconds), "-D", `scale=${scale}`, "-f", this.script, "bench_pgbench"];
    const r = spawnSync("pgbench", args, { encoding: "utf8", env: this.cluster.env, timeout: (seconds + 60) * 1000 });
    const out = `${r.stdout ?? ""}${r.stderr ?? ""}`;
    const tps = /^tps = ([0-9.]+)/m.exec(out)?.[1];
    const lat = /^latency average = ([0-9.]+) ms/m.exec(out)?.[1];
    if (r.status !== 0 || tps === undefined) return { tps: null, latency_avg_ms: null, error: `pgbench failed: ${(r.error?.message ?? out).trim().slice(-500)}` };
    return { tps: Number(tps), latency_avg_ms: lat === undefined ? null : Number(lat) };
  }
}

/**
 * Samples, every `intervalMs`, the connections each database holds (pg_stat_activity, client
 * backends, the harness's own connections excluded by application_name) and the CPU time of
 * the whole PostgreSQL process tree and of Redis (from /proc; exited backends are counted through
 * the postmaster's cutime/cstime), so each measured window gets server-side numbers without
 * adding work to the process being measured.
 */
export interface Sample {
  readonly t: number;
  readonly conns: number;
  readonly active: number;
  readonly pgCpuMs: number;
  readonly redisCpuMs: number;
  readonly redisClients: number | null;
  /** WAL position of the cluster, bytes (cluster-wide: one system runs at a time). */
  readonly walBytes: number;
}

const TICK_MS = 1000 / Number(spawnSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).stdout.trim() || 100);

/**
 * CPU milliseconds (user + system) of a process, its reaped children and its live direct children:
 * a PostgreSQL postmaster and its backends.
 */
export function processTreeCpuMs(pid: number): number {
  const root = procTimes(pid);
  if (root === null) return 0;
  let total = root.self + root.children;
  for (const name of readdirSyncSafe("/proc")) {
    const c = name.charCodeAt(0);
    if (c < 48 || c > 57) continue;
    const t = procTimes(Number(name));
    if (t !== null && t.ppid === pid) total += t.self;
  }
  return total;
}

/**
 * A private PostgreSQL cluster in a new temp folder: `start` runs it (with a watchdog that removes
 * it should this process die without cleaning up), `startWithStatements` runs it with
 * pg_stat_statements and gives a connected client of `database`, `cleanup` stops it and removes
 * the folder (also on Ctrl-C).
 */
export function throwawayCluster(
  prefix: string,
  port: number,
): {
  cluster: SharedPostgresCluster;
  start: (databases: readonly string[], serverOptions?: string) => void;
  startWithStatements: (database: string) => Promise<{ url: string; side: pg.Client }>;
  cleanup: () => void;
} {
  const throwaway = throwawayPostgresCluster({ prefix, port, bin: findPgBin(), log });
  process.on("SIGINT", () => {
    throwaway.cleanup();
    process.exit(130);
  });
  const start = (databases: readonly string[], serverOptions = "") => {
    throwaway.start({ databases, serverOptions });
    warnUnless15(throwaway.cluster.version);
  };
  return {
    cluster: throwaway.cluster,
    start,
    // pg_stat_statements (with planning time) for per-statement server cost: the probes only.
    startWithStatements: async (database) => {
      start([database], "-c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track_planning=on");
      const url = throwaway.cluster.connectionString(database);
      const side = new pg.Client({ connectionString: url });
      await side.connect();
      await side.query("create extension if not exists pg_stat_statements");
      return { url, side };
    },
    cleanup: throwaway.cleanup,
  };
}

/**
 * An emulated slower disk for the benchmark's PostgreSQL: a shared object, built here with the
 * machine's C compiler, that makes every `fsync` and `fdatasync` of a process it is preloaded
 * into (`LD_PRELOAD`) sleep `delayUs` microseconds first. This machine's disk flushes in
 * ~0.1 ms, so its commits are bound by CPU; a cloud volume's flush takes ~1 ms, and there the
 * commit rate is bound by the flush, which is what issue 14's commit-ceiling target assumes.
 * Returns the environment to start the cluster (and pgbench) with.
 */
export function slowFsyncEnv(scratch: string, delayUs: number): Record<string, string> {
  const source = join(scratch, "slow-fsync.c");
  const object = join(scratch, "slow-fsync.so");
  writeFileSync(
    source,
    `#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <time.h>
static void pause_first(void) {
  static long us = -1;
  if (us < 0) { const char *v = getenv("BELAY_FSYNC_DELAY_US"); us = v ? atol(v) : 0; }
  if (us > 0) { struct timespec t = { us / 1000000, (us % 1000000) * 1000 }; nanosleep(&t, 0); }
}
int fdatasync(int fd) { static int (*real)(int); if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync"); pause_first(); return real(fd); }
int fsync(int fd) { static int (*real)(int); if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fsync"); pause_first(); return real(fd); }
`,
  );
  const cc = process.env["CC"] ?? "cc";
  const r = spawnSync(cc, ["-O2", "-shared", "-fPIC", "-o", object, source, "-ldl"], { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`--fsync-delay-us needs a C compiler (${cc}, or set CC) to build its shim: ${(r.error?.message ?? r.stderr).trim()}`);
  return { LD_PRELOAD: object, BELAY_FSYNC_DELAY_US: String(delayUs) };
}

/** WAL written since an LSN, by resource manager and record type (pg_walinspect), largest first. */
export interface WalRecordKind {
  readonly kind: string;
  /** Records of this kind. */
  readonly n: number;
  /** Bytes, full-page images included. */
  readonly bytes: number;
  /** Of which full-page images. */
  readonly fpiBytes: number;
}

/** The server's current WAL position, for {@link walSince}. */
export async function walPosition(client: pg.Client): Promise<string> {
  return (await client.query("select pg_current_wal_lsn()::text as lsn")).rows[0].lsn as string;
}

/** The WAL written since `from` ({@link walPosition}), by record type, largest first. Needs a superuser (pg_walinspect). */
export async function walSince(client: pg.Client, from: string): Promise<WalRecordKind[]> {
  await client.query("create extension if not exists pg_walinspect");
  const { rows } = await client.query(
    `select "resource_manager/record_type" as kind, count::float8 as n, combined_size::float8 as bytes, fpi_size::float8 as fpi
       from pg_get_wal_stats($1::pg_lsn, pg_current_wal_lsn(), true) where count > 0 order by combined_size desc`,
    [from],
  );
  return rows.map((r) => ({ kind: r.kind as string, n: r.n as number, bytes: r.bytes as number, fpiBytes: r.fpi as number }));
}

function procTimes(pid: number): { ppid: number; self: number; children: number } | null {
  try {
    const s = readFileSync(`/proc/${pid}/stat`, "utf8");
    const f = s.slice(s.lastIndexOf(")") + 2).split(" ");
    // fields after comm: state(0) ppid(1) ... utime(11) stime(12) cutime(13) cstime(14)
    return { ppid: Number(f[1]), self: (Number(f[11]) + Number(f[12])) * TICK_MS, children: (Number(f[13]) + Number(f[14])) * TICK_MS };
  } catch {
    return null;
  }
}

export class Sampler {
  samples: Sample[] = [];
  #running = false;
  #loop: Promise<void> | null = null;
  #db: string | null = null;
  #client: pg.Client | null = null;
  #redis: Redis | null = null;

  constructor(
    readonly cluster: PostgresCluster,
    readonly redis: RedisServer | null,
    readonly harnessApp: string,
    readonly intervalMs = 100,
  ) {}

  async open(): Promise<void> {
    this.#client = new pg.Client({ connectionString: `${this.cluster.connectionString("postgres")}&application_name=${this.harnessApp}` });
    this.#client.on("error", (e) => log(`sampler connection: ${e.message}`));
    await this.#client.connect();
    if (this.redis?.pid) {
      this.#redis = new Redis({ host: "127.0.0.1", port: this.redis.port, maxRetriesPerRequest: 1 });
      this.#redis.on("error", () => undefined);
    }
  }

  #pgCpu(): number {
    const pm = this.cluster.pid;
    return pm === null ? 0 : processTreeCpuMs(pm);
  }

  #redisCpu(): number {
    const pid = this.redis?.pid;
    if (!pid) return 0;
    const t = procTimes(pid);
    return t === null ? 0 : t.self;
  }

  async #sample(): Promise<void> {
    let conns = 0;
    let active = 0;
    let walBytes = 0;
    if (this.#client !== null) {
      const { rows } = await this.#client.query(
        `select count(*)::int as n, count(*) filter (where state = 'active')::int as a,
                pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::float8 as wal
           from pg_stat_activity
          where datname = $1 and backend_type = 'client backend' and coalesce(application_name, '') <> $2`,
        [this.#db ?? "", this.harnessApp],
      );
      conns = rows[0].n;
      active = rows[0].a;
      walBytes = rows[0].wal;
    }
    let redisClients: number | null = null;
    if (this.#redis !== null) {
      const info = await this.#redis.info("clients").catch(() => "");
      const m = /connected_clients:(\d+)/.exec(info);
      redisClients = m ? Number(m[1]) - 1 : null;
    }
    this.samples.push({ t: performance.timeOrigin + performance.now(), conns, active, pgCpuMs: this.#pgCpu(), redisCpuMs: this.#redisCpu(), redisClients, walBytes });
  }

  /** Starts sampling for a child that uses database `db` (null: CPU only). */
  begin(db: string | null): void {
    this.samples = [];
    this.#db = db;
    this.#running = true;
    this.#loop = (async () => {
      while (this.#running) {
        const t = Date.now();
        await this.#sample().catch((e) => log(`sampler: ${String(e)}`));
        await new Promise((r) => setTimeout(r, Math.max(5, this.intervalMs - (Date.now() - t))));
      }
    })();
  }

  async end(): Promise<Sample[]> {
    this.#running = false;
    await this.#loop;
    await this.#sample().catch(() => undefined);
    return this.samples;
  }

  async close(): Promise<void> {
    this.#running = false;
    await this.#loop;
    await this.#client?.end().catch(() => undefined);
    this.#redis?.disconnect();
  }
}

function readdirSyncSafe(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

/** Linear interpolation of a cumulative counter at time t. */
function at(samples: readonly Sample[], t: number, key: "pgCpuMs" | "redisCpuMs" | "walBytes"): number | null {
  if (samples.length === 0) return null;
  let prev: Sample | null = null;
  for (const s of samples) {
    if (s.t >= t) {
      if (prev === null) return s[key];
      return prev[key] + ((s[key] - prev[key]) * (t - prev.t)) / (s.t - prev.t || 1);
    }
    prev = s;
  }
  return prev![key];
}

/** Server-side numbers of the window [a, b]. */
export function windowStats(samples: readonly Sample[], a: number, b: number) {
  const inside = samples.filter((s) => s.t >= a && s.t <= b);
  const r1 = (x: number) => Math.round(x * 10) / 10;
  const pg0 = at(samples, a, "pgCpuMs");
  const pg1 = at(samples, b, "pgCpuMs");
  const rd0 = at(samples, a, "redisCpuMs");
  const rd1 = at(samples, b, "redisCpuMs");
  const ms = b - a;
  const pgMs = pg0 === null || pg1 === null ? null : pg1 - pg0;
  const rdMs = rd0 === null || rd1 === null ? null : rd1 - rd0;
  const w0 = at(samples, a, "walBytes");
  const w1 = at(samples, b, "walBytes");
  const redisClients = inside.map((s) => s.redisClients).filter((x): x is number => x !== null);
  return {
    samples: inside.length,
    conns_max: inside.length ? Math.max(...inside.map((s) => s.conns)) : null,
    conns_mean: inside.length ? r1(inside.reduce((n, s) => n + s.conns, 0) / inside.length) : null,
    conns_active_max: inside.length ? Math.max(...inside.map((s) => s.active)) : null,
    redis_clients_max: redisClients.length ? Math.max(...redisClients) : null,
    pg_cpu_ms: pgMs === null ? null : Math.round(pgMs),
    pg_cpu_pct: pgMs === null || ms <= 0 ? null : r1((pgMs / ms) * 100),
    redis_cpu_ms: rdMs === null ? null : Math.round(rdMs),
    redis_cpu_pct: rdMs === null || ms <= 0 ? null : r1((rdMs / ms) * 100),
    wal_bytes: w0 === null || w1 === null ? null : Math.round(w1 - w0),
  };
}

export function makeScratch(path: string): string {
  mkdirSync(path, { recursive: true });
  chmodSync(path, 0o755);
  return path;
}
