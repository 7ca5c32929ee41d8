import { createRequire } from "node:module";
import type { JobStore, PromiseStore } from "@belay/contract";
import { postgresTarget, randomSchemaName } from "@belay/conformance";
import { MemoryPromiseStore } from "@belay/memory";
import { PostgresPromiseStore, PostgresStore } from "@belay/postgres";
import { SqlitePromiseStore, SqliteStore } from "@belay/sqlite";

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

/** One promise store kind, as {@link StoreTarget} is for job stores. */
export interface PromiseStoreTarget {
  readonly name: "memory" | "sqlite" | "postgres";
  readonly available: boolean;
  readonly reason: string;
  /** A fresh, migrated promise store (SQLite in memory; PostgreSQL in a schema of its own). */
  create(): Promise<PromiseStore>;
  destroy(store: PromiseStore): Promise<void>;
  end(): Promise<void>;
}

/** Promise stores for the test file `file`: memory (only with `memory: true`), SQLite and PostgreSQL. */
export async function promiseStoreTargets(file: string, options: { readonly memory?: boolean } = {}): Promise<readonly PromiseStoreTarget[]> {
  const migrated = async <T extends PromiseStore>(store: T) => {
    await store.migrate();
    return store;
  };
  const memory: PromiseStoreTarget = {
    name: "memory",
    available: true,
    reason: "in process",
    create: () => migrated(new MemoryPromiseStore()),
    destroy: (store) => store.close(),
    end: async () => {},
  };
  const sqlite: PromiseStoreTarget = {
    name: "sqlite",
    available: true,
    reason: "in memory",
    create: () => migrated(new SqlitePromiseStore({ path: ":memory:" })),
    destroy: (store) => store.close(),
    end: async () => {},
  };
  const target = await postgresTarget(file);
  const url = target.url;
  const pool = url === undefined ? null : new pg.Pool({ connectionString: url, max: 8 });
  pool?.on("error", () => undefined);
  const schemas = new Map<PromiseStore, string>();
  const postgres: PromiseStoreTarget = {
    name: "postgres",
    available: url !== undefined,
    reason: target.reason,
    async create() {
      if (pool === null) throw new Error("no PostgreSQL");
      const schema = randomSchemaName("promises");
      const store = await migrated(new PostgresPromiseStore({ pool, schema }));
      schemas.set(store, schema);
      return store;
    },
    async destroy(store) {
      await store.close();
      await pool?.query(`DROP SCHEMA IF EXISTS "${schemas.get(store)}" CASCADE`);
      schemas.delete(store);
    },
    async end() {
      await pool?.end();
      await target.stop();
    },
  };
  return options.memory === true ? [memory, sqlite, postgres] : [sqlite, postgres];
}
