import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import type { JobStore } from "@belay/contract";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hintChannel } from "../src/hints.js";
import { PostgresStore } from "../src/index.js";
import { dropSchema, pgTarget, randomSchema, testPool } from "./pg-target.js";

// Wake-up hints end to end, with the real Worker of @belay/core (its built dist): an idle
// worker polling every 10 s starts a new job within 100 ms of its enqueue; with its LISTEN
// connection killed it still starts the job, by polling, and the connection comes back alone.

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

async function until(condition: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

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

  /** A worker on its own store and pool, recording when each job's handler starts. */
  async function startWorker(queue: string, pollIntervalMs: number) {
    const store = new PostgresStore({ connectionString: url!, schema, maxConnections: 4 });
    stores.push(store);
    const started = new Map<number, number>();
    const faults: string[] = [];
    const job = core.defineJob({
      name: `hint.${queue}`,
      queue,
      handler: async ({ n }) => void started.set(n, Date.now()),
    });
    const worker = new core.Worker({
      store,
      jobs: [job],
      groups: [{ name: queue, queues: [queue], poolSize: 4 }],
      pollIntervalMs,
      logger: core.silentLogger,
      onEvent: (event: { type: string; message?: string }) => {
        if (event.type === "storeFault" || event.type === "halted") faults.push(`${event.type}: ${event.message}`);
      },
    });
    workers.push(worker);
    await worker.start();
    await until(() => store.listening, 5_000, "the LISTEN connection");
    // Let the first poll (at start) come and go: the worker is now asleep for pollIntervalMs.
    await new Promise((resolve) => setTimeout(resolve, 300));
    return { store, started, faults };
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

  it("an idle worker polling every 10 s starts a newly enqueued job within 100 ms", async () => {
    const { started, faults } = await startWorker("fast", 10_000);
    const source = await warmProducer();
    const latencies: number[] = [];
    for (let n = 0; n < 5; n++) {
      const enqueuedAt = await enqueueProbe(source, "fast", n);
      await until(() => started.has(n), 5_000, `job ${n} to start`);
      latencies.push(started.get(n)! - enqueuedAt);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    console.info(`[hints] enqueue acknowledged → handler start: ${latencies.join(", ")} ms`);
    expect(faults).toEqual([]);
    for (const latency of latencies) expect(latency, "enqueue to start").toBeLessThan(100);
  }, 60_000);

  it("a store hears its own enqueues in-process, once each, and other stores hear them through NOTIFY", async () => {
    const own = producer();
    const other = producer();
    const heardOwn: string[] = [];
    const heardOther: string[] = [];
    const offOwn = own.subscribeHints!((queue) => heardOwn.push(queue));
    const offOther = other.subscribeHints!((queue) => heardOther.push(queue));
    try {
      await until(() => own.listening && other.listening, 5_000, "both LISTEN connections");
      let heardAt = 0;
      const offTimer = own.subscribeHints!(() => (heardAt ||= Date.now()));
      await enqueueProbe(own, "local", 0);
      // In-process: heard before the enqueue call even returned to this line.
      expect(heardAt, "own hint delivered during the enqueue call").toBeGreaterThan(0);
      offTimer();
      await until(() => heardOther.includes("local"), 2_000, "the other store to hear the NOTIFY");
      // The server echoes the NOTIFY to the connection that sent it too; that echo is dropped.
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(heardOwn.filter((q) => q === "local")).toEqual(["local"]);
      expect(heardOther.filter((q) => q === "local")).toEqual(["local"]);
    } finally {
      offOwn();
      offOther();
    }
  }, 30_000);

  it("with its LISTEN connection killed, the worker still starts the job by polling, and hints come back", async () => {
    const pollIntervalMs = 1_000;
    const { store, started, faults } = await startWorker("slow", pollIntervalMs);
    const source = await warmProducer();
    const killed = await pool.query(
      "SELECT pg_terminate_backend(pid) AS killed FROM pg_stat_activity WHERE query = $1",
      [`LISTEN "${hintChannel(schema)}"`],
    );
    expect(killed.rows.length, "LISTEN connections terminated").toBeGreaterThanOrEqual(1);
    await until(() => !store.listening, 2_000, "the store to notice the lost connection");

    // Enqueued while nobody listens: the hint is lost; the next poll finds the job.
    const enqueuedAt = await enqueueProbe(source, "slow", 0);
    await until(() => started.has(0), pollIntervalMs + 2_000, "the job to start by polling");
    const latency = started.get(0)! - enqueuedAt;
    console.info(`[hints] LISTEN killed: started by polling after ${latency} ms (poll interval ${pollIntervalMs} ms)`);
    expect(latency).toBeLessThanOrEqual(pollIntervalMs + 250);

    // The subscription reconnects by itself, and hints work again.
    await until(() => store.listening, 6_000, "the LISTEN connection to come back");
    await new Promise((resolve) => setTimeout(resolve, pollIntervalMs + 200));
    const again = await enqueueProbe(source, "slow", 1);
    await until(() => started.has(1), 5_000, "the job to start");
    expect(started.get(1)! - again, "hinted start after the reconnect").toBeLessThan(100);
    expect(faults).toEqual([]);
  }, 60_000);
});
