// `pnpm bench`: Belay (PostgreSQL, SQLite) side by side with graphile-worker, pg-boss and BullMQ.
// Sets up a throwaway PostgreSQL 15 cluster and a private Redis, runs pgbench and every system
// (each in its own child process per run, runs interleaved), samples connections and server CPU
// from outside the measured process, prints medians and ratios, writes results/<timestamp>.json
// and .md, and stops everything it started, by PID, also on error and ctrl-c. See README.md.
import { spawnSync } from "node:child_process";
import { hostname, loadavg } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { type NetworkNamespaces, createNetworkNamespaces } from "@belay/conformance/postgres";
import { type Option, Teardown, forEachLine, int, ints, list, parseArgs } from "./cli.js";
import { type ChildConfig, HARNESS_APP } from "./shared.js";
import { Pgbench, PostgresCluster, RedisServer, Sampler, findPgBin, log, windowStats } from "./infra.js";
import { ResultsFile, belayFrom, gitDescribe, machine, resultsPaths, rotated, runEntry, runOptions, scratchFolder, versionOf } from "./results.js";
import { type BenchRecord, type SystemInfo, summarize } from "./summary.js";
import { type NetworkShape, networkSummary, parseNetworks } from "./network-summary.js";

const HERE = dirname(fileURLToPath(import.meta.url));
const PKG = resolve(HERE, "..");

interface SystemDef extends SystemInfo {
  readonly file: string;
  readonly env: Record<string, string>;
  readonly database: string | null;
  readonly redis: boolean;
  /** The network between its runner and the cluster (`loopback` = the unix socket, in this namespace). */
  readonly network?: NetworkShape;
}

const SYSTEMS: Record<string, SystemDef> = {
  "belay-postgres": { name: "belay-postgres", belay: true, conns: "pg", file: "systems/belay.ts", env: { BELAY_STORE: "postgres" }, database: "bench_belay", redis: false },
  "belay-sqlite": { name: "belay-sqlite", belay: true, conns: "none", file: "systems/belay.ts", env: { BELAY_STORE: "sqlite" }, database: null, redis: false },
  "graphile-worker": { name: "graphile-worker", belay: false, conns: "pg", file: "systems/graphile-worker.ts", env: {}, database: "bench_gw", redis: false },
  "pg-boss": { name: "pg-boss", belay: false, conns: "pg", file: "systems/pg-boss.ts", env: {}, database: "bench_boss", redis: false },
  "bullmq-redis": { name: "bullmq-redis", belay: false, conns: "redis", file: "systems/bullmq.ts", env: { BULLMQ_BACKEND: "redis" }, database: null, redis: true },
  "bullmq-pg": { name: "bullmq-pg", belay: false, conns: "pg", file: "systems/bullmq.ts", env: { BULLMQ_BACKEND: "postgres" }, database: "bench_bullmq", redis: false },
};
const ALL_PHASES = ["enqueue_single", "enqueue_batch", "process", "latency"];

// ---- options: --flag value | --flag=value, each with an environment fallback BENCH_<FLAG> ----

const OPTIONS: Option[] = [
  { flag: "systems", def: "belay-postgres,belay-sqlite,graphile-worker,pg-boss,bullmq-redis", help: `comma list of ${Object.keys(SYSTEMS).join(", ")}` },
  { flag: "jobs", def: "20000", help: "jobs per enqueue and processing phase" },
  { flag: "runs", def: "3", help: "interleaved runs (medians are reported); the system order (pgbench included) rotates per run" },
  { flag: "settle-s", def: "5", help: "pause before each system and pgbench, after a CHECKPOINT, so none is measured in another's wake" },
  { flag: "concurrency", def: "10,50", help: "concurrent handlers of the processing phases" },
  { flag: "latency-concurrency", def: "10", help: "worker concurrency in the latency phase" },
  { flag: "latency-jobs", def: "500", help: "single jobs in the latency phase" },
  { flag: "latency-gap-ms", def: "20", help: "spacing of the latency-phase enqueues" },
  { flag: "enqueue-in-flight", def: "10", help: "one-by-one enqueue calls in flight" },
  { flag: "batch", def: "1000", help: "jobs per batch-API call" },
  { flag: "process-cap-s", def: "20", help: "wall cap of poll-bound configurations (pg-boss default)" },
  { flag: "phases", def: ALL_PHASES.join(","), help: "phases to run" },
  { flag: "variants", def: "", help: "only these peer variants (e.g. perftest,batch,default); empty = all" },
  { flag: "phase-timeout-s", def: "300", help: "budget of one phase; past it the phase is recorded failed" },
  { flag: "pgbench-seconds", def: "30", help: "pgbench duration per run (0 = skip pgbench)" },
  { flag: "pgbench-clients", def: "10", help: "pgbench clients" },
  { flag: "pgbench-scale", def: "10", help: "pgbench scale factor" },
  { flag: "redis-port", def: "56379", help: "port of the private Redis on 127.0.0.1" },
  { flag: "sample-ms", def: "100", help: "sampling interval of connections and server CPU" },
  {
    flag: "network",
    def: "loopback",
    help: "networks between the PostgreSQL systems' runners and the cluster: loopback (the unix socket) and/or netns-<d>ms (the runner in its own network namespace, a veth pair, <d> ms added each way: tc netem, or a userspace delay proxy where sch_netem is missing), e.g. loopback,netns-0ms,netns-5ms; needs root",
  },
  ...runOptions({ pgPort: "55432", results: join(PKG, "results"), prefix: "", profiled: "every child", cell: "<system>-run<N>" }),
];

// ---- state needed by the teardown ----

let cluster: PostgresCluster | null = null;
let redis: RedisServer | null = null;
let sampler: Sampler | null = null;
const networks = new Map<string, NetworkNamespaces>();
const teardown = new Teardown();
teardown.onTeardown(() => {
  for (const net of networks.values()) net.close();
  redis?.stop();
  cluster?.stop();
});
teardown.install("children and servers");

// ---- running one child ----

async function runChild(
  def: SystemDef,
  config: ChildConfig,
  timeoutMs: number,
  profDir: string | null,
  nodeConditions: readonly string[],
): Promise<{ records: BenchRecord[]; code: number | null; signal: string | null; timedOut: boolean }> {
  const records: BenchRecord[] = [];
  const ended = await teardown.runChild(
    join(HERE, def.file),
    {
      cwd: PKG,
      // BENCH_NETWORK (this harness's option) is not the runner's: its path comes as BENCH_NETWORK_PATH.
      env: { ...process.env, BENCH_NETWORK: undefined, BENCH_NETWORK_PATH: undefined, ...def.env, ...networkEnv(def), BENCH_CONFIG: JSON.stringify(config) },
      profDir,
      timeoutMs,
      nodeConditions,
      ...(def.network?.netns ? { prefix: networks.get(def.network.name)!.exec(0) } : {}),
      onTimeout: () => log(`${def.name} run ${config.run}: child exceeded ${Math.round(timeoutMs / 1000)} s, killing its process group`),
    },
    (child) => {
      forEachLine(child.stdout!, (l) => {
        if (l.startsWith("@@bench ")) {
          const rec = JSON.parse(l.slice(8)) as BenchRecord;
          records.push(rec);
          const v = rec.error ? `FAILED: ${rec.error}` : rec.phase === "latency" ? `p50 ${rec["p50_ms"]} ms, p99 ${rec["p99_ms"]} ms` : `${rec["jobs_per_s"]} jobs/s`;
          log(`  ${def.name} ${rec.phase} ${rec.variant}${rec.concurrency ? ` @${rec.concurrency}` : ""}: ${v}`);
        } else if (l.trim()) process.stderr.write(`  [${def.name}] ${l}\n`);
      });
      forEachLine(child.stderr!, (l) => l.trim() && process.stderr.write(`  [${def.name}] ${l}\n`));
    },
  );
  return { records, ...ended };
}

/** BENCH_NETWORK_PATH for a runner across a namespace's veth pair (see systems/network.ts). */
function networkEnv(def: SystemDef): Record<string, string> {
  if (!def.network?.netns) return {};
  const net = networks.get(def.network.name)!;
  const ns = net.namespaces[0]!;
  return { BENCH_NETWORK_PATH: JSON.stringify({ name: def.network.name, host: ns.databaseHost, port: ns.databasePort, delayMs: net.delayMs, delayKind: net.delayKind }) };
}

// ---- main ----

function versions(): Record<string, string> {
  const v = (pkg: string) => versionOf(PKG, pkg) ?? "?";
  return {
    node: process.version,
    "graphile-worker": v("graphile-worker"),
    "pg-boss": v("pg-boss"),
    bullmq: v("bullmq"),
    ioredis: v("ioredis"),
    pg: v("pg"),
    "better-sqlite3": v("better-sqlite3"),
    "@belay/core": v("@belay/core"),
    "@belay/postgres": v("@belay/postgres"),
    "@belay/sqlite": v("@belay/sqlite"),
  };
}

async function main(): Promise<void> {
  const values = parseArgs(OPTIONS, process.argv.slice(2), "pnpm bench");
  const shapes = parseNetworks(values["network"]!);
  const systems = list(values["systems"]!).flatMap((s) => {
    const def = SYSTEMS[s];
    if (!def) throw new Error(`unknown system ${s}; known: ${Object.keys(SYSTEMS).join(", ")}`);
    // A network shape applies to the systems whose runner talks to the cluster itself.
    if (def.conns !== "pg") return [def];
    return shapes.map((network): SystemDef => (network.netns ? { ...def, name: `${def.name}@${network.name}`, network } : { ...def, network }));
  });
  const phases = list(values["phases"]!);
  for (const p of phases) if (!ALL_PHASES.includes(p)) throw new Error(`unknown phase ${p}; known: ${ALL_PHASES.join(", ")}`);
  const runs = int(values, "runs", 1);
  const concurrency = ints(values["concurrency"]!, "concurrency");
  const phaseTimeoutMs = int(values, "phase-timeout-s", 1) * 1000;
  const pgbenchSeconds = int(values, "pgbench-seconds");
  const settleS = int(values, "settle-s");
  const { jsonPath, profRoot } = resultsPaths(values, "");
  const belay = belayFrom(values, PKG);

  const scratch = scratchFolder(values, "belay-bench-", teardown);

  const settings = {
    systems: systems.map((s) => s.name),
    runs,
    jobs: int(values, "jobs", 1),
    concurrency,
    latency_concurrency: int(values, "latency-concurrency", 1),
    latency_jobs: int(values, "latency-jobs", 1),
    latency_gap_ms: int(values, "latency-gap-ms"),
    enqueue_in_flight: int(values, "enqueue-in-flight", 1),
    batch: int(values, "batch", 1),
    process_cap_s: int(values, "process-cap-s", 1),
    phases,
    variants: list(values["variants"]!),
    phase_timeout_s: phaseTimeoutMs / 1000,
    pgbench: { seconds: pgbenchSeconds, clients: int(values, "pgbench-clients", 1), scale: int(values, "pgbench-scale", 1) },
    sample_ms: int(values, "sample-ms", 10),
    settle_s: settleS,
    network: shapes.map((n) => n.name),
    belay_from: belay.from,
  };
  const meta = {
    command: `pnpm bench ${process.argv.slice(2).join(" ")}`.trim(),
    started: new Date().toISOString(),
    finished: null as string | null,
    git: gitDescribe(PKG, ["packages"]),
    machine: { hostname: hostname(), ...machine(), free_g: spawnSync("free", ["-g"], { encoding: "utf8" }).stdout.trim() },
    versions: versions(),
    settings,
  };

  const results = new ResultsFile<typeof meta, BenchRecord>(jsonPath, meta);
  const { records } = results;

  const pgBin = findPgBin();
  cluster = new PostgresCluster(scratch, int(values, "pg-port", 1), pgBin);
  const dbs = [...new Set(systems.map((s) => s.database).filter((d): d is string => d !== null)), ...(pgbenchSeconds > 0 ? ["bench_pgbench"] : [])];
  cluster.start(dbs);
  Object.assign(meta.versions, { postgres: cluster.version });
  if (systems.some((s) => s.redis)) {
    redis = new RedisServer(join(scratch, "redis"), int(values, "redis-port", 1));
    await redis.start();
    Object.assign(meta.versions, { redis: redis.version });
  }
  for (const shape of shapes.filter((n) => n.netns)) {
    const net = await createNetworkNamespaces({
      count: 1,
      delayMs: shape.delayMs,
      upstream: { path: join(cluster.sock, `.s.PGSQL.${cluster.port}`) },
      prefix: "belay-bench",
      log: (line) => log(line),
    });
    networks.set(shape.name, net);
    const ns = net.namespaces[0]!;
    log(`network ${shape.name}: namespace ${ns.name} (${ns.address}) → ${ns.databaseHost}:${ns.databasePort} → the cluster's socket; delay: ${net.delayNote}`);
  }
  Object.assign(meta, { networks: Object.fromEntries([...networks].map(([name, net]) => [name, { delay_ms: net.delayMs, delay_kind: net.delayKind, note: net.delayNote, namespace: net.namespaces[0] }])) });
  sampler = new Sampler(cluster, redis, HARNESS_APP, settings.sample_ms);
  await sampler.open();

  const pgbench = pgbenchSeconds > 0 ? new Pgbench(cluster, scratch, settings.pgbench) : null;
  if (pgbench) {
    log(`pgbench: initialising scale ${settings.pgbench.scale}`);
    pgbench.init();
  }

  // Backstop per child: every phase at its budget, plus start-up.
  const variantsPer = 4;
  const childTimeoutMs = phaseTimeoutMs * (2 + concurrency.length * variantsPer + variantsPer) + 120_000;

  // Nobody is measured in another's wake: the order (pgbench one of them) rotates per run, and
  // each starts after a CHECKPOINT (the previous one's dirty pages written) and a settle period.
  const lineup: (SystemDef | "pgbench")[] = [...(pgbench ? (["pgbench"] as const) : []), ...systems];
  const settle = async () => {
    cluster?.checkpoint();
    await new Promise((resolve) => setTimeout(resolve, settleS * 1000));
  };
  for (let run = 1; run <= runs; run++) {
    const order = rotated(lineup, run);
    log(`run ${run}/${runs}: ${order.map((d) => (d === "pgbench" ? d : d.name)).join(" → ")}`);
    for (const def of order) {
      await settle();
      if (def === "pgbench") {
        records.push({ system: "postgres-pgbench", phase: "env", variant: "loadavg", run, loadavg1: loadavg()[0] });
        log(`run ${run}/${runs}: pgbench ${settings.pgbench.clients} clients × ${pgbenchSeconds} s`);
        const r = pgbench!.measure();
        records.push({ system: "postgres-pgbench", phase: "pgbench", variant: "update synchronous_commit=on", run, clients: settings.pgbench.clients, seconds: pgbenchSeconds, ...r });
        log(`  pgbench: ${r.tps ?? r.error} tps`);
        continue;
      }
      records.push({ system: def.name, phase: "env", variant: "loadavg", run, loadavg1: loadavg()[0] });
      log(`run ${run}/${runs}: ${def.name}`);
      const config: ChildConfig = {
        system: def.name,
        run,
        jobs: settings.jobs,
        concurrency,
        latencyConcurrency: settings.latency_concurrency,
        latencyJobs: settings.latency_jobs,
        latencyGapMs: settings.latency_gap_ms,
        enqueueInFlight: settings.enqueue_in_flight,
        batch: settings.batch,
        processCapS: settings.process_cap_s,
        phaseTimeoutMs,
        phases,
        variants: settings.variants,
        pg: { host: cluster.sock, port: cluster.port, user: "postgres" },
        database: def.database,
        redisUrl: redis?.url ?? "redis://127.0.0.1:0",
        scratch,
      };
      const profDir = profRoot ? join(profRoot, `${def.name}-run${run}`) : null;
      sampler.begin(def.database);
      const t0 = Date.now();
      const net = def.network?.netns ? networks.get(def.network.name)! : null;
      const forwarderCpu0 = net?.forwarderCpuMs() ?? 0;
      const result = await runChild(def, config, childTimeoutMs, profDir, belay.nodeConditions);
      const samples = await sampler.end();
      if (net !== null) {
        const ms = Date.now() - t0;
        const cpu = net.forwarderCpuMs() - forwarderCpu0;
        records.push({ system: def.name, phase: "env", variant: "forwarder", run, network: def.network!.name, child_ms: ms, forwarder_cpu_ms: cpu, forwarder_cpu_pct: Math.round((cpu / ms) * 1000) / 10 });
      }
      for (const rec of result.records) {
        const a = rec["t_start"];
        const b = rec["t_end"];
        records.push(typeof a === "number" && typeof b === "number" ? { ...rec, server: windowStats(samples, a, b) } : rec);
      }
      if (result.code !== 0 || result.timedOut) {
        const error = result.timedOut ? `child killed after ${Math.round(childTimeoutMs / 1000)} s` : `child exited with ${result.code ?? result.signal}`;
        log(`  ${def.name} run ${run}: ${error}`);
        records.push({ system: def.name, phase: "child", variant: "-", run, error });
      }
      log(`  ${def.name} run ${run} took ${Math.round((Date.now() - t0) / 1000)} s`);
      results.save();
    }
  }

  const infos: SystemInfo[] = systems.map(({ name, belay, conns }) => ({ name, belay, conns }));
  const summary =
    summarize(records, infos, { concurrency, latencyConcurrency: settings.latency_concurrency }) +
    networkSummary(records, systems.filter((s) => s.network !== undefined).map((s) => ({ name: s.name, network: s.network! })), concurrency, [...networks.values()]);
  const header = [
    `# Belay benchmark — ${meta.started}`,
    "",
    `Command: \`${meta.command}\``,
    "",
    `Machine: ${meta.machine.nproc} cores (${meta.machine.cpu}), ${meta.machine.mem_gib} GiB, Linux ${meta.machine.kernel}. ` +
      `Node ${meta.versions.node}; ${meta.versions["postgres" as keyof typeof meta.versions] ?? ""}` +
      `${redis ? `; ${redis.version.split(" ").slice(0, 3).join(" ")}` : ""}.`,
    `Peers: graphile-worker ${meta.versions["graphile-worker"]}, pg-boss ${meta.versions["pg-boss"]}, bullmq ${meta.versions.bullmq} (ioredis ${meta.versions.ioredis}), pg ${meta.versions.pg}. Belay at ${meta.git}.`,
    `Settings: ${settings.jobs} jobs, ${runs} interleaved runs (order rotated per run, CHECKPOINT + ${settleS} s settle before each system and pgbench), concurrency ${concurrency.join(" and ")}, enqueue ${settings.enqueue_in_flight} in flight / batches of ${settings.batch}, latency ${settings.latency_jobs} jobs ${settings.latency_gap_ms} ms apart at concurrency ${settings.latency_concurrency}, pgbench ${settings.pgbench.clients} clients × ${pgbenchSeconds} s (scale ${settings.pgbench.scale}). PostgreSQL: defaults (fsync on, synchronous_commit on, shared_buffers 128MB), unix socket only. Redis: appendonly everysec. Belay ${settings.belay_from === "dist" ? "from its built packages (dist)" : "from its TypeScript sources (tsx)"}.`,
    `Raw results: ${results.jsonPath}`,
    "",
  ].join("\n");
  results.finish(() => `${header}\n${summary}`);
}

const closeSampler = async (): Promise<void> => {
  const s = sampler as Sampler | null;
  await s?.close().catch(() => undefined);
};

await runEntry(main, { teardown, cleanup: closeSampler });
