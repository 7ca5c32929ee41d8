import { type MigrateResult, type MigrationSurface, type QueryRow, SchemaNotMigratedError, SchemaVersionError, assertSchemaUsable, schemaSurfaces } from "@belay/contract";
import { MIGRATIONS, PROMISE_MIGRATIONS, SCHEMA_VERSION } from "./migrations/index.js";
import { sqlState } from "./pg-errors.js";
import { type Executor, adHoc } from "./session.js";

/** A storage surface of the schema: the job tables (`PostgresStore`) or the promise tables (`PostgresPromiseStore`). */
export type Surface = MigrationSurface;

export const { jobs: JOB_SURFACE, promises: PROMISE_SURFACE } = schemaSurfaces(MIGRATIONS, PROMISE_MIGRATIONS);

/**
 * Creates or upgrades the schema. Concurrent callers (several processes starting at once)
 * serialize on a transaction-scoped advisory lock keyed by the schema name and re-read the
 * version under it, so each migration runs exactly once; the DDL and the version rows commit
 * together, so a crash mid-migration leaves the previous version intact. `upTo` stops at an
 * older version (how the upgrade tests build a database as an older release left it).
 */
export async function migrateSchema(executor: Executor, schema: string, schemaName: string, upTo = SCHEMA_VERSION): Promise<MigrateResult> {
  return migrateSurface(executor, JOB_SURFACE, schema, schemaName, upTo);
}

/**
 * {@link migrateSchema} for any surface. Both surfaces take the same lock (one per schema), so a
 * job migration and a promise migration of one schema never run at once either.
 */
export async function migrateSurface(executor: Executor, surface: Surface, schema: string, schemaName: string, upTo = surface.version): Promise<MigrateResult> {
  const table = `${schema}.${surface.versionTable}`;
  return executor.run("migrate", "transaction", async (session) => {
    await session.query(adHoc("SELECT pg_advisory_xact_lock(hashtextextended('belay.migrate:' || $1, 0))"), [schemaName]);
    await session.query(adHoc(`CREATE SCHEMA IF NOT EXISTS ${schema}`));
    await session.query(
      adHoc(
        `CREATE TABLE IF NOT EXISTS ${table} (
           version integer PRIMARY KEY,
           requires integer NOT NULL,
           applied_at timestamptz NOT NULL DEFAULT now()
         )`,
      ),
    );
    const [row] = await session.query(adHoc(`SELECT coalesce(max(version), 0)::int AS version FROM ${table}`));
    const fromVersion = row!["version"] as number;
    if (fromVersion > surface.version) throw new SchemaVersionError(fromVersion, surface.version);
    for (const migration of surface.migrations) {
      if (migration.version <= fromVersion || migration.version > upTo) continue;
      await session.query(adHoc(migration.sql(schema)));
      await session.query(adHoc(`INSERT INTO ${table} (version, requires) VALUES ($1, $2)`), [migration.version, migration.requires]);
    }
    return { fromVersion, toVersion: Math.max(fromVersion, Math.min(upTo, surface.version)) };
  });
}

/**
 * Checks, before a store's first operation, that the schema exists and that this store can run
 * against it: a newer schema is fine as long as its migrations were additive (`requires` at
 * most this store's version); otherwise `SchemaVersionError`, and `SchemaNotMigratedError` when
 * there is no schema (or an older one).
 */
export async function checkSchema(executor: Executor, schema: string, schemaName: string, surface: Surface = JOB_SURFACE): Promise<void> {
  const where = `${surface.what} ${schemaName}`;
  let row: QueryRow | undefined;
  try {
    [row] = await executor.run("checkSchema", "autocommit", (session) =>
      session.query(
        adHoc(
          `SELECT coalesce(max(version), 0)::int AS version, coalesce(max(requires), 0)::int AS requires FROM ${schema}.${surface.versionTable}`,
        ),
      ),
    );
  } catch (error) {
    const state = sqlState(error);
    if (state === "42P01" || state === "3F000") throw new SchemaNotMigratedError(where);
    throw error;
  }
  assertSchemaUsable({ version: row!["version"] as number, requires: row!["requires"] as number }, surface.version, where);
}
