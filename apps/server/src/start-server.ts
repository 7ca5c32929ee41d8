import type { JobStore, PromiseStore } from "@belay/contract";
import { type Logger, consoleLogger } from "@belay/core";
import { type HostConfig, type JobsModule, WorkerHost, hostConfigSchema, loadJobsModule, openPromiseStore, openStore } from "@belay/host";
import { type BelayServer, createServer } from "./create-server.js";
import { type PromiseServer, type PromiseServerOptions, createPromiseServer } from "./daa/promise-server.js";
import { type Listener, serve } from "./serve.js";
import type { ServerArgs } from "./server-args.js";

/** The durable-promise half of a running `belay-server`: its store, listener and URL. */
export interface RunningPromises {
  readonly url: string;
  readonly store: PromiseStore;
  readonly server: PromiseServer;
  readonly listener: Listener;
}

/** A running `belay-server`: store, optional worker host, HTTP listener, and the durable-promise listener. */
export interface RunningServer {
  readonly url: string;
  readonly store: JobStore;
  readonly server: BelayServer;
  readonly listener: Listener;
  readonly workerHost: WorkerHost | null;
  /** The durable-promise listener (`null` with `--promises-port off`). */
  readonly promises: RunningPromises | null;
  /** Graceful stop: stop listening, let the worker finish (within its deadline), close the store. */
  stop(): Promise<void>;
}

/**
 * Opens the store (and the promise store of the same URL), migrates if asked, loads the jobs
 * module (and builds the embedded worker), starts both listeners and then the worker. Shared by
 * the `belay-server` command and the demo.
 */
export async function startServer(
  args: ServerArgs,
  options: {
    readonly logger?: Logger;
    /** A jobs module already loaded (the demo's), instead of `args.jobs`. */
    readonly jobsModule?: JobsModule;
    /** Worker settings beyond the defaults (poll and maintenance intervals, …). */
    readonly worker?: Partial<Omit<HostConfig, "store" | "jobs" | "migrate">>;
    /** Settings of the promise listener beyond the arguments' (loop intervals, leases, …). */
    readonly promises?: Partial<Omit<PromiseServerOptions, "store" | "tokens" | "debug" | "logger">>;
  } = {},
): Promise<RunningServer> {
  const logger = options.logger ?? consoleLogger({ component: "belay-server" }, "info");
  const store = await openStore(args.store);
  let promiseStore: PromiseStore | null = null;
  let promiseListener: Listener | null = null;
  try {
    if (args.migrate) {
      const { fromVersion, toVersion } = await store.migrate();
      if (fromVersion !== toVersion) logger.info("schema migrated", { fromVersion, toVersion });
    }
    if (args.promises.port !== null) {
      promiseStore = await openPromiseStore(args.store);
      if (args.migrate) {
        const { fromVersion, toVersion } = await promiseStore.migrate();
        if (fromVersion !== toVersion) logger.info("promise schema migrated", { fromVersion, toVersion });
      }
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
      ...(promiseStore === null ? {} : { promises: promiseStore }),
      ...(args.title === null ? {} : { title: args.title }),
      ...(args.sessionSecret == null ? {} : { sessionSecret: args.sessionSecret }),
      logger,
    });
    let promises: RunningPromises | null = null;
    if (promiseStore !== null && args.promises.port !== null) {
      const promiseServer = createPromiseServer({
        ...options.promises,
        store: promiseStore,
        tokens: args.tokens,
        debug: args.debug,
        logger: logger.child({ component: "belay-promises" }),
      });
      try {
        promiseListener = await serve(promiseServer, { host: args.promises.host, port: args.promises.port });
      } catch (error) {
        await promiseServer.close();
        throw error;
      }
      promises = { url: promiseListener.url, store: promiseStore, server: promiseServer, listener: promiseListener };
    }
    let listener: Listener;
    try {
      listener = await serve(server, { host: args.host, port: args.port });
    } catch (error) {
      await server.close();
      throw error;
    }
    await workerHost?.start();
    let stopping: Promise<void> | null = null;
    return {
      url: listener.url,
      store,
      server,
      listener,
      workerHost,
      promises,
      stop() {
        stopping ??= (async () => {
          await listener.close();
          await promises?.listener.close();
          await workerHost?.stop();
          await store.close();
          await promises?.store.close();
        })();
        return stopping;
      },
    };
  } catch (error) {
    await promiseListener?.close().catch(() => {});
    await store.close().catch(() => {});
    await promiseStore?.close().catch(() => {});
    throw error;
  }
}
