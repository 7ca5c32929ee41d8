import { randomBytes } from "node:crypto";
import { findPostgresBin, throwawayPostgresCluster } from "./postgres-cluster.js";

/** What a project's global setup hands its test files (through vitest's `provide`/`inject`). */
export interface ProvidedPostgres {
  /** The project's own database, or `null`: none could be had and its PostgreSQL tests skip. */
  readonly url: string | null;
  /** Where it came from, or why there is none (test titles show it). */
  readonly reason: string;
}

/**
 * The part of vitest's `TestProject` the setup uses (typed here so that this module, and the
 * benchmark harness that imports its siblings, need no vitest types).
 */
export interface PostgresSetupProject {
  readonly name: string;
  provide(key: "belayPostgres", value: ProvidedPostgres): void;
}

/** The few parts of `pg` the setup uses (typed here: the driver is the project's, not ours). */
export interface PostgresSetupDriver {
  Client: new (config: { connectionString: string }) => {
    connect(): Promise<unknown>;
    query(sql: string, values?: unknown[]): Promise<unknown>;
    end(): Promise<unknown>;
  };
}

interface ContainerBuilder {
  withEnvironment(environment: Record<string, string>): ContainerBuilder;
  withExposedPorts(...ports: number[]): ContainerBuilder;
  withWaitStrategy(strategy: never): ContainerBuilder;
  start(): Promise<{ getHost(): string; getMappedPort(port: number): number; stop(): Promise<unknown> }>;
}

/** The few parts of `testcontainers` the setup uses. */
export interface PostgresSetupContainers {
  getContainerRuntimeClient(): Promise<unknown>;
  GenericContainer: new (image: string) => ContainerBuilder;
  Wait: { forLogMessage(message: RegExp, times?: number): unknown };
}

/** Options of {@link postgresGlobalSetup}. */
export interface PostgresGlobalSetupOptions {
  /** The `pg` module: creates and drops the project's database on an external server. */
  readonly pg: PostgresSetupDriver;
  /** Loads `testcontainers`, the last resort when there are no local server binaries. */
  readonly containers?: () => Promise<PostgresSetupContainers>;
}

interface Found {
  readonly url: string;
  readonly reason: string;
  readonly stop: () => Promise<void>;
}

// Settings of a throwaway test cluster: nothing in it must survive a crash, so no flushing.
const THROWAWAY_SETTINGS = "-c fsync=off -c full_page_writes=off -c synchronous_commit=off";

/** `url` with its database replaced by `database`. */
function onDatabase(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${database}`;
  return parsed.toString();
}

async function withClient<T>(pg: PostgresSetupDriver, url: string, action: (client: InstanceType<PostgresSetupDriver["Client"]>) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await action(client);
  } finally {
    await client.end();
  }
}

/** A database of the project's own on the server of `BELAY_TEST_POSTGRES_URL`, dropped at the end. */
async function externalDatabase(project: string, url: string, pg: PostgresSetupDriver): Promise<Found> {
  const name = `belay_test_${project.replace(/\W/g, "_")}_${randomBytes(5).toString("hex")}`;
  try {
    await withClient(pg, url, (c) => c.query(`CREATE DATABASE "${name}"`));
  } catch (error) {
    throw new Error(`[${project}] BELAY_TEST_POSTGRES_URL: cannot create the project's database ${name} (the role needs CREATEDB): ${String(error)}`);
  }
  return {
    url: onDatabase(url, name),
    reason: `BELAY_TEST_POSTGRES_URL, database ${name}`,
    stop: () =>
      withClient(pg, url, async (c) => {
        await c.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()", [name]);
        await c.query(`DROP DATABASE IF EXISTS "${name}"`);
      }),
  };
}

/** A throwaway cluster of the project's own from the local server binaries. */
function localCluster(project: string, bin: string): Found {
  const started = performance.now();
  const throwaway = throwawayPostgresCluster({ prefix: `belay-test-${project.replace(/\W/g, "_")}-`, bin });
  throwaway.start({ noSync: true, serverOptions: THROWAWAY_SETTINGS });
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  console.info(`[${project}] PostgreSQL: a throwaway cluster (${throwaway.cluster.version}) in ${throwaway.scratch}, started in ${seconds} s`);
  return {
    url: throwaway.cluster.connectionString(),
    reason: `throwaway cluster, ${throwaway.cluster.version.replace(/^postgres \(PostgreSQL\) /, "PostgreSQL ")}`,
    stop: async () => throwaway.cleanup(),
  };
}

/** A testcontainers container of the project's own, when a Docker engine answers. */
async function container(load: () => Promise<PostgresSetupContainers>): Promise<Found | undefined> {
  let tc: PostgresSetupContainers;
  try {
    tc = await load();
    await tc.getContainerRuntimeClient();
  } catch {
    return undefined;
  }
  const started = await new tc.GenericContainer("postgres:16-alpine")
    .withEnvironment({ POSTGRES_PASSWORD: "belay" })
    .withExposedPorts(5432)
    .withWaitStrategy(tc.Wait.forLogMessage(/ready to accept connections/, 2) as never)
    .start();
  return {
    url: `postgres://postgres:belay@${started.getHost()}:${started.getMappedPort(5432)}/postgres`,
    reason: "testcontainers",
    stop: async () => void (await started.stop()),
  };
}

/**
 * A vitest `globalSetup` that gives one test project a PostgreSQL of its own, for all its files,
 * and hands its URL to them (`postgresTarget` reads it). In order:
 *  1. `BELAY_TEST_POSTGRES_URL`: a new database on that server (random name, dropped at the end);
 *  2. a throwaway cluster from the local server binaries (`$PGBIN`, `pg_config --bindir`,
 *     `/usr/lib/postgresql/<version>/bin`, `PATH`): unix socket in a temp folder, trust auth,
 *     stopped and removed at the end — also when the run crashes or is killed;
 *  3. a testcontainers container, when `containers` is given and a Docker engine answers;
 *  4. none: the project's PostgreSQL tests skip with a loud warning — except under `CI=true`,
 *     where the run fails instead of turning into "all green, nothing ran".
 *
 * Each project gets its own cluster (or database) because some of what a store does is
 * cluster-wide: an observer walker waits for the cluster's oldest open transaction.
 *
 * @example
 * ```ts
 * // test/postgres-global-setup.ts, named in vitest.config.ts as `globalSetup`
 * import { postgresGlobalSetup } from "@belay/conformance/postgres";
 * import pg from "pg";
 * export default postgresGlobalSetup({ pg, containers: () => import("testcontainers") });
 * ```
 */
export function postgresGlobalSetup(options: PostgresGlobalSetupOptions): (project: PostgresSetupProject) => Promise<(() => Promise<void>) | undefined> {
  return async (project) => {
    const name = project.name || "tests";
    const misses: string[] = [];
    let found: Found | undefined;
    const external = process.env["BELAY_TEST_POSTGRES_URL"];
    if (external) found = await externalDatabase(name, external, options.pg);
    else misses.push("BELAY_TEST_POSTGRES_URL is unset");
    if (found === undefined) {
      const bin = findPostgresBin();
      if (bin === undefined) misses.push("no server binaries (initdb, pg_ctl) in $PGBIN, pg_config --bindir, /usr/lib/postgresql/*/bin or PATH");
      else {
        try {
          found = localCluster(name, bin);
        } catch (error) {
          misses.push(`the throwaway cluster from ${bin} did not start: ${String(error)}`);
        }
      }
    }
    if (found === undefined && options.containers !== undefined) {
      found = await container(options.containers);
      if (found === undefined) misses.push("no Docker engine answered");
    }
    if (found === undefined) {
      const reason = `no PostgreSQL: ${misses.join("; ")}`;
      const message = `[${name}] ${reason}.`;
      if (process.env["CI"] === "true") throw new Error(`${message} Under CI a missing database fails the run.`);
      console.warn(`\n${message}\n[${name}] SKIPPING every PostgreSQL test of this project.\n`);
      project.provide("belayPostgres", { url: null, reason });
      return undefined;
    }
    project.provide("belayPostgres", { url: found.url, reason: found.reason });
    return found.stop;
  };
}
