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
import type pg from "pg";
import { cfg, harnessClient, pgConnString } from "../child.js";
import { type Adapter, type Payload, type Session, runSystem } from "../driver.js";

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

let admin: pg.Client | null = null;
let sqliteFile = "";
let files = 0;
const sqliteDir = join(cfg.scratch, "sqlite", `run${cfg.run}`);

async function freshStore(fresh: boolean): Promise<JobStore> {
  if (KIND === "postgres") {
    admin ??= await harnessClient(cfg.database!);
    if (fresh) await admin.query(`drop schema if exists ${SCHEMA} cascade`);
    const { PostgresStore } = await import("@belay/postgres");
    const store = new PostgresStore({ connectionString: pgConnString(cfg.database!), schema: SCHEMA });
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

const adapter: Adapter = {
  variants: {
    default: {
      roles: { process: "both", latency: "both" },
      settings: { store: KIND, historyPolicy: "transitionsAndFailureDetail (default)", worker: "one group, poolSize = concurrency, other options default" },
    },
  },
  enqueueVariant: "default",
  api: { single: "client.enqueue", batch: `client.enqueueMany x${cfg.batch}` },
  async open(_variant, fresh): Promise<Session> {
    const store = await freshStore(fresh);
    const client = new Client({ store });
    let worker: Worker | null = null;
    return {
      enqueue: (payload) => client.enqueue(noop, payload),
      enqueueBatch: (list) => client.enqueueMany(list.map((p) => request(noop, p))),
      async startWorker(concurrency, handler) {
        onJobs = handler;
        worker = new Worker({ store, jobs: [noop], groups: [{ name: "bench", queues: [QUEUE], poolSize: concurrency }] });
        await worker.start();
      },
      async completed() {
        if (KIND === "postgres") {
          const { rows } = await admin!.query(`select count(*)::int as c from ${SCHEMA}.jobs where state = 3`);
          return Number(rows[0].c);
        }
        const counts = await store.countJobs();
        return counts.filter((c) => c.state === "succeeded").reduce((n, c) => n + c.count, 0);
      },
      async close() {
        if (worker !== null) await worker.stop({ timeoutMs: 10_000 });
        worker = null;
        onJobs = () => undefined;
        await store.close();
      },
    };
  },
  async dispose() {
    await admin?.end();
  },
};

await runSystem(adapter);
