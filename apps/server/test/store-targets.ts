import { createRequire } from "node:module";
import type { JobStore } from "@belay/contract";
import { postgresTarget, randomSchemaName } from "@belay/conformance";
import { PostgresStore } from "@belay/postgres";
import { SqliteStore } from "@belay/sqlite";

/** The part of `pg` these tests use (typed here: the server has no `@types/pg`). */
interface PgPool {
  connect(): Promise<never>;
  query(sql: string): Promise<unknown>;
  end(): Promise<void>;
  on(event: "error", listener: () => void): void;
}
const pg = createRequire(import.meta.url)("pg") as { Pool: new (config: { connectionString: string; max: number }) => PgPool };

// The stores the hostile-input suites run on: SQLite (in memory) and PostgreSQL (a schema of the
// file's own on the server `postgresTarget` finds: the project's, else BELAY_TEST_POSTGRES_URL).

/** One store kind: how to make a fresh, migrated store and how to get rid of it. */
export interface StoreTarget {
  readonly name: "sqlite" | "postgres";
  /** False when this kind cannot run here (no PostgreSQL): the suite skips it. */
  readonly available: boolean;
  /** Why it is (or is not) available, for the suite's title. */
  readonly reason: string;
  create(): Promise<JobStore>;
  destroy(store: JobStore): Promise<void>;
  /** Ends what the target holds open (the PostgreSQL pool). */
  end(): Promise<void>;
}

/** SQLite and PostgreSQL targets for the test file `file`. */
export async function storeTargets(file: string): Promise<readonly StoreTarget[]> {
  const sqlite: StoreTarget = {
    name: "sqlite",
    available: true,
    reason: "in memory",
    async create() {
      const store = new SqliteStore({ path: ":memory:" });
      await store.migrate();
      return store;
    },
    destroy: (store) => store.close(),
    end: async () => {},
  };
  const target = await postgresTarget(file);
  const url = target.url;
  const pool = url === undefined ? null : new pg.Pool({ connectionString: url, max: 8 });
  pool?.on("error", () => undefined);
  const postgres: StoreTarget = {
    name: "postgres",
    available: url !== undefined,
    reason: target.reason,
    async create() {
      if (pool === null) throw new Error("no PostgreSQL");
      const store = new PostgresStore({ pool, schema: randomSchemaName("server"), hints: false });
      await store.migrate();
      return store;
    },
    async destroy(store) {
      await store.close();
      await pool?.query(`DROP SCHEMA IF EXISTS "${(store as PostgresStore).schema}" CASCADE`);
    },
    async end() {
      await pool?.end();
      await target.stop();
    },
  };
  return [sqlite, postgres];
}
