// graphile-worker 0.18 (database bench_gw; schema graphile_worker dropped and re-migrated for
// every fresh session). Enqueue: workerUtils.addJob / addJobs. Worker configurations, at the
// concurrency under test C:
//  default:  concurrentJobs C only; everything else the library default (pool 10, pollInterval
//            2 s with LISTEN/NOTIFY, no local queue, synchronous complete/fail).
//  perftest: the repo's perfTest/graphile.config.js and the Performance docs' stats config:
//            maxPoolSize C+1, localQueue { size 500, refetchDelay 10 ms }, completeJobBatchDelay
//            and failJobBatchDelay 0 (batched completion).
import { Logger, type Runner, type WorkerUtils, makeWorkerUtils, run } from "graphile-worker";
import { HarnessAdmin, cfg } from "../child.js";
import { systemConnString } from "./network.js";
import { type Adapter, type Session, type VariantSpec, runSystem } from "../driver.js";

const connectionString = systemConnString(cfg.database!);
const logger = new Logger(() => (level, message) => {
  if (level === "error") console.error(`[graphile-worker] ${message}`);
});

const settingsFor = (variant: string, c: number): Record<string, unknown> =>
  variant === "perftest"
    ? { concurrentJobs: c, maxPoolSize: c + 1, localQueue: { size: 500, refetchDelay: { durationMs: 10 } }, completeJobBatchDelay: 0, failJobBatchDelay: 0 }
    : { concurrentJobs: c };

const variants: Record<string, VariantSpec> = {
  perftest: { roles: { process: "best", latency: "best" }, settings: settingsFor("perftest", 0) },
  default: { roles: { process: "default", latency: "default" }, settings: settingsFor("default", 0) },
};

const admin = new HarnessAdmin("graphile_worker");

const adapter: Adapter = {
  variants,
  api: { single: "addJob", batch: `addJobs x${cfg.batch}` },
  async open(variant, fresh): Promise<Session> {
    await admin.prepare(fresh);
    if (fresh) {
      const u = await makeWorkerUtils({ connectionString, logger });
      await u.migrate();
      await u.release();
    }
    let utils: WorkerUtils | null = null;
    let closed = false;
    const getUtils = async () => {
      if (closed) throw new Error("session closed");
      return (utils ??= await makeWorkerUtils({ connectionString, logger }));
    };
    let runner: Runner | null = null;
    return {
      enqueue: async (payload) => (await getUtils()).addJob("noop", payload),
      enqueueBatch: async (list) => (await getUtils()).addJobs(list.map((payload) => ({ identifier: "noop", payload }))),
      async startWorker(concurrency, onJobs) {
        runner = await run({
          connectionString,
          noHandleSignals: true,
          logger,
          taskList: {
            noop: async (payload) => {
              onJobs([payload]);
            },
          },
          preset: { worker: { ...settingsFor(variant, concurrency), logger } },
        });
      },
      async completed() {
        return cfg.jobs - (await admin.count("select count(*)::int as c from graphile_worker._private_jobs"));
      },
      async close() {
        closed = true;
        if (runner !== null) await runner.stop();
        runner = null;
        if (utils !== null) await utils.release();
        utils = null;
      },
    };
  },
  dispose: () => admin.end(),
};

await runSystem(adapter);
