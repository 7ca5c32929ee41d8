import { type PostgresTarget, randomSchemaName } from "@belay/conformance";
import { PostgresStore } from "@belay/postgres";
import { Kysely, PostgresDialect } from "kysely";
import pg from "pg";
import { afterAll } from "vitest";
import { kyselyEnqueuer } from "../../src/index.js";
import type { BusinessDb, KyselyWorld } from "./kysely-fixture.js";

/**
 * How long a test file's PostgreSQL cleanup may take: dropping its schemas and its second
 * database waits for the server (a checkpoint, on a loaded machine), well past vitest's 10 s.
 */
export const CLEANUP_MS = 60_000;

function quietPool(url: string, max: number): pg.Pool {
  const pool = new pg.Pool({ connectionString: url, max });
  pool.on("error", () => undefined);
  return pool;
}

/** `url` with its database replaced by `database`. */
function onDatabase(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${database}`;
  return parsed.toString();
}

/** Creates a schema holding Belay's tables (migrated by a store on `pool`) and the business table. */
async function belaySchema(pool: pg.Pool, schema: string): Promise<PostgresStore> {
  const store = new PostgresStore({ pool, schema });
  await store.migrate();
  await pool.query(`CREATE TABLE "${schema}".business_rows (key text PRIMARY KEY)`);
  return store;
}

/**
 * A {@link PostgresTestFile} on `target` for the current describe block: closed, and the target
 * stopped, after the block's tests.
 */
export function postgresTestFile(target: PostgresTarget): PostgresTestFile {
  const file = new PostgresTestFile(target.url ?? "postgres://unused");
  afterAll(async () => {
    await file.close();
    await target.stop();
  }, CLEANUP_MS);
  return file;
}

/**
 * The PostgreSQL side of one test file: the store's pool, the application's pool and Kysely
 * instance, and — made on first use — another database, for the clauses that must be refused.
 * Each test's world owns a fresh schema, dropped with it.
 */
export class PostgresTestFile {
  readonly #url: string;
  readonly #storePool: pg.Pool;
  readonly #appPool: pg.Pool;
  readonly #db: Kysely<BusinessDb>;
  #other: Promise<{ name: string; pool: pg.Pool; db: Kysely<BusinessDb> }> | null = null;

  constructor(url: string) {
    this.#url = url;
    this.#storePool = quietPool(url, 20);
    this.#appPool = quietPool(url, 10);
    this.#db = new Kysely<BusinessDb>({ dialect: new PostgresDialect({ pool: this.#appPool }) });
  }

  /** The application's pool (for tests that use `pg` directly). */
  get appPool(): pg.Pool {
    return this.#appPool;
  }

  /** A store with its own schema (and business table), and a Kysely enqueuer on it. */
  async world(): Promise<KyselyWorld & { readonly store: PostgresStore; readonly schema: string }> {
    const schema = randomSchemaName("kysely");
    const store = await belaySchema(this.#storePool, schema);
    const db = this.#db.withSchema(schema);
    let elsewhere: PostgresStore | null = null;
    return {
      store,
      schema,
      belay: kyselyEnqueuer(store),
      db,
      committedRows: async () => (await db.selectFrom("business_rows").select("key").orderBy("key").execute()).map((r) => r.key),
      elsewhere: async () => {
        // Another database holding a Belay schema of the same name: only the check of where the
        // transaction is can tell it apart.
        const other = await this.#otherDatabase();
        elsewhere ??= await belaySchema(other.pool, schema);
        return other.db.withSchema(schema);
      },
      close: async () => {
        await store.close();
        await this.#storePool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
        if (elsewhere !== null) {
          await elsewhere.close();
          await (await this.#otherDatabase()).pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
        }
      },
    };
  }

  async close(): Promise<void> {
    await this.#db.destroy();
    if (this.#other !== null) {
      const other = await this.#other;
      await other.db.destroy();
      await this.#storePool.query(`DROP DATABASE IF EXISTS "${other.name}" WITH (FORCE)`);
    }
    await this.#storePool.end();
  }

  #otherDatabase(): Promise<{ name: string; pool: pg.Pool; db: Kysely<BusinessDb> }> {
    this.#other ??= (async () => {
      const name = randomSchemaName("kysely_elsewhere");
      await this.#storePool.query(`CREATE DATABASE "${name}"`);
      const pool = quietPool(onDatabase(this.#url, name), 5);
      return { name, pool, db: new Kysely<BusinessDb>({ dialect: new PostgresDialect({ pool }) }) };
    })();
    return this.#other;
  }
}
