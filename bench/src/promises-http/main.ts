// `pnpm bench:promises-http`: the Resonate envelope over HTTP, lifecycles/s and p50/p99 at 1 and
// 10 concurrent SDK-shaped clients. belay-server (apps/server, from its TypeScript sources) on a
// SQLite file (the store's defaults) and on PostgreSQL (a throwaway cluster, every durability
// setting at its default), side by side with the SDK's in-memory server behind a minimal
// node:http listener (sdk-http-server.ts). Every cell gets a fresh server process on a fresh store
// (a new SQLite file, a new database, a new SDK server) and a client process of its own
// (client.ts); systems run in an order rotated per run; medians of the runs, ratios paired within
// each run. See README.md.
import { type ChildProcess, spawn } from "node:child_process";
import { loadavg } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { type Option, Teardown, int, ints, lifecycleWindowOptions, list, parseArgs } from "../cli.js";
import { PostgresCluster, findPgBin, log } from "../infra.js";
import { ResultsFile, belayFrom, durableSettings, gitDescribe, machine, resultsPaths, rotated, runEntry, runOptions, scratchFolder, versionOf } from "../results.js";
import type { HttpCellRecord, HttpClientConfig } from "./config.js";
import { summarizeHttp } from "./summary.js";

const HERE = dirname(fileURLToPath(import.meta.url));
const PKG = resolve(HERE, "../..");
const SERVER_DIR = resolve(PKG, "../apps/server");
const SERVER_MAIN = join(SERVER_DIR, "src/main.ts");

const SYSTEMS = {
  "belay-sqlite": "belay-server --store sqlite:<scratch file> (WAL, synchronous=NORMAL: the store's defaults)",
  "belay-postgres": "belay-server --store postgres://… (a fresh database on the throwaway cluster; the store's default pool)",
  "sdk-server": "the SDK's in-memory Server (new LocalNetwork().server, eager timeouts) behind a minimal node:http listener",
} as const;
type SystemName = keyof typeof SYSTEMS;

const OPTIONS: Option[] = [
  ...lifecycleWindowOptions(Object.keys(SYSTEMS), { seconds: "8", minLifecycles: "200" }),
  { flag: "clients", def: "1,10", help: "concurrent SDK-shaped clients, each with its own keep-alive connection" },
  { flag: "warmup-s", def: "2", help: "warm-up of each cell, same clients (not measured)" },
  { flag: "pause-ms", def: "500", help: "pause between a cell's warm-up and its window" },
  { flag: "settle-s", def: "1", help: "pause before each cell (after a CHECKPOINT when the cluster runs)" },
  ...runOptions({ pgPort: "55434", results: join(PKG, "results"), prefix: "promises-http-", profiled: "every server process", cell: "<system>-run<N>-c<C>" }),
];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// ---- children and teardown ----

const running = new Set<ChildProcess>();
let cluster: PostgresCluster | null = null;

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid && child.exitCode === null && child.signalCode === null) {
    try {
      process.kill(-child.pid, signal);
    } catch {
      /* gone */
    }
  }
}

const teardown = new Teardown();
teardown.onTeardown(() => {
  for (const child of running) killGroup(child, "SIGKILL");
  cluster?.stop();
});
teardown.install("the children and the cluster");

interface Started {
  readonly child: ChildProcess;
  readonly lines: string[];
  readonly exited: Promise<void>;
}

/** A child in its own process group; its stdout and stderr lines are kept (and `@@` lines picked out by the caller). */
function start(label: string, args: readonly string[], cwd: string, env: NodeJS.ProcessEnv): Started {
  const child = spawn(process.execPath, args, { cwd, env, detached: true, stdio: ["ignore", "pipe", "pipe"] });
  running.add(child);
  const lines: string[] = [];
  const take = (stream: NodeJS.ReadableStream, echo: boolean) => {
    let partial = "";
    stream.setEncoding("utf8");
    stream.on("data", (d: string) => {
      partial += d;
      const parts = partial.split("\n");
      partial = parts.pop()!;
      for (const line of parts) {
        lines.push(line);
        if (echo && line.trim() && !line.startsWith("@@")) process.stderr.write(`  [${label}] ${line}\n`);
      }
    });
  };
  take(child.stdout!, false);
  take(child.stderr!, true);
  const exited = new Promise<void>((done) =>
    child.once("exit", () => {
      running.delete(child);
      done();
    }),
  );
  return { child, lines, exited };
}

async function waitForLine(p: Started, pattern: RegExp, timeoutMs: number, what: string): Promise<RegExpMatchArray> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    for (const line of p.lines) {
      const m = pattern.exec(line);
      if (m) return m;
    }
    if (p.child.exitCode !== null || p.child.signalCode !== null) throw new Error(`${what} exited (${p.child.exitCode ?? p.child.signalCode}) before ${pattern}: ${p.lines.slice(-20).join("\n")}`);
    if (Date.now() > deadline) throw new Error(`${what}: no ${pattern} within ${timeoutMs / 1000} s: ${p.lines.slice(-20).join("\n")}`);
    await sleep(50);
  }
}

/** SIGTERM, then SIGKILL to the group after `graceMs`. */
async function stop(p: Started, graceMs = 10_000): Promise<void> {
  killGroup(p.child, "SIGTERM");
  const timer = setTimeout(() => killGroup(p.child, "SIGKILL"), graceMs);
  await p.exited;
  clearTimeout(timer);
}

async function main(): Promise<void> {
  const values = parseArgs(OPTIONS, process.argv.slice(2), "pnpm bench:promises-http", SYSTEMS);
  const systems = list(values["systems"]!) as SystemName[];
  for (const s of systems) if (!(s in SYSTEMS)) throw new Error(`unknown system ${s}; known: ${Object.keys(SYSTEMS).join(", ")}`);
  const settings = {
    systems,
    clients: ints(values["clients"]!, "clients"),
    runs: int(values, "runs", 1),
    seconds: int(values, "seconds", 1),
    min_lifecycles: int(values, "min-lifecycles", 1),
    warmup_s: int(values, "warmup-s"),
    pause_ms: int(values, "pause-ms"),
    settle_s: int(values, "settle-s"),
    belay_from: values["belay-from"] ?? "dist",
  };
  const { jsonPath, profRoot } = resultsPaths(values, "promises-http-");
  const belay = belayFrom(values, PKG);
  const scratch = scratchFolder(values, "belay-bench-http-", teardown);

  let pgSettings: Record<string, string> = {};
  let admin: pg.Client | null = null;
  if (systems.includes("belay-postgres")) {
    cluster = new PostgresCluster(scratch, int(values, "pg-port", 1), findPgBin());
    // No server options: every setting is PostgreSQL's default (fsync, synchronous_commit and full_page_writes on).
    cluster.start([]);
    admin = new pg.Client({ connectionString: cluster.connectionString("postgres") });
    await admin.connect();
    pgSettings = await durableSettings(admin, ["fsync", "synchronous_commit", "full_page_writes", "wal_sync_method", "shared_buffers", "max_connections"]);
  }

  const meta = {
    command: `pnpm --filter @belay/bench bench:promises-http ${process.argv.slice(2).join(" ")}`.trim(),
    started: new Date().toISOString(),
    finished: null as string | null,
    git: gitDescribe(PKG, ["packages", "apps/server"]),
    machine: { ...machine(), loadavg_at_start: loadavg().map((x) => Math.round(x * 100) / 100) },
    versions: {
      node: process.version,
      postgres: cluster?.version ?? null,
      "better-sqlite3": versionOf(PKG, "better-sqlite3"),
      "@resonatehq/sdk": versionOf(PKG, "@resonatehq/sdk"),
      hono: versionOf(SERVER_DIR, "hono"),
      "@hono/node-server": versionOf(SERVER_DIR, "@hono/node-server"),
    },
    postgres_settings: pgSettings,
    systems: Object.fromEntries(systems.map((s) => [s, SYSTEMS[s]])),
    settings,
  };
  const results = new ResultsFile<typeof meta, HttpCellRecord>(jsonPath, meta);
  const { records } = results;
  const clientTimeoutMs = (settings.warmup_s * 3 + settings.seconds * 4 + 60) * 1000 + settings.pause_ms;

  for (let run = 1; run <= settings.runs; run++) {
    const order = rotated(systems, run);
    log(`run ${run}/${settings.runs}: ${order.join(" → ")}`);
    for (const system of order) {
      for (const clients of settings.clients) {
        if (admin !== null) await admin.query("checkpoint");
        await sleep(settings.settle_s * 1000);
        const t0 = Date.now();
        let server: Started | null = null;
        let client: Started | null = null;
        const prof = profRoot === null ? [] : ["--cpu-prof", "--cpu-prof-dir", join(profRoot, `${system}-run${run}-c${clients}`)];
        try {
          // ---- a fresh server on a fresh store ----
          if (system === "sdk-server") {
            server = start(system, [...prof, "--import", "tsx", join(HERE, "sdk-http-server.ts")], PKG, process.env);
          } else {
            let store: string;
            if (system === "belay-sqlite") store = `sqlite:${join(scratch, `http-run${run}-c${clients}.db`)}`;
            else {
              await admin!.query("drop database if exists bench_http with (force)");
              await admin!.query("create database bench_http");
              store = cluster!.connectionString("bench_http");
            }
            const env: NodeJS.ProcessEnv = { ...process.env, BELAY_SERVER_TOKENS: "" };
            delete env["BELAY_STORE"];
            delete env["BELAY_PROMISES_PORT"];
            server = start(system, [...prof, "--import", "tsx", ...belay.nodeConditions, SERVER_MAIN, "--store", store, "--migrate", "--host", "127.0.0.1", "--port", "0", "--promises-host", "127.0.0.1", "--promises-port", "0"], SERVER_DIR, env);
          }
          const [, url] = await waitForLine(server, system === "sdk-server" ? /^listening (http:\/\/127\.0\.0\.1:\d+)/ : /durable promises (http:\/\/127\.0\.0\.1:\d+)/, 60_000, system);
          // ---- the clients, in a process of their own ----
          const config: HttpClientConfig = {
            label: system,
            run,
            url: url!,
            clients,
            warmupSeconds: settings.warmup_s,
            pauseMs: settings.pause_ms,
            seconds: settings.seconds,
            minLifecycles: settings.min_lifecycles,
            serverPid: server.child.pid!,
            postmasterPid: system === "belay-postgres" ? cluster!.pid! : null,
            pgAdmin: system === "belay-postgres" ? cluster!.connectionString("postgres") : null,
          };
          client = start(`${system} clients`, ["--import", "tsx", ...belay.nodeConditions, join(HERE, "client.ts")], PKG, { ...process.env, BENCH_HTTP_CONFIG: JSON.stringify(config) });
          const timer = setTimeout(() => {
            log(`${system} run ${run} @${clients}: the client process exceeded ${Math.round(clientTimeoutMs / 1000)} s, killing it`);
            killGroup(client!.child, "SIGKILL");
          }, clientTimeoutMs);
          await client.exited;
          clearTimeout(timer);
          const line = client.lines.find((l) => l.startsWith("@@bench "));
          const record: Record<string, unknown> = line ? (JSON.parse(line.slice(8)) as Record<string, unknown>) : { system, run, clients, error: `the client process exited (${client.child.exitCode ?? client.child.signalCode}) without a record: ${client.lines.slice(-10).join(" | ")}` };
          await stop(server);
          const sizes = server.lines.find((l) => l.startsWith("@@sizes "));
          if (sizes) record["sdk_sizes"] = JSON.parse(sizes.slice(8));
          records.push(record as unknown as HttpCellRecord);
        } catch (error) {
          const message = error instanceof Error ? error.message : String(error);
          log(`  ${system} run ${run} @${clients} FAILED: ${message}`);
          records.push({ system, run, clients, error: message });
        } finally {
          if (client !== null) await stop(client, 2_000);
          if (server !== null) await stop(server);
        }
        log(`  ${system} run ${run} @${clients} took ${Math.round((Date.now() - t0) / 1000)} s`);
        results.save();
      }
    }
  }
  await admin?.end();
  results.finish((done) => renderMarkdown({ ...meta, raw: jsonPath }, done));
}

interface Meta {
  readonly command: string;
  readonly started: string;
  readonly git: string;
  readonly machine: { readonly nproc: number; readonly cpu: string; readonly mem_gib: number; readonly kernel: string; readonly loadavg_at_start?: readonly number[] };
  readonly versions: Record<string, string | null>;
  readonly postgres_settings: Record<string, string>;
  readonly systems: Record<string, string>;
  readonly settings: { readonly runs: number; readonly settle_s: number; readonly warmup_s: number; readonly pause_ms: number; readonly seconds: number; readonly min_lifecycles: number; readonly belay_from?: string };
  readonly raw: string;
}

function renderMarkdown(meta: Meta, records: readonly HttpCellRecord[]): string {
  const { settings } = meta;
  const header = [
    `# Belay promise listener over HTTP — ${meta.started}`,
    "",
    `Command: \`${meta.command}\``,
    "",
    `Machine: ${meta.machine.nproc} cores (${meta.machine.cpu}), ${meta.machine.mem_gib} GiB, Linux ${meta.machine.kernel}${meta.machine.loadavg_at_start ? `, load average ${meta.machine.loadavg_at_start.join(" / ")} at the start` : ""}. Node ${meta.versions["node"]}; ${meta.versions["postgres"] ?? "no PostgreSQL"}; better-sqlite3 ${meta.versions["better-sqlite3"]}; @resonatehq/sdk ${meta.versions["@resonatehq/sdk"]}; hono ${meta.versions["hono"]}, @hono/node-server ${meta.versions["@hono/node-server"]}. Belay at ${meta.git}.`,
    `PostgreSQL settings: ${Object.entries(meta.postgres_settings).map(([k, v]) => `${k}=${v}`).join(", ") || "–"} (every setting default; unix socket only).`,
    `Settings: ${settings.runs} runs, system order rotated per run; per cell a fresh server process on a fresh store and a client process of its own, ${settings.settle_s} s settle (after a CHECKPOINT), ${settings.warmup_s} s warm-up, ${settings.pause_ms} ms pause, then a window of ≥ ${settings.seconds} s and ≥ ${settings.min_lifecycles} lifecycles. Loopback only (127.0.0.1). Belay's packages ${settings.belay_from === "dist" ? "from their built dist/" : "from their TypeScript sources (tsx)"}; apps/server's own code through tsx.`,
    "",
    ...Object.entries(meta.systems).map(([name, what]) => `- \`${name}\`: ${what}`),
    "",
    `Raw results: ${meta.raw}`,
    "",
  ].join("\n");
  return `${header}\n${summarizeHttp(records)}`;
}

await runEntry(main, { teardown, render: renderMarkdown });
