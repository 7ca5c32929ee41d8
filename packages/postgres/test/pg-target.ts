import { type PostgresTarget, postgresTarget, randomSchemaName } from "@belay/conformance";
import pg from "pg";
import { afterAll } from "vitest";
import { PostgresStore } from "../src/index.js";

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
export function testPool(url: string, max = 10, options: { readonly pipeline?: boolean } = {}): pg.Pool {
  const pool = new pg.Pool({ connectionString: url, max, ...options });
  pool.on("error", () => undefined);
  return pool;
}

/**
 * What a describe block of a test file holds on `target`: a pool on it (see {@link testPool}; made
 * now, it connects on first use) and the schemas made by `schema(prefix)` (or with a migrated job
 * store on it, by `migratedStore(prefix)`). After the block's tests
 * every such schema is dropped, the pool ended and the target stopped. Call it inside the block
 * (after-hooks run last-registered first: the block's own after-hooks run before these).
 */
export function testDatabase(
  target: PgTarget,
  max?: number,
  options: { readonly pipeline?: boolean } = {},
): { readonly pool: pg.Pool; schema(prefix: string): string; migratedStore(prefix: string): Promise<{ store: PostgresStore; schema: string }> } {
  const pool = testPool(target.url ?? "postgres://unused", max, options);
  const schemas: string[] = [];
  afterAll(async () => {
    for (const schema of schemas) await dropSchema(pool, schema);
    await pool.end();
    await target.stop();
  });
  const schema = (prefix: string) => {
    const name = randomSchema(prefix);
    schemas.push(name);
    return name;
  };
  // A job store (hints off) on a new schema, migrated.
  const migratedStore = async (prefix: string) => {
    const name = schema(prefix);
    const store = new PostgresStore({ pool, schema: name, hints: false });
    await store.migrate();
    return { store, schema: name };
  };
  return { pool, schema, migratedStore };
}

/**
 * The two pools of a conformance file's describe block on `target`: the stores' (`stores`, 20
 * connections, `options` as given) and one for what runs beside the stores (`side`, 10: caller
 * transactions, a peer process). After the block's tests both are ended and the target stopped.
 */
export function conformancePools(target: PgTarget, options: { readonly pipeline?: boolean } = {}): { readonly stores: pg.Pool; readonly side: pg.Pool } {
  const stores = testPool(target.url ?? "postgres://unused", 20, options);
  const side = testPool(target.url ?? "postgres://unused", 10);
  afterAll(async () => {
    await stores.end();
    await side.end();
    await target.stop();
  });
  return { stores, side };
}

/**
 * Waits until every transaction of another database that is running now has ended. The observer
 * walker only passes rows older than the cluster's oldest running transaction, whichever database
 * it belongs to; on a server shared with others (`BELAY_TEST_POSTGRES_URL`) this keeps their
 * activity out of this project's observer clauses. This project's own transactions are not
 * waited for (a clause may hold one open on purpose). On the project's own cluster there are none.
 */
export async function otherDatabasesSettled(pool: pg.Pool, timeoutMs = 30_000): Promise<void> {
  const running = `SELECT pid, backend_xid::text AS xid FROM pg_stat_activity
                    WHERE datname IS DISTINCT FROM current_database() AND backend_xid IS NOT NULL`;
  const key = (row: { pid: number; xid: string }) => `${row.pid}/${row.xid}`;
  const before = new Set((await pool.query(running)).rows.map(key));
  const deadline = Date.now() + timeoutMs;
  while (before.size > 0) {
    const still = (await pool.query(running)).rows.map(key).filter((k) => before.has(k));
    if (still.length === 0) return;
    if (Date.now() > deadline) throw new Error(`transactions of other databases still running after ${timeoutMs} ms: ${still.join(", ")}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** `store`, whose observer operations first wait for {@link otherDatabasesSettled}. */
export function observersIsolated<S extends object>(store: S, pool: pg.Pool): S {
  return new Proxy(store, {
    get(target, property) {
      const value = Reflect.get(target, property, target) as unknown;
      if (typeof value !== "function") return value;
      const bound = (value as (...args: unknown[]) => unknown).bind(target);
      if (typeof property !== "string" || !/Observer/.test(property)) return bound;
      return async (...args: unknown[]) => {
        await otherDatabasesSettled(pool);
        return bound(...args);
      };
    },
  });
}
