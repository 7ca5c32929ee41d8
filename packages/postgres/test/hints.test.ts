import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import type { JobStore } from "@belay/contract";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hintChannel } from "../src/hints.js";
import { PostgresStore } from "../src/index.js";
import { dropSchema, pgTarget, randomSchema, testPool } from "./pg-target.js";
import { countingClaims } from "./support/claims.js";
import { until } from "./support/until.js";

// Wake-up hints end to end, with the real Worker of @belay/core (its built dist): an idle
// worker whose next poll is an hour away still starts a new job, so the hint woke it; with its
// LISTEN connection killed it still starts the job, by polling, and the connection comes back
// alone. Nothing here asserts a duration: each wait is for an event, with a generous deadline
// (latencies are printed, for the curious).

const target = await pgTarget("hints.test.ts");
const url = target.url;
const coreDir = fileURLToPath(new URL("../../core/", import.meta.url));

// The few parts of @belay/core this test drives (typed here: core is not a dependency).
interface CoreWorker {
  start(): Promise<void>;
  stop(options?: { timeoutMs?: number }): Promise<void>;
}
interface Core {
  defineJob(options: { name: string; queue: string; handler: (payload: { n: number }) => Promise<void> }): unknown;
  Worker: new (options: Record<string, unknown>) => CoreWorker;
  silentLogger: unknown;
}

/** Long enough for anything on a loaded machine; far shorter than {@link IDLE_POLL_MS}. */
const DEADLINE_MS = 30_000;
/** A poll interval no test waits out: a job that starts was started by a hint. */
const IDLE_POLL_MS = 3_600_000;

describe.skipIf(url === undefined)(`postgres wake-up hints with the core Worker (${target.reason})`, () => {
  let core: Core;
  let pool: pg.Pool;
  const schema = randomSchema("hints");
  const stores: JobStore[] = [];
  const workers: CoreWorker[] = [];

  beforeAll(async () => {
    execFileSync("npx", ["tsup"], { cwd: coreDir, stdio: "ignore" });
    core = (await import(/* @vite-ignore */ `${coreDir}dist/index.js`)) as Core;
    pool = testPool(url!);
    const store = new PostgresStore({ pool, schema });
    await store.migrate();
    await store.close();
  }, 120_000);

  afterAll(async () => {
    for (const worker of workers) await worker.stop({ timeoutMs: 1_000 });
    for (const store of stores) await store.close();
    if (pool) {
      await dropSchema(pool, schema);
      await pool.end();
    }
    await target.stop();
  });

  /**
   * A worker on its own store and pool, recording when each job's handler starts; `claims` says
   * how many of the worker's claims have finished and how many are in flight.
   */
  async function startWorker(queue: string, pollIntervalMs: number) {
    const store = new PostgresStore({ connectionString: url!, schema, maxConnections: 4 });
    stores.push(store);
    const { counted, claims } = countingClaims(store);
    const started = new Map<number, number>();
    const faults: string[] = [];
    const job = core.defineJob({
      name: `hint.${queue}`,
      queue,
      handler: async ({ n }) => void started.set(n, Date.now()),
    });
    const worker = new core.Worker({
      store: counted,
      jobs: [job],
      groups: [{ name: queue, queues: [queue], poolSize: 4 }],
      pollIntervalMs,
      // No maintenance passes either: nothing but a poll or a hint makes the worker claim.
      maintenanceIntervalMs: IDLE_POLL_MS,
      logger: core.silentLogger,
      onEvent: (event: { type: string; message?: string }) => {
        if (event.type === "storeFault" || event.type === "halted") faults.push(`${event.type}: ${event.message}`);
      },
    });
    workers.push(worker);
    await worker.start();
    await until(() => store.listening, "the LISTEN connection");
    // Let the first poll (at start) come and go: the worker is now asleep for pollIntervalMs.
    await until(() => claims.finished > 0 && claims.inFlight === 0, "the worker's first claim");
    return { store, started, faults, claims };
  }

  function producer(): PostgresStore {
    const store = new PostgresStore({ connectionString: url!, schema, maxConnections: 2 });
    stores.push(store);
    return store;
  }

  /** Enqueues one probe; returns when its commit was acknowledged (the clock the latency runs on). */
  async function enqueueProbe(store: PostgresStore, queue: string, n: number): Promise<number> {
    const now = Date.now();
    const [result] = await store.enqueue({
      jobs: [{ id: `${queue}-${n}`, jobName: `hint.${queue}`, queue, payload: JSON.stringify({ n }), dueAt: now }],
      now,
    });
    expect(result).toMatchObject({ status: "created" });
    return Date.now();
  }

  /** A producer whose connection and statements are ready, so its own start-up is not measured. */
  async function warmProducer(): Promise<PostgresStore> {
    const store = producer();
    await enqueueProbe(store, "unserved", stores.length);
    return store;
  }

  it("an idle worker whose next poll is an hour away starts each newly enqueued job: the hint woke it", async () => {
    const { started, faults, claims } = await startWorker("fast", IDLE_POLL_MS);
    const source = await warmProducer();
    const latencies: number[] = [];
    for (let n = 0; n < 5; n++) {
      // Between jobs the worker goes back to sleep: no claim of its own is still running.
      await until(() => claims.inFlight === 0, `the worker to go idle before job ${n}`);
      const enqueuedAt = await enqueueProbe(source, "fast", n);
      await until(() => started.has(n), `job ${n} to start (the next poll is an hour away: only a hint starts it)`);
      latencies.push(started.get(n)! - enqueuedAt);
    }
    console.info(`[hints] enqueue acknowledged → handler start: ${latencies.join(", ")} ms`);
    expect(faults).toEqual([]);
  }, 4 * DEADLINE_MS);

  it("a store hears its own enqueues in-process, once each, and other stores hear them through NOTIFY", async () => {
    const own = producer();
    const other = producer();
    const heardOwn: string[] = [];
    const heardOther: string[] = [];
    const offOwn = own.subscribeHints!((queue) => heardOwn.push(queue));
    const offOther = other.subscribeHints!((queue) => heardOther.push(queue));
    try {
      await until(() => own.listening && other.listening, "both LISTEN connections");
      let heardAt = 0;
      const offTimer = own.subscribeHints!(() => (heardAt ||= Date.now()));
      await enqueueProbe(own, "local", 0);
      // In-process: heard before the enqueue call even returned to this line.
      expect(heardAt, "own hint delivered during the enqueue call").toBeGreaterThan(0);
      offTimer();
      await until(() => heardOther.includes("local"), "the other store to hear the NOTIFY");
      // The server echoes the NOTIFY to the connection that sent it too; that echo is dropped.
      // A later NOTIFY from the other store reaches own's connection after that echo (a session
      // gets notifications in commit order): once it is heard, the echo has been too.
      await enqueueProbe(other, "marker", 0);
      await until(() => heardOwn.includes("marker"), "own store to hear the other's later NOTIFY");
      expect(heardOwn.filter((q) => q === "local")).toEqual(["local"]);
      expect(heardOther.filter((q) => q === "local")).toEqual(["local"]);
    } finally {
      offOwn();
      offOther();
    }
  }, 4 * DEADLINE_MS);

  it("with its LISTEN connection killed, the worker still starts the job by polling, and hints come back", async () => {
    const pollIntervalMs = 1_000;
    const { store, started, faults } = await startWorker("slow", pollIntervalMs);
    const heard: string[] = [];
    const unsubscribe = store.subscribeHints!((queue) => heard.push(queue));
    const source = await warmProducer();
    const killed = await pool.query(
      "SELECT pg_terminate_backend(pid) AS killed FROM pg_stat_activity WHERE query = $1",
      [`LISTEN "${hintChannel(schema)}"`],
    );
    expect(killed.rows.length, "LISTEN connections terminated").toBeGreaterThanOrEqual(1);
    await until(() => !store.listening, "the store to notice the lost connection");

    // Enqueued while nobody listens: the hint is lost; the next poll finds the job.
    const enqueuedAt = await enqueueProbe(source, "slow", 0);
    await until(() => started.has(0), "the job to start by polling");
    console.info(`[hints] LISTEN killed: started by polling after ${started.get(0)! - enqueuedAt} ms (poll interval ${pollIntervalMs} ms)`);

    // The subscription reconnects by itself, and hints work again: the producer's NOTIFY is heard.
    await until(() => store.listening, "the LISTEN connection to come back");
    heard.length = 0;
    await enqueueProbe(source, "slow", 1);
    await until(() => heard.includes("slow"), "the hint of a job enqueued after the reconnect");
    await until(() => started.has(1), "the job to start");
    unsubscribe();
    expect(faults).toEqual([]);
  }, 6 * DEADLINE_MS);
});
