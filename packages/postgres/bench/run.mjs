// Belay on PostgreSQL: throughput numbers, printed, never asserted (this is not a test).
//
//   cd packages/postgres && npx tsup && (cd ../core && npx tsup)
//   BELAY_BENCH_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/postgres node bench/run.mjs [--jobs 20000]
//
// Scenarios, each on a fresh schema dropped afterwards:
//   1. one-by-one enqueue, 10 calls in flight, hints on and hints off
//   2. batch enqueue, 1,000 jobs per call
//   3. processing no-op jobs with the @belay/core Worker at 10 and at 50 concurrent handlers
import { randomBytes } from "node:crypto";
import os from "node:os";
import pg from "pg";
import { PostgresStore } from "../dist/index.js";
import { Worker, defineJob, silentLogger } from "../../core/dist/index.js";

const url = process.env.BELAY_BENCH_POSTGRES_URL ?? process.env.BELAY_TEST_POSTGRES_URL;
if (!url) {
  console.error("set BELAY_BENCH_POSTGRES_URL (or BELAY_TEST_POSTGRES_URL) to a PostgreSQL URL");
  process.exit(2);
}
const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const JOBS = arg("jobs", 20_000);
const ONE_BY_ONE = arg("one-by-one", 5_000);
const ROUNDS = arg("rounds", 1);

const admin = new pg.Pool({ connectionString: url, max: 2 });
const schemas = [];

async function freshStore(options = {}) {
  const schema = `belay_bench_${randomBytes(4).toString("hex")}`;
  schemas.push(schema);
  const store = new PostgresStore({ connectionString: url, schema, maxConnections: 12, ...options });
  await store.migrate();
  return store;
}

function percentile(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

const fmt = (n) => Math.round(n).toLocaleString("en-US");

async function enqueueOneByOne(hints) {
  const store = await freshStore({ hints });
  const latencies = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: 10 }, async () => {
      for (let n = next++; n < ONE_BY_ONE; n = next++) {
        const now = Date.now();
        const t = performance.now();
        await store.enqueue({ jobs: [{ id: `j${n}`, jobName: "bench.noop", queue: "bench", payload: "{}", dueAt: now }], now });
        latencies.push(performance.now() - t);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  await store.close();
  latencies.sort((a, b) => a - b);
  console.log(
    `one-by-one enqueue, 10 in flight, hints ${hints ? "on " : "off"}: ${fmt(ONE_BY_ONE / seconds)} jobs/s` +
      `  (p50 ${percentile(latencies, 50).toFixed(2)} ms, p99 ${percentile(latencies, 99).toFixed(2)} ms, ${ONE_BY_ONE} jobs)`,
  );
}

async function batchEnqueue(store, count, queue) {
  const now = Date.now();
  for (let i = 0; i < count; i += 1_000) {
    const jobs = [];
    for (let k = i; k < Math.min(i + 1_000, count); k++) jobs.push({ id: `${queue}-${k}`, jobName: "bench.noop", queue, payload: "{}", dueAt: now });
    await store.enqueue({ jobs, now });
  }
}

async function enqueueBatches() {
  const store = await freshStore();
  const started = performance.now();
  await batchEnqueue(store, JOBS, "bench");
  const seconds = (performance.now() - started) / 1000;
  await store.close();
  console.log(`batch enqueue, 1,000 per call: ${fmt(JOBS / seconds)} jobs/s  (${JOBS} jobs, ${(seconds * 1000 / (JOBS / 1000)).toFixed(1)} ms per call)`);
}

async function processNoop(poolSize) {
  const store = await freshStore();
  await batchEnqueue(store, JOBS, "bench");
  const job = defineJob({ name: "bench.noop", queue: "bench", handler: async () => {} });
  let finished = 0;
  let applied = 0;
  let faults = 0;
  let resolveDone;
  const done = new Promise((resolve) => (resolveDone = resolve));
  const worker = new Worker({
    store,
    jobs: [job],
    groups: [{ name: "bench", queues: ["bench"], poolSize }],
    pollIntervalMs: 100,
    logger: silentLogger,
    onEvent: (event) => {
      if (event.type === "jobFinished") finished++;
      if (event.type === "outcomesReported") {
        applied += event.results.filter((r) => r.status === "applied").length;
        if (applied >= JOBS) resolveDone();
      }
      if (event.type === "storeFault" || event.type === "halted") faults++;
    },
  });
  const started = performance.now();
  await worker.start();
  await done;
  const seconds = (performance.now() - started) / 1000;
  await worker.stop({ timeoutMs: 5_000 });
  const [{ succeeded }] = (await admin.query(`SELECT count(*)::int AS succeeded FROM "${store.schema}".jobs WHERE state = 3`)).rows;
  await store.close();
  console.log(
    `processing no-op jobs, Worker with ${poolSize} concurrent handlers: ${fmt(JOBS / seconds)} jobs/s` +
      `  (${JOBS} jobs in ${seconds.toFixed(2)} s; ${succeeded} succeeded in the store; ${faults} store faults)`,
  );
}

try {
  const [{ version }] = (await admin.query("SELECT current_setting('server_version') AS version")).rows;
  const settings = (await admin.query(
    "SELECT name, setting FROM pg_settings WHERE name IN ('fsync', 'synchronous_commit', 'shared_buffers') ORDER BY name",
  )).rows.map((r) => `${r.name}=${r.setting}`);
  console.log(`PostgreSQL ${version} (${settings.join(", ")}); Node ${process.version}; ${os.cpus().length} cores; load ${os.loadavg().map((l) => l.toFixed(1)).join(" ")}`);
  // With --rounds N the scenarios alternate N times, so that a busy machine's drift hits both
  // sides of each comparison alike.
  for (let round = 0; round < ROUNDS; round++) {
    await enqueueOneByOne(true);
    await enqueueOneByOne(false);
  }
  for (let round = 0; round < ROUNDS; round++) await enqueueBatches();
  for (let round = 0; round < ROUNDS; round++) {
    await processNoop(10);
    await processNoop(50);
  }
} finally {
  for (const schema of schemas) await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await admin.end();
}
