import { type MigrateResult, type QueryRow, SchemaNotMigratedError, SchemaVersionError, assertSchemaUsable } from "@belay/contract";
import { MIGRATIONS, SCHEMA_VERSION } from "./migrations/index.js";
import { sqlState } from "./pg-errors.js";
import { type Executor, adHoc } from "./session.js";

/**
 * Creates or upgrades the schema. Concurrent callers (several processes starting at once)
 * serialize on a transaction-scoped advisory lock keyed by the schema name and re-read the
 * version under it, so each migration runs exactly once; the DDL and the version rows commit
 * together, so a crash mid-migration leaves the previous version intact. `upTo` stops at an
 * older version (how the upgrade tests build a database as an older release left it).
 */
export async function migrateSchema(executor: Executor, schema: string, schemaName: string, upTo = SCHEMA_VERSION): Promise<MigrateResult> {
  return executor.run("migrate", "transaction", async (session) => {
    await session.query(adHoc("SELECT pg_advisory_xact_lock(hashtextextended('belay.migrate:' || $1, 0))"), [schemaName]);
    await session.query(adHoc(`CREATE SCHEMA IF NOT EXISTS ${schema}`));
    await session.query(
      adHoc(
        `CREATE TABLE IF NOT EXISTS ${schema}.schema_migrations (
           version integer PRIMARY KEY,
           requires integer NOT NULL,
           applied_at timestamptz NOT NULL DEFAULT now()
         )`,
      ),
    );
    const [row] = await session.query(adHoc(`SELECT coalesce(max(version), 0)::int AS version FROM ${schema}.schema_migrations`));
    const fromVersion = row!["version"] as number;
    if (fromVersion > SCHEMA_VERSION) throw new SchemaVersionError(fromVersion, SCHEMA_VERSION);
    for (const migration of MIGRATIONS) {
      if (migration.version <= fromVersion || migration.version > upTo) continue;
      await session.query(adHoc(migration.sql(schema)));
      await session.query(adHoc(`INSERT INTO ${schema}.schema_migrations (version, requires) VALUES ($1, $2)`), [
        migration.version,
        migration.requires,
      ]);
    }
    return { fromVersion, toVersion: Math.max(fromVersion, Math.min(upTo, SCHEMA_VERSION)) };
  });
}

/**
 * Checks, before a store's first operation, that the schema exists and that this store can run
 * against it: a newer schema is fine as long as its migrations were additive (`requires` at
 * most this store's version); otherwise `SchemaVersionError`, and `SchemaNotMigratedError` when
 * there is no schema (or an older one).
 */
export async function checkSchema(executor: Executor, schema: string, schemaName: string): Promise<void> {
  const where = `schema ${schemaName}`;
  let row: QueryRow | undefined;
  try {
    [row] = await executor.run("checkSchema", "autocommit", (session) =>
      session.query(
        adHoc(`SELECT coalesce(max(version), 0)::int AS version, coalesce(max(requires), 0)::int AS requires FROM ${schema}.schema_migrations`),
      ),
    );
  } catch (error) {
    const state = sqlState(error);
    if (state === "42P01" || state === "3F000") throw new SchemaNotMigratedError(where);
    throw error;
  }
  assertSchemaUsable({ version: row!["version"] as number, requires: row!["requires"] as number }, SCHEMA_VERSION, where);
}
