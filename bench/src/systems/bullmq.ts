// BullMQ 6.7 on the private Redis (BULLMQ_BACKEND=redis: AOF everysec, see main.ts; the queue is
// obliterated for every fresh session) or on its built-in PostgreSQL backend (BULLMQ_BACKEND=
// postgres, database bench_bullmq, schema dropped and re-migrated). Enqueue: add / addBulk.
// Worker: new Worker(Q, fn, { concurrency: C }), library defaults otherwise (completed jobs
// kept) -- BullMQ's documented way to scale one worker is its concurrency, so this one
// configuration is both its "best" and its "default". Completion = the worker's `completed`
// event, emitted after the job was moved to completed in the store.
import { Queue, Worker, createPostgresBackend, runMigrations } from "bullmq";
import { Redis } from "ioredis";
import pg from "pg";
import { cfg } from "../child.js";
import { type Adapter, type Session, runSystem } from "../driver.js";

const BACKEND = process.env["BULLMQ_BACKEND"] === "postgres" ? "postgres" : "redis";
const Q = "noop";
const redisUrl = new URL(cfg.redisUrl);
const pgConn = () => ({ host: cfg.pg.host, port: cfg.pg.port, user: cfg.pg.user, database: cfg.database! });

// BullMQ 6 loads ioredis lazily via require(); from ESM a constructed client must be passed.
// Clients made here are closed by queue/worker.close() and quit again at the end of a session.
const clients: Redis[] = [];
const redis = (): Redis => {
  const c = new Redis({ host: redisUrl.hostname, port: Number(redisUrl.port), maxRetriesPerRequest: null });
  clients.push(c);
  return c;
};
const closeRedis = () => Promise.all(clients.splice(0).map((c) => c.quit().catch(() => c.disconnect())));
// biome-ignore lint: BullMQ's backend factory typing is loose
const makeQueue = (): Queue => (BACKEND === "redis" ? new Queue(Q, { connection: redis() }) : new (Queue as any)(Q, { connection: pgConn() }, createPostgresBackend));

async function reset(): Promise<void> {
  if (BACKEND === "redis") {
    const q = makeQueue();
    await q.waitUntilReady();
    await q.obliterate({ force: true });
    await q.close();
    await closeRedis();
  } else {
    const c = new pg.Client({ ...pgConn(), application_name: "belay-bench-harness" });
    await c.connect();
    await c.query("drop schema if exists bullmq cascade");
    await runMigrations(c);
    await c.end();
  }
}

const adapter: Adapter = {
  variants: {
    default: { roles: { process: "both", latency: "both" }, settings: { concurrency: "C", backend: BACKEND } },
  },
  api: { single: "add", batch: `addBulk x${cfg.batch}` },
  async open(_variant, fresh): Promise<Session> {
    if (fresh) await reset();
    const queue = makeQueue();
    await queue.waitUntilReady();
    let worker: Worker | null = null;
    let completed = 0;
    return {
      enqueue: (payload) => queue.add("noop", payload),
      enqueueBatch: (list) => queue.addBulk(list.map((data) => ({ name: "noop", data }))),
      async startWorker(concurrency, onJobs) {
        const processor = async (job: { data: unknown }) => {
          onJobs([job.data]);
        };
        const opts = { concurrency };
        worker =
          BACKEND === "redis"
            ? new Worker(Q, processor, { ...opts, connection: redis() })
            : // biome-ignore lint: see makeQueue
              new (Worker as any)(Q, processor, { ...opts, connection: pgConn() }, createPostgresBackend);
        worker!.on("completed", () => {
          completed++;
        });
        worker!.on("error", (e: Error) => console.error(`[bullmq] ${e.message}`));
        await worker!.waitUntilReady();
      },
      completed: async () => completed,
      async close() {
        if (worker !== null) await worker.close();
        worker = null;
        await queue.close();
        await closeRedis();
      },
    };
  },
  async dispose() {},
};

await runSystem(adapter);
