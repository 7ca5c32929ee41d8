// pg-boss 12.38 (database bench_boss; schema pgboss dropped and recreated by boss.start() for every
// fresh session). pg-boss 12 declares node >= 22.12; it is run on the machine's Node 20.
// Enqueue: send (plain queue) / insert. Worker configurations, at the concurrency under test C:
//  default:      work(Q, { localConcurrency: C }) with the library defaults (batchSize 1,
//                pollingIntervalSeconds 2: a worker waits the interval after every fetch unless a
//                burst rule applies, so this is poll-bound by design and processing is measured for
//                processCapS seconds only and reported as a rate).
//  batch:        work(Q, { batchSize: C, burstWhenBatchFull: true }): one worker fetching C jobs per
//                round trip and re-fetching at once while batches come back full (the documented
//                throughput setting). Its handler gets the C jobs in one call.
//  notify-batch: batch plus LISTEN/NOTIFY wake-up (new PgBoss({ useListenNotify: true }) and
//                createQueue(Q, { notify: true })): the documented low-latency setting, so it is
//                pg-boss's "best" for the latency phase (idle workers otherwise sleep 2 s).
import { PgBoss } from "pg-boss";
import { HarnessAdmin, cfg } from "../child.js";
import { systemConnString } from "./network.js";
import { type Adapter, type Session, type VariantSpec, runSystem } from "../driver.js";

const connectionString = systemConnString(cfg.database!);
const Q = "noop";

interface BossVariant extends VariantSpec {
  readonly boss: Record<string, unknown>;
  readonly queue: Record<string, unknown>;
  readonly work: (c: number) => Record<string, unknown>;
}

const variants: Record<string, BossVariant> = {
  batch: {
    roles: { process: "best", latency: null },
    boss: {},
    queue: {},
    work: (c) => ({ batchSize: c, burstWhenBatchFull: true }),
    settings: { work: { batchSize: "C", burstWhenBatchFull: true } },
  },
  "notify-batch": {
    roles: { process: null, latency: "best" },
    boss: { useListenNotify: true },
    queue: { notify: true },
    work: (c) => ({ batchSize: c, burstWhenBatchFull: true }),
    settings: { useListenNotify: true, queue: { notify: true }, work: { batchSize: "C", burstWhenBatchFull: true } },
  },
  default: {
    roles: { process: "default", latency: "default" },
    boss: {},
    queue: {},
    work: (c) => ({ localConcurrency: c }),
    settings: { work: { localConcurrency: "C" }, pollingIntervalSeconds: "2 (default)" },
    capped: true,
  },
};

const admin = new HarnessAdmin("pgboss");

const adapter: Adapter = {
  variants,
  api: { single: "send", batch: `insert x${cfg.batch}` },
  async open(variant, fresh): Promise<Session> {
    const v = variants[variant]!;
    await admin.prepare(fresh);
    const boss = new PgBoss({ connectionString, ...v.boss });
    boss.on("error", (e: Error) => console.error(`[pg-boss] ${e.message}`));
    await boss.start();
    if (fresh) await boss.createQueue(Q, v.queue);
    let working = false;
    let stopped = false;
    return {
      enqueue: (payload) => boss.send(Q, payload),
      enqueueBatch: (list) => boss.insert(Q, list.map((data) => ({ data }))),
      async startWorker(concurrency, onJobs) {
        working = true;
        await boss.work(Q, v.work(concurrency), async (jobs: { data: unknown }[]) => {
          onJobs(jobs.map((j) => j.data));
        });
      },
      async completed() {
        return admin.count("select count(*)::int as c from pgboss.job where name = $1 and state = 'completed'", [Q]);
      },
      async close() {
        if (stopped) return;
        stopped = true;
        await boss.stop({ graceful: working, close: true, timeout: 30_000 });
      },
    };
  },
  dispose: () => admin.end(),
};

await runSystem(adapter);
