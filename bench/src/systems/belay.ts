// Belay on PostgreSQL (BELAY_STORE=postgres, database bench_belay, schema `belay`, dropped and
// re-migrated for every fresh session) or SQLite (BELAY_STORE=sqlite, a new file in the scratch
// folder for every fresh session). Library defaults throughout: PostgresStore with its own pool
// (10 connections) and LISTEN hints, SqliteStore with WAL + synchronous=NORMAL, history policy
// transitionsAndFailureDetail, Worker with one group of poolSize = the concurrency under test,
// default lease (60 s), poll interval (1 s), retention and logger. Producer and worker share one
// store per session, as an embedded deployment would.
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { JobStore } from "@belay/contract";
import { Client, Worker, defineJob, request } from "@belay/core";
import { HarnessAdmin, cfg } from "../child.js";
import { type Adapter, type Payload, type Session, runSystem } from "../driver.js";
import { type StoreCallStats, tracedJobStore } from "../traced-store.js";
import { probeRoundTrip, systemConnString } from "./network.js";

const KIND = process.env["BELAY_STORE"] === "sqlite" ? "sqlite" : "postgres";
const QUEUE = "bench";
const SCHEMA = "belay";

let onJobs: (payloads: readonly unknown[]) => void = () => undefined;
const noop = defineJob<Payload>({
  name: "bench.noop",
  queue: QUEUE,
  handler: (payload) => {
    onJobs([payload]);
  },
});

const admin = new HarnessAdmin(SCHEMA);
let sqliteFile = "";
let files = 0;
const sqliteDir = join(cfg.scratch, "sqlite", `run${cfg.run}`);

async function freshStore(fresh: boolean): Promise<JobStore> {
  if (KIND === "postgres") {
    await admin.prepare(fresh);
    const { PostgresStore } = await import("@belay/postgres");
    const store = new PostgresStore({ connectionString: systemConnString(cfg.database!), schema: SCHEMA });
    if (fresh) await store.migrate();
    return store;
  }
  if (fresh) {
    mkdirSync(sqliteDir, { recursive: true });
    sqliteFile = join(sqliteDir, `belay-${++files}.db`);
  }
  const { SqliteStore } = await import("@belay/sqlite");
  const store = new SqliteStore({ path: sqliteFile });
  if (fresh) await store.migrate();
  return store;
}

// ---- the worker's store calls, traced: how many, how large, how long, how many at once ----

const TRACED = ["claim", "reportOutcomes", "heartbeat"];
/** Pump counts of the opt-in `pumps-N` variants. */
const PUMPS = [2, 4];

function traceOf(ops: Map<string, StoreCallStats>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, s] of ops) {
    const ms = [...s.ms].sort((a, b) => a - b);
    const at = (p: number) => (ms.length ? Math.round(ms[Math.min(ms.length - 1, Math.floor(p * ms.length))]! * 100) / 100 : null);
    out[name] = { calls: s.calls, jobs_per_call: s.calls ? Math.round((s.jobs / s.calls) * 10) / 10 : null, p50_ms: at(0.5), p90_ms: at(0.9), max_in_flight: s.maxInFlight };
  }
  return { store_calls: out };
}

const adapter: Adapter = {
  variants: {
    default: {
      roles: { process: "both", latency: "both" },
      settings: { store: KIND, historyPolicy: "transitionsAndFailureDetail (default)", worker: "one group, poolSize = concurrency, other options default" },
    },
    // Not defaults and never compared: the same handlers split over N pumps (N claims and N
    // reports in flight instead of one each), to see what more overlapped round trips buy across
    // a network. Run only when named (`--variants default,pumps-2,pumps-4`).
    ...Object.fromEntries(
      PUMPS.map((n) => [
        `pumps-${n}`,
        { roles: { process: null, latency: null }, settings: { store: KIND, worker: `one group, pumps ${n}, poolSize = concurrency / ${n} each, other options default` }, optIn: true },
      ]),
    ),
  },
  api: { single: "client.enqueue", batch: `client.enqueueMany x${cfg.batch}` },
  async open(variant, fresh): Promise<Session> {
    const store = await freshStore(fresh);
    const client = new Client({ store });
    let worker: Worker | null = null;
    const ops = new Map<string, StoreCallStats>();
    return {
      enqueue: (payload) => client.enqueue(noop, payload),
      enqueueBatch: (list) => client.enqueueMany(list.map((p) => request(noop, p))),
      async startWorker(concurrency, handler) {
        onJobs = handler;
        const pumps = variant.startsWith("pumps-") ? Number(variant.slice("pumps-".length)) : 1;
        const group = { name: "bench", queues: [QUEUE], poolSize: Math.max(1, Math.round(concurrency / pumps)), ...(pumps > 1 ? { pumps } : {}) };
        worker = new Worker({ store: tracedJobStore(store, TRACED, ops), jobs: [noop], groups: [group] });
        await worker.start();
      },
      async completed() {
        if (KIND === "postgres") {
          return admin.count(`select count(*)::int as c from ${SCHEMA}.jobs where state = 3`);
        }
        const counts = await store.countJobs();
        return counts.filter((c) => c.state === "succeeded").reduce((n, c) => n + c.count, 0);
      },
      trace: () => traceOf(ops),
      async close() {
        if (worker !== null) await worker.stop({ timeoutMs: 10_000 });
        worker = null;
        onJobs = () => undefined;
        await store.close();
      },
    };
  },
  dispose: () => admin.end(),
  ...(KIND === "postgres" ? { facts: () => probeRoundTrip(cfg.database!) } : {}),
};

await runSystem(adapter);
