import { createRequire } from "node:module";
import type { JobStore, PromiseStore } from "@belay/contract";
import { postgresTarget, randomSchemaName } from "@belay/conformance";
import { MemoryPromiseStore } from "@belay/memory";
import { PostgresPromiseStore, PostgresStore } from "@belay/postgres";
import { SqlitePromiseStore, SqliteStore } from "@belay/sqlite";
import { afterAll, beforeAll, describe } from "vitest";

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
export interface Target<Name extends string, S> {
  readonly name: Name;
  /** False when this kind cannot run here (no PostgreSQL): the suite skips it. */
  readonly available: boolean;
  /** Why it is (or is not) available, for the suite's title. */
  readonly reason: string;
  create(): Promise<S>;
  destroy(store: S): Promise<void>;
  /** Ends what the target holds open (the PostgreSQL pool). */
  end(): Promise<void>;
}

/** A job store kind. */
export type StoreTarget = Target<"sqlite" | "postgres", JobStore>;

/** One promise store kind, as {@link StoreTarget} is for job stores. */
export type PromiseStoreTarget = Target<"memory" | "sqlite" | "postgres", PromiseStore>;

interface Migratable {
  migrate(): Promise<unknown>;
  close(): Promise<void>;
}

/** A kind whose stores live in this process (SQLite in memory, memory): nothing to end. */
function inProcess<Name extends string, S extends Migratable>(name: Name, reason: string, open: () => S): Target<Name, S> {
  return {
    name,
    available: true,
    reason,
    async create() {
      const store = open();
      await store.migrate();
      return store;
    },
    destroy: (store) => store.close(),
    end: async () => {},
  };
}

/** PostgreSQL for the test file `file`: each store in a schema of its own (`prefix`…), dropped with it. */
async function postgresKind<S extends Migratable>(file: string, prefix: string, open: (pool: PgPool, schema: string) => S): Promise<Target<"postgres", S>> {
  const target = await postgresTarget(file);
  const url = target.url;
  const pool = url === undefined ? null : new pg.Pool({ connectionString: url, max: 8 });
  pool?.on("error", () => undefined);
  const schemas = new Map<S, string>();
  return {
    name: "postgres",
    available: url !== undefined,
    reason: target.reason,
    async create() {
      if (pool === null) throw new Error("no PostgreSQL");
      const schema = randomSchemaName(prefix);
      const store = open(pool, schema);
      await store.migrate();
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
}

/** SQLite and PostgreSQL targets for the test file `file`. */
export async function storeTargets(file: string): Promise<readonly StoreTarget[]> {
  return [
    inProcess("sqlite", "in memory", () => new SqliteStore({ path: ":memory:" })),
    await postgresKind<JobStore>(file, "server", (pool, schema) => new PostgresStore({ pool, schema, hints: false })),
  ];
}

/** Promise stores for the test file `file`: memory (only with `memory: true`), SQLite and PostgreSQL. */
export async function promiseStoreTargets(file: string, options: { readonly memory?: boolean } = {}): Promise<readonly PromiseStoreTarget[]> {
  const memory = inProcess("memory", "in process", () => new MemoryPromiseStore());
  const sqlite = inProcess("sqlite", "in memory", () => new SqlitePromiseStore({ path: ":memory:" }));
  const postgres = await postgresKind<PromiseStore>(file, "promises", (pool, schema) => new PostgresPromiseStore({ pool, schema }));
  return options.memory === true ? [memory, sqlite, postgres] : [sqlite, postgres];
}

/**
 * One describe block per target, `${title} on ${name} (${reason})`, skipped where the target is
 * not available. The target's store is made before the block's tests and destroyed, the target
 * ended, after them: after the block's own `afterAll` hooks, which run in reverse order of
 * declaration (vitest's default), so what the suite opened on the store is closed first.
 */
export function describeOnTargets<S>(targets: readonly Target<string, S>[], title: string, suite: (store: () => S) => void): void {
  for (const target of targets) {
    describe.skipIf(!target.available)(`${title} on ${target.name} (${target.reason})`, () => {
      let store: S | undefined;
      beforeAll(async () => {
        store = await target.create();
      });
      afterAll(async () => {
        if (store !== undefined) await target.destroy(store);
        await target.end();
      });
      suite(() => store!);
    });
  }
}
