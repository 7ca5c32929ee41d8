import { type PostgresTarget, postgresTarget, randomSchemaName } from "@belay/conformance";
import pg from "pg";

/**
 * Where the integration tests get a PostgreSQL from, in order:
 *  1. `BELAY_TEST_POSTGRES_URL` (an external server: CI service, local cluster, throwaway initdb);
 *  2. a testcontainers container, when a Docker engine answers;
 *  3. nothing: the suite is skipped with a loud reason — except under `CI=true`, where a
 *     missing PostgreSQL fails the run instead of turning into "all green, nothing ran".
 * The policy itself is `postgresTarget` of `@belay/conformance`, shared with the other packages
 * whose tests need a server.
 */
export type PgTarget = PostgresTarget;

async function containerRuntimeAvailable(): Promise<boolean> {
  try {
    const { getContainerRuntimeClient } = await import("testcontainers");
    await getContainerRuntimeClient();
    return true;
  } catch {
    return false;
  }
}

async function startContainer(): Promise<PgTarget | undefined> {
  if (!(await containerRuntimeAvailable())) return undefined;
  const { GenericContainer, Wait } = await import("testcontainers");
  const container = await new GenericContainer("postgres:16-alpine")
    .withEnvironment({ POSTGRES_PASSWORD: "belay" })
    .withExposedPorts(5432)
    .withWaitStrategy(Wait.forLogMessage(/ready to accept connections/, 2))
    .start();
  return {
    url: `postgres://postgres:belay@${container.getHost()}:${container.getMappedPort(5432)}/postgres`,
    reason: "testcontainers",
    stop: async () => void (await container.stop()),
  };
}

/**
 * The PostgreSQL of this test file. Throws under `CI=true` when there is none; otherwise warns
 * loudly and returns a target without a URL (callers skip with `describe.skipIf`).
 */
export function pgTarget(file: string): Promise<PgTarget> {
  return postgresTarget(file, { start: startContainer });
}

/** A fresh schema name owned by one test file (or one store). */
export function randomSchema(prefix: string): string {
  return randomSchemaName(prefix);
}

/** Drops a test schema and everything in it. */
export async function dropSchema(pool: pg.Pool, schema: string): Promise<void> {
  await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
}

/** A pool on the target whose idle-connection errors (e.g. a terminated backend) are ignored. */
export function testPool(url: string, max = 10): pg.Pool {
  const pool = new pg.Pool({ connectionString: url, max });
  pool.on("error", () => undefined);
  return pool;
}
