// Throughput of @belay/sqlite on this machine: enqueue (one by one with 10 in flight, and in
// batches of 1,000) and processing of no-op jobs by the @belay/core Worker at pool sizes 10 and
// 50, plus a direct claim/report loop as a baseline. Prints numbers; asserts nothing.
//
// Run from the repository root, after building the packages it imports:
//   (cd packages/core && npx tsup) && (cd packages/sqlite && npx tsup)
//   node packages/sqlite/bench/sqlite-bench.mjs [--jobs 20000] [--synchronous normal|full]
import { mkdtempSync, rmSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import Database from "better-sqlite3";
import { Client, Worker, defineJob, request, silentLogger } from "../../core/dist/index.js";
import { SqliteStore } from "../dist/index.js";

const args = new Map(process.argv.slice(2).reduce((pairs, arg, i, all) => (arg.startsWith("--") ? [...pairs, [arg.slice(2), all[i + 1]]] : pairs), []));
const JOBS = Number(args.get("jobs") ?? 20_000);
const SYNCHRONOUS = args.get("synchronous") ?? "normal";
const dir = mkdtempSync(join(tmpdir(), "belay-sqlite-bench-"));
let files = 0;

const noop = defineJob({ name: "bench.noop", queue: "bench", handler: () => undefined });

async function freshStore() {
  const store = new SqliteStore({ path: join(dir, `bench-${++files}.db`), synchronous: SYNCHRONOUS });
  await store.migrate();
  return store;
}

const rate = (count, ms) => Math.round((count / ms) * 1_000);

/** Enqueue one job per call through the Client, with `inFlight` calls outstanding at a time. */
async function enqueueOneByOne(count, inFlight) {
  const store = await freshStore();
  const client = new Client({ store });
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next < count) {
        next++;
        await client.enqueue(noop, {});
      }
    }),
  );
  const elapsed = performance.now() - started;
  await store.close();
  return rate(count, elapsed);
}

/** Enqueue in calls of `batch` jobs through the Client. */
async function enqueueBatched(count, batch) {
  const store = await freshStore();
  const client = new Client({ store });
  const started = performance.now();
  for (let done = 0; done < count; done += batch) {
    await client.enqueueMany(Array.from({ length: Math.min(batch, count - done) }, () => request(noop, {})));
  }
  const elapsed = performance.now() - started;
  await store.close();
  return rate(count, elapsed);
}

async function filledStore(count) {
  const store = await freshStore();
  const client = new Client({ store });
  for (let done = 0; done < count; done += 1_000) {
    await client.enqueueMany(Array.from({ length: Math.min(1_000, count - done) }, () => request(noop, {})));
  }
  return store;
}

/** Drain `count` no-op jobs with the core Worker (one group, one pump, the given pool size). */
async function processWithWorker(count, poolSize) {
  const store = await filledStore(count);
  let applied = 0;
  let faults = 0;
  let finish;
  const drained = new Promise((resolve) => (finish = resolve));
  const worker = new Worker({
    store,
    jobs: [noop],
    groups: [{ name: "bench", queues: ["bench"], poolSize }],
    logger: silentLogger,
    onEvent: (event) => {
      if (event.type === "outcomesReported") {
        applied += event.results.filter((r) => r.status === "applied").length;
        if (applied >= count) finish();
      } else if (event.type === "storeFault" || event.type === "halted") {
        faults++;
      }
    },
  });
  const started = performance.now();
  await worker.start();
  const timeout = setTimeout(() => finish(), 120_000);
  await drained;
  const elapsed = performance.now() - started;
  clearTimeout(timeout);
  await worker.stop({ timeoutMs: 5_000 });
  const succeeded = (await store.countJobs()).find((c) => c.state === "succeeded")?.count ?? 0;
  await store.close();
  return { rate: rate(applied, elapsed), succeeded, faults };
}

/** Drain `count` no-op jobs with a direct claim → report loop: `slots` loops claiming up to 32 each. */
async function processDirectly(count, slots) {
  const store = await filledStore(count);
  let applied = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: slots }, async (_, slot) => {
      const workerId = `direct-${slot}`;
      while (applied < count) {
        const { jobs } = await store.claim({ workerId, queues: ["bench"], max: 32, leaseMs: 60_000, now: Date.now() });
        if (jobs.length === 0) break;
        const results = await store.reportOutcomes({
          reports: jobs.map((job) => ({ jobId: job.id, workerId, attempt: job.attempt, outcome: { type: "succeeded" } })),
          now: Date.now(),
        });
        applied += results.filter((r) => r.status === "applied").length;
      }
    }),
  );
  const elapsed = performance.now() - started;
  await store.close();
  return rate(applied, elapsed);
}

/**
 * The floor under one-by-one enqueue: better-sqlite3 alone committing `BEGIN IMMEDIATE`, three
 * inserts (job, payload, transition) and `COMMIT` per transaction on the store's schema, with the
 * same journal and synchronous settings. The store cannot commit single jobs faster than this.
 */
async function rawCommitFloor(count) {
  const store = await freshStore();
  await store.close();
  const db = new Database(store.path);
  db.pragma("journal_mode = WAL");
  db.pragma(`synchronous = ${SYNCHRONOUS === "full" ? "FULL" : "NORMAL"}`);
  const begin = db.prepare("BEGIN IMMEDIATE");
  const commit = db.prepare("COMMIT");
  const job = db.prepare(`INSERT INTO "belay_jobs" (id, job_name, queue, state, due_at, enqueued_at, transition_count)
    VALUES (?, 'bench.noop', 'bench', 0, 0, 0, 1) RETURNING seq`);
  const payload = db.prepare(`INSERT INTO "belay_job_payloads" (job_seq, payload) VALUES (?, '{}')`);
  const transition = db.prepare(`INSERT INTO "belay_transitions" (job_seq, ordinal, at, state, attempt) VALUES (?, 1, 0, 0, 0)`);
  const started = performance.now();
  for (let i = 0; i < count; i++) {
    begin.run();
    const { seq } = job.get(`raw-${i}`);
    payload.run(seq);
    transition.run(seq);
    commit.run();
  }
  const elapsed = performance.now() - started;
  db.close();
  return rate(count, elapsed);
}

console.log(`@belay/sqlite benchmark — ${JOBS} jobs per run, synchronous=${SYNCHRONOUS}, node ${process.version}, ${availableParallelism()} cores`);
console.log(`files in ${dir} (removed at the end)\n`);
try {
  const oneByOne = await enqueueOneByOne(Math.min(JOBS, 10_000), 10);
  console.log(`enqueue, one job per call, 10 in flight   ${oneByOne.toLocaleString("en")} jobs/s`);
  const batched = await enqueueBatched(JOBS * 5, 1_000);
  console.log(`enqueue, batches of 1,000                 ${batched.toLocaleString("en")} jobs/s`);
  for (const poolSize of [10, 50]) {
    const result = await processWithWorker(JOBS, poolSize);
    const note = result.succeeded === JOBS && result.faults === 0 ? "" : `  (succeeded ${result.succeeded}/${JOBS}, store faults ${result.faults})`;
    console.log(`Worker, no-op jobs, pool ${String(poolSize).padEnd(2)}               ${result.rate.toLocaleString("en")} jobs/s${note}`);
  }
  const direct = await processDirectly(JOBS, 4);
  console.log(`direct claim(32)/report loop, 4 slots     ${direct.toLocaleString("en")} jobs/s`);
  const floor = await rawCommitFloor(Math.min(JOBS, 10_000));
  console.log(`(floor: raw better-sqlite3, 1 job per tx  ${floor.toLocaleString("en")} jobs/s)`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
