// The clients of `pnpm bench:promises-http`, in a process of their own (started by main.ts with
// BENCH_HTTP_CONFIG). C clients, each with its own keep-alive connection (a node:http Agent with
// one socket, as each SDK process holds its own), run lifecycles one after another, shaped as
// @resonatehq/sdk 0.11.5 sends them (see ../shared/reference/resonate-sdk.md):
//
//   promise.create  {id, timeoutAt, param, tags: {origin/branch/parent = id, scope global, target poll://any@default}}
//   task.acquire    {id, version: 0, pid, ttl}
//   task.fulfill    {id, version: 1, action: promise.settle envelope {id, state: resolved, value}}
//
// Every answer is checked: HTTP status = head.status = the expected one (200), kind and corrId
// echoed, the fulfilled promise resolved. A warm-up (not measured), a pause, then the window.
// Prints one `@@bench {json}` line; asserts nothing beyond the answers.
import { readFileSync } from "node:fs";
import http from "node:http";
import { loadavg } from "node:os";
import pg from "pg";
import { processTreeCpuMs } from "../infra.js";
import { latencyPercentiles, p50PerKind, round2 } from "../stats.js";
import type { HttpClientConfig } from "./config.js";

const cfg = JSON.parse(process.env["BENCH_HTTP_CONFIG"] ?? "null") as HttpClientConfig | null;
if (cfg === null) throw new Error("BENCH_HTTP_CONFIG is not set: the client is started by src/promises-http/main.ts");
const config: HttpClientConfig = cfg;
const target = new URL(config.url);

const VERSION = "2026-04-01";
const HOUR = 3_600_000;
const TARGET = "poll://any@default";
const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64");
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Envelope {
  readonly kind: string;
  readonly head: { readonly corrId: string; readonly status: number; readonly version?: string };
  readonly data: unknown;
}

/** One client: its own keep-alive connection and corrId sequence. */
class Client {
  readonly #agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  #corr = 0;
  requests = 0;

  constructor(readonly name: string) {}

  head(id: string): Record<string, string> {
    return { corrId: `${this.name}.${++this.#corr}`, version: VERSION, "resonate:origin": id };
  }

  /** One envelope, `POST /`; resolves with the parsed answer once checked. */
  post(body: { readonly kind: string; readonly head: Record<string, string>; readonly data: unknown }, expect: number): Promise<Envelope> {
    const text = JSON.stringify(body);
    this.requests++;
    return new Promise((resolve, reject) => {
      const request = http.request(
        {
          host: target.hostname,
          port: target.port,
          path: "/",
          method: "POST",
          agent: this.#agent,
          headers: { "content-type": "application/json", "content-length": Buffer.byteLength(text) },
        },
        (response) => {
          const chunks: Buffer[] = [];
          response.on("data", (chunk: Buffer) => chunks.push(chunk));
          response.on("error", reject);
          response.on("end", () => {
            const raw = Buffer.concat(chunks).toString("utf8");
            let answer: Envelope;
            try {
              answer = JSON.parse(raw) as Envelope;
            } catch {
              reject(new Error(`${body.kind}: HTTP ${response.statusCode}, not JSON: ${raw.slice(0, 300)}`));
              return;
            }
            if (response.statusCode !== expect || answer.head?.status !== expect) {
              reject(new Error(`${body.kind}: HTTP ${response.statusCode}, head.status ${answer.head?.status}, expected ${expect}: ${raw.slice(0, 300)}`));
            } else if (answer.kind !== body.kind || answer.head.corrId !== body.head["corrId"]) {
              reject(new Error(`${body.kind}: kind or corrId not echoed: ${raw.slice(0, 300)}`));
            } else resolve(answer);
          });
        },
      );
      request.on("error", reject);
      request.end(text);
    });
  }

  close(): void {
    this.#agent.destroy();
  }
}

type OpTimes = Map<string, number[]>;

async function timed(times: OpTimes | null, kind: string, call: () => Promise<Envelope>): Promise<Envelope> {
  const t0 = performance.now();
  const answer = await call();
  if (times !== null) {
    const ms = performance.now() - t0;
    const list = times.get(kind);
    if (list === undefined) times.set(kind, [ms]);
    else list.push(ms);
  }
  return answer;
}

/** One lifecycle of the root promise `id`: create (targeted), acquire, fulfill. */
async function lifecycle(client: Client, id: string, n: number, times: OpTimes | null): Promise<void> {
  const tags = { "resonate:origin": id, "resonate:branch": id, "resonate:parent": id, "resonate:scope": "global", "resonate:target": TARGET };
  const param = { headers: {}, data: b64({ func: "bench", args: [n], version: 1 }) };
  await timed(times, "promise.create", () =>
    client.post({ kind: "promise.create", head: client.head(id), data: { id, timeoutAt: Date.now() + HOUR, param, tags } }, 200),
  );
  await timed(times, "task.acquire", () => client.post({ kind: "task.acquire", head: client.head(id), data: { id, version: 0, pid: client.name, ttl: 60_000 } }, 200));
  const settle = { kind: "promise.settle", head: client.head(id), data: { id, state: "resolved", value: { headers: {}, data: b64(n) } } };
  const fulfilled = await timed(times, "task.fulfill", () => client.post({ kind: "task.fulfill", head: client.head(id), data: { id, version: 1, action: settle } }, 200));
  const state = (fulfilled.data as { promise?: { state?: string } } | null)?.promise?.state;
  if (state !== undefined && state !== "resolved") throw new Error(`task.fulfill of ${id}: the promise is ${state}, not resolved`);
}

/** C clients running lifecycles until `seconds` have passed and `minLifecycles` completed (or the cap). */
async function drive(clients: readonly Client[], prefix: string, seconds: number, minLifecycles: number, capSeconds: number, latencies: number[] | null, times: OpTimes | null) {
  let completed = 0;
  const t0 = performance.now();
  await Promise.all(
    clients.map(async (client, lane) => {
      for (let k = 0; ; k++) {
        const elapsed = (performance.now() - t0) / 1000;
        if (elapsed >= capSeconds || (elapsed >= seconds && completed >= minLifecycles)) return;
        const started = performance.now();
        await lifecycle(client, `bench-${prefix}-${lane}-${k}`, k, times);
        latencies?.push(performance.now() - started);
        completed++;
      }
    }),
  );
  return { completed, ms: performance.now() - t0 };
}

/** User + system CPU of one process (all its threads), ms. */
function processCpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  } catch {
    return Number.NaN;
  }
}

const emit = (record: Record<string, unknown>) => process.stdout.write(`@@bench ${JSON.stringify({ system: config.label, run: config.run, clients: config.clients, ...record })}\n`);

/** The cluster's next transaction id and WAL position (neither assigns an id nor writes WAL itself). */
async function pgCounters(admin: pg.Client): Promise<{ readonly xid: number; readonly wal: number }> {
  const { rows } = await admin.query("select pg_snapshot_xmax(pg_current_snapshot())::text::float8 as xid, pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::float8 as wal");
  return { xid: rows[0].xid, wal: rows[0].wal };
}

const clients = Array.from({ length: config.clients }, (_, i) => new Client(`bench-client-${i}`));
let admin: pg.Client | null = null;
try {
  if (config.pgAdmin !== null) {
    admin = new pg.Client({ connectionString: config.pgAdmin, application_name: "belay-bench-harness" });
    await admin.connect();
  }
  if (config.warmupSeconds > 0) await drive(clients, "warm", config.warmupSeconds, 0, config.warmupSeconds * 3, null, null);
  await sleep(config.pauseMs);
  const latencies: number[] = [];
  const times: OpTimes = new Map();
  const requests0 = clients.reduce((n, c) => n + c.requests, 0);
  const load = loadavg()[0];
  const server0 = processCpuMs(config.serverPid);
  const pg0 = config.postmasterPid === null ? null : processTreeCpuMs(config.postmasterPid);
  const counters0 = admin === null ? null : await pgCounters(admin);
  const cpu0 = process.cpuUsage();
  const { completed, ms } = await drive(clients, "m", config.seconds, config.minLifecycles, config.seconds * 4, latencies, times);
  const cpu = process.cpuUsage(cpu0);
  const server1 = processCpuMs(config.serverPid);
  const pg1 = config.postmasterPid === null ? null : processTreeCpuMs(config.postmasterPid);
  const counters1 = admin === null ? null : await pgCounters(admin);
  const latency = latencyPercentiles(latencies);
  emit({
    lifecycles: completed,
    requests: clients.reduce((n, c) => n + c.requests, 0) - requests0,
    ms: Math.round(ms),
    lifecycles_per_s: round2(completed / (ms / 1000)),
    ...latency,
    op_p50_ms: p50PerKind(times),
    client_cpu_ms_per_lifecycle: round2((cpu.user + cpu.system) / 1000 / completed),
    server_cpu_ms_per_lifecycle: round2((server1 - server0) / completed),
    postgres_cpu_ms_per_lifecycle: pg0 === null || pg1 === null ? null : round2((pg1 - pg0) / completed),
    pg_write_xacts_per_lifecycle: counters0 === null || counters1 === null ? null : round2((counters1.xid - counters0.xid) / completed),
    pg_wal_kb_per_lifecycle: counters0 === null || counters1 === null ? null : round2((counters1.wal - counters0.wal) / 1024 / completed),
    loadavg1: load,
  });
  process.stderr.write(`  ${config.label} @${config.clients}: ${round2(completed / (ms / 1000))} lifecycles/s, p50 ${latency.p50_ms} ms, p99 ${latency.p99_ms} ms (${completed} lifecycles)\n`);
} catch (error) {
  const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  process.stderr.write(`  ${config.label} @${config.clients} FAILED: ${message}\n`);
  emit({ error: message });
} finally {
  for (const client of clients) client.close();
  await admin?.end().catch(() => undefined);
}
