import type { JobStore } from "@belay/contract";
import { type Logger, consoleLogger } from "@belay/core";
import { type HostConfig, type JobsModule, WorkerHost, hostConfigSchema, loadJobsModule, openStore } from "@belay/host";
import { type BelayServer, createServer } from "./create-server.js";
import { type Listener, serve } from "./serve.js";
import type { ServerArgs } from "./server-args.js";

/** A running `belay-server`: store, optional worker host, HTTP listener. */
export interface RunningServer {
  readonly url: string;
  readonly store: JobStore;
  readonly server: BelayServer;
  readonly listener: Listener;
  readonly workerHost: WorkerHost | null;
  /** Graceful stop: stop listening, let the worker finish (within its deadline), close the store. */
  stop(): Promise<void>;
}

/**
 * Opens the store, migrates if asked, loads the jobs module (and builds the embedded worker),
 * starts listening and then the worker. Shared by the `belay-server` command and the demo.
 */
export async function startServer(
  args: ServerArgs,
  options: {
    readonly logger?: Logger;
    /** A jobs module already loaded (the demo's), instead of `args.jobs`. */
    readonly jobsModule?: JobsModule;
    /** Worker settings beyond the defaults (poll and maintenance intervals, …). */
    readonly worker?: Partial<Omit<HostConfig, "store" | "jobs" | "migrate">>;
  } = {},
): Promise<RunningServer> {
  const logger = options.logger ?? consoleLogger({ component: "belay-server" }, "info");
  const store = await openStore(args.store);
  try {
    if (args.migrate) {
      const { fromVersion, toVersion } = await store.migrate();
      if (fromVersion !== toVersion) logger.info("schema migrated", { fromVersion, toVersion });
    }
    const jobs = options.jobsModule ?? (args.jobs === null ? null : await loadJobsModule(args.jobs));
    let workerHost: WorkerHost | null = null;
    if (args.withWorker && jobs !== null) {
      const config = hostConfigSchema.parse({ store: args.store, jobs: args.jobs ?? "(in process)", ...options.worker });
      workerHost = await WorkerHost.create(config, { store, jobs, logger: logger.child({ component: "belay-worker" }) });
    }
    const server = createServer({
      store,
      ...(jobs === null ? {} : { jobs: jobs.jobs }),
      ...(workerHost === null ? {} : { workerHost }),
      tokens: args.tokens,
      ...(args.title === null ? {} : { title: args.title }),
      logger,
    });
    const listener = await serve(server, { host: args.host, port: args.port });
    await workerHost?.start();
    let stopping: Promise<void> | null = null;
    return {
      url: listener.url,
      store,
      server,
      listener,
      workerHost,
      stop() {
        stopping ??= (async () => {
          await listener.close();
          await workerHost?.stop();
          await store.close();
        })();
        return stopping;
      },
    };
  } catch (error) {
    await store.close().catch(() => {});
    throw error;
  }
}
