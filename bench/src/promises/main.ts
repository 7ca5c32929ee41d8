// `pnpm bench:promises`: the Promise Store Contract at the store level (issue 14's targets).
// SqlitePromiseStore (a file in the scratch folder, the store's defaults) and PostgresPromiseStore
// (a throwaway cluster with every durability setting at its default: fsync on,
// synchronous_commit on) at 1 and 10 callers, full lifecycles and a fan-out; pgbench on the same
// server at 1 and 10 clients (the commit ceiling); the SDK's in-memory server and SQLite, each
// with the same live roots. Systems run in their own child processes, in an order rotated per
// run, each after a checkpoint and a settle period; medians of the runs. See README.md.
import { writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { type Option, Teardown, forEachLine, int, ints, lifecycleWindowOptions, list, parseArgs } from "../cli.js";
import { Pgbench, PostgresCluster, findPgBin, log, slowFsyncEnv } from "../infra.js";
import { ResultsFile, belayFrom, durableSettings, gitDescribe, machine, resultsPaths, rotated, runEntry, runOptions, scratchFolder, versionOf } from "../results.js";
import { runPgbench } from "./ceiling.js";
import type { PromiseChildConfig } from "./config.js";
import { SHAPE_NAMES, type ShapeName } from "./shapes.js";
import { type PromiseRecord, summarizePromises } from "./summary.js";

const HERE = dirname(fileURLToPath(import.meta.url));
const PKG = resolve(HERE, "../..");

/** The systems: a Belay store or the SDK server, with or without live roots; `pgbench` is the server's ceiling. */
const SYSTEMS: Record<string, { readonly system: PromiseChildConfig["system"] | "pgbench"; readonly roots: boolean }> = {
  pgbench: { system: "pgbench", roots: false },
  sqlite: { system: "sqlite", roots: false },
  postgres: { system: "postgres", roots: false },
  "sqlite-roots": { system: "sqlite", roots: true },
  "sdk-server-roots": { system: "sdk-server", roots: true },
};

const OPTIONS: Option[] = [
  ...lifecycleWindowOptions(Object.keys(SYSTEMS), { seconds: "10", minLifecycles: "100" }),
  { flag: "shapes", def: SHAPE_NAMES.join(","), help: "lifecycle (create, acquire, fulfill) and/or fanout (a root and 10 children)" },
  { flag: "callers", def: "1,10", help: "concurrent callers, each running lifecycles one after another" },
  { flag: "warmup-s", def: "2", help: "warm-up before each window, same shape and callers (not measured)" },
  { flag: "live-roots", def: "8000", help: "pending targeted promises created before each cell of the *-roots systems" },
  { flag: "settle-s", def: "5", help: "pause before each system (after a CHECKPOINT)" },
  { flag: "cell-pause-ms", def: "1000", help: "pause between a cell's warm-up and its window" },
  { flag: "pgbench-seconds", def: "10", help: "pgbench duration per client count" },
  { flag: "pgbench-clients", def: "1,10", help: "pgbench client counts" },
  { flag: "pgbench-scale", def: "10", help: "pgbench scale factor" },
  { flag: "fsync-delay-us", def: "0", help: "emulate a slower disk: PostgreSQL's every fsync/fdatasync sleeps this long first (needs a C compiler)" },
  ...runOptions({ pgPort: "55433", results: join(PKG, "results"), prefix: "promises-", profiled: "every child", cell: "<system>-run<N>" }),
];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// ---- teardown: the child, the cluster, the scratch folder ----

let cluster: PostgresCluster | null = null;
const teardown = new Teardown();
teardown.onTeardown(() => cluster?.stop());
teardown.install("the child and the cluster");

async function runChild(config: PromiseChildConfig, timeoutMs: number, profDir: string | null, nodeConditions: readonly string[]): Promise<{ records: PromiseRecord[]; code: number | null; timedOut: boolean }> {
  const records: PromiseRecord[] = [];
  const { code, timedOut } = await teardown.runChild(
    join(HERE, "runner.ts"),
    {
      cwd: PKG,
      env: { ...process.env, BENCH_PROMISES_CONFIG: JSON.stringify(config) },
      profDir,
      timeoutMs,
      nodeConditions,
      onTimeout: () => log(`${config.label} run ${config.run}: child exceeded ${Math.round(timeoutMs / 1000)} s, killing its process group`),
    },
    (child) => {
      forEachLine(child.stdout!, (line) => {
        if (line.startsWith("@@bench ")) records.push({ ...(JSON.parse(line.slice(8)) as PromiseRecord), system: config.label });
        else if (line.trim()) process.stderr.write(`  [${config.label}] ${line}\n`);
      });
      forEachLine(child.stderr!, (line) => line && process.stderr.write(`  [${config.label}] ${line}\n`));
    },
  );
  return { records, code, timedOut };
}

async function main(): Promise<void> {
  const values = parseArgs(OPTIONS, process.argv.slice(2), "pnpm bench:promises");
  const systems = list(values["systems"]!);
  for (const s of systems) if (!SYSTEMS[s]) throw new Error(`unknown system ${s}; known: ${Object.keys(SYSTEMS).join(", ")}`);
  const shapes = list(values["shapes"]!) as ShapeName[];
  for (const s of shapes) if (!SHAPE_NAMES.includes(s)) throw new Error(`unknown shape ${s}; known: ${SHAPE_NAMES.join(", ")}`);
  const settings = {
    systems,
    shapes,
    callers: ints(values["callers"]!, "callers"),
    runs: int(values, "runs", 1),
    seconds: int(values, "seconds", 1),
    min_lifecycles: int(values, "min-lifecycles", 1),
    warmup_s: int(values, "warmup-s"),
    live_roots: int(values, "live-roots"),
    settle_s: int(values, "settle-s"),
    cell_pause_ms: int(values, "cell-pause-ms"),
    pgbench: { seconds: int(values, "pgbench-seconds", 1), clients: ints(values["pgbench-clients"]!, "pgbench-clients"), scale: int(values, "pgbench-scale", 1) },
    belay_from: values["belay-from"] ?? "dist",
    fsync_delay_us: int(values, "fsync-delay-us"),
  };
  const { jsonPath, profRoot } = resultsPaths(values, "promises-");
  const belay = belayFrom(values, PKG);
  const scratch = scratchFolder(values, "belay-bench-promises-", teardown);

  const needsPg = systems.some((s) => s === "pgbench" || s === "postgres");
  let pgSettings: Record<string, string> = {};
  let admin: pg.Client | null = null;
  let pgbench: Pgbench | null = null;
  const rt4Script = join(scratch, "pgbench-rt4.sql");
  if (needsPg) {
    cluster = new PostgresCluster(scratch, int(values, "pg-port", 1), findPgBin());
    // The emulated disk goes into this process's environment, so the server, pgbench and the
    // children all start under it (in a child it delays nothing: it makes no fsync).
    if (settings.fsync_delay_us > 0) Object.assign(process.env, slowFsyncEnv(scratch, settings.fsync_delay_us));
    // No server options: every setting is PostgreSQL's default (fsync, synchronous_commit and
    // full_page_writes on) — unlike the test projects' clusters, which run with fsync off.
    cluster.start(["bench_promises", ...(systems.includes("pgbench") ? ["bench_pgbench"] : [])]);
    admin = new pg.Client({ connectionString: cluster.connectionString("postgres") });
    await admin.connect();
    pgSettings = await durableSettings(admin, ["fsync", "synchronous_commit", "full_page_writes", "wal_sync_method", "shared_buffers", "max_wal_size", "checkpoint_timeout"]);
    if (systems.includes("pgbench")) {
      pgbench = new Pgbench(cluster, scratch, { clients: 10, seconds: settings.pgbench.seconds, scale: settings.pgbench.scale });
      log(`pgbench: initialising scale ${settings.pgbench.scale}`);
      pgbench.init();
      // The smallest shape of one store operation: BEGIN, a row locked, a row written, COMMIT —
      // four round trips and one durable commit, the yardstick for the store's round trips.
      writeFileSync(rt4Script, "\\set aid random(1, 100000 * :scale)\nBEGIN;\nSELECT abalance FROM pgbench_accounts WHERE aid = :aid FOR UPDATE;\nUPDATE pgbench_accounts SET abalance = abalance + 1 WHERE aid = :aid;\nCOMMIT;\n");
    }
  }

  const meta = {
    command: `pnpm --filter @belay/bench bench:promises ${process.argv.slice(2).join(" ")}`.trim(),
    started: new Date().toISOString(),
    finished: null as string | null,
    git: gitDescribe(PKG, ["packages"]),
    machine: machine(),
    versions: {
      node: process.version,
      postgres: cluster?.version ?? null,
      "better-sqlite3": versionOf(PKG, "better-sqlite3"),
      "@resonatehq/sdk": versionOf(PKG, "@resonatehq/sdk"),
    },
    postgres_settings: pgSettings,
    settings,
  };
  const results = new ResultsFile<typeof meta, PromiseRecord>(jsonPath, meta);
  const { records } = results;
  const cellBudgetS = settings.warmup_s * 3 + settings.seconds * 4 + 60;
  const childTimeoutMs = (shapes.length * settings.callers.length * cellBudgetS + 300) * 1000;

  for (let run = 1; run <= settings.runs; run++) {
    const order = rotated(systems, run);
    log(`run ${run}/${settings.runs}: ${order.join(" → ")}`);
    for (const name of order) {
      if (admin !== null) await admin.query("checkpoint");
      await sleep(settings.settle_s * 1000);
      const load = loadavg()[0];
      const def = SYSTEMS[name]!;
      const t0 = Date.now();
      if (def.system === "pgbench") {
        for (const [variant, script] of [["update", pgbench!.script], ["rt4", rt4Script]] as const) {
          for (const clients of settings.pgbench.clients) {
            const r = runPgbench(cluster!, script, scratch, { clients, seconds: settings.pgbench.seconds, scale: settings.pgbench.scale, tag: `${variant}-run${run}-c${clients}` });
            records.push({ system: "pgbench", run, shape: `pgbench-${variant}`, callers: clients, loadavg1: load, ...r });
            log(`  pgbench ${variant} @${clients}: ${r.tps ?? r.error} tps, latency avg ${r.latency_avg_ms} ms, p50 ${r.latency_p50_ms} ms, p99 ${r.latency_p99_ms} ms`);
          }
        }
      } else {
        const config: PromiseChildConfig = {
          system: def.system,
          label: name,
          run,
          liveRoots: def.roots ? settings.live_roots : 0,
          shapes,
          callers: settings.callers,
          seconds: settings.seconds,
          minLifecycles: settings.min_lifecycles,
          warmupSeconds: settings.warmup_s,
          cellPauseMs: settings.cell_pause_ms,
          scratch,
          pg: cluster === null ? null : { connectionString: cluster.connectionString("bench_promises"), database: "bench_promises", adminConnectionString: cluster.connectionString("postgres"), postmasterPid: cluster.pid! },
        };
        if (def.system === "postgres" && cluster === null) throw new Error("postgres needs the cluster");
        const profDir = profRoot ? join(profRoot, `${name}-run${run}`) : null;
        const result = await runChild(config, childTimeoutMs, profDir, belay.nodeConditions);
        for (const rec of result.records) records.push({ ...rec, loadavg1: load });
        if (result.code !== 0 || result.timedOut) {
          const error = result.timedOut ? `child killed after ${Math.round(childTimeoutMs / 1000)} s` : `child exited with ${result.code}`;
          log(`  ${name} run ${run}: ${error}`);
          records.push({ system: name, run, shape: "child", callers: 0, error });
        }
      }
      log(`  ${name} run ${run} took ${Math.round((Date.now() - t0) / 1000)} s (load ${load?.toFixed(2)} before)`);
      results.save();
    }
  }
  await admin?.end();
  results.finish((done) => renderMarkdown({ ...meta, raw: results.jsonPath }, done));
}

interface Meta {
  readonly command: string;
  readonly started: string;
  readonly git: string;
  readonly machine: { readonly nproc: number; readonly cpu: string; readonly mem_gib: number; readonly kernel: string };
  readonly versions: Record<string, string | null>;
  readonly postgres_settings: Record<string, string>;
  readonly settings: { readonly runs: number; readonly settle_s: number; readonly warmup_s: number; readonly seconds: number; readonly min_lifecycles: number; readonly live_roots: number; readonly belay_from?: string; readonly fsync_delay_us?: number; readonly pgbench: { readonly seconds: number; readonly scale: number } };
  /** Where the raw records are. */
  readonly raw: string;
}

function renderMarkdown(meta: Meta, records: readonly PromiseRecord[]): string {
  const { settings } = meta;
  const pgSettings = meta.postgres_settings;
  const header = [
    `# Belay promise-store benchmark — ${meta.started}`,
    "",
    `Command: \`${meta.command}\``,
    "",
    `Machine: ${meta.machine.nproc} cores (${meta.machine.cpu}), ${meta.machine.mem_gib} GiB, Linux ${meta.machine.kernel}. Node ${meta.versions.node}; ${meta.versions.postgres ?? "no PostgreSQL"}; better-sqlite3 ${meta.versions["better-sqlite3"]}; @resonatehq/sdk ${meta.versions["@resonatehq/sdk"]}. Belay at ${meta.git}.`,
    `PostgreSQL settings: ${Object.entries(pgSettings).map(([k, v]) => `${k}=${v}`).join(", ") || "–"} (every setting default; unix socket only).`,
    `Settings: ${settings.runs} runs, system order rotated per run, CHECKPOINT + ${settings.settle_s} s settle before each system; per cell a fresh store, ${settings.warmup_s} s warm-up, then a window of ≥ ${settings.seconds} s and ≥ ${settings.min_lifecycles} lifecycles; ${settings.live_roots} live roots for the *-roots systems; pgbench ${settings.pgbench.seconds} s per client count (scale ${settings.pgbench.scale}). Belay ${settings.belay_from === "dist" ? "from its built packages (dist)" : "from its TypeScript sources (tsx)"}.`,
    ...((settings.fsync_delay_us ?? 0) > 0
      ? [`**Emulated disk: every fsync and fdatasync of PostgreSQL (and pgbench) slept ${settings.fsync_delay_us} µs first** (\`--fsync-delay-us\`): these figures are not this machine's disk.`]
      : []),
    `Raw results: ${meta.raw}`,
    "",
  ].join("\n");
  return `${header}\n${summarizePromises(records, { liveRoots: settings.live_roots, fsyncDelayUs: settings.fsync_delay_us ?? 0 })}`;
}

await runEntry(main, { teardown, render: renderMarkdown });
