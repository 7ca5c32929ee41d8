import { type PostgresTarget, postgresTarget, randomSchemaName } from "@belay/conformance";
import pg from "pg";

/**
 * Where the integration tests get a PostgreSQL from: this project's own server, set up once for
 * all its files by `postgresGlobalSetup` (test/postgres-global-setup.ts) — a database of its own
 * on `BELAY_TEST_POSTGRES_URL`, else a throwaway cluster from the local server binaries, else a
 * testcontainers container, else none (skipped loudly; under `CI=true` the run fails).
 */
export type PgTarget = PostgresTarget;

/** The PostgreSQL of this test file: a target without a URL when there is none (callers skip with `describe.skipIf`). */
export function pgTarget(file: string): Promise<PgTarget> {
  return postgresTarget(file);
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
