import { type MigrateResult, type Migration, type MigrationSurface, SchemaNotMigratedError, SchemaVersionError, assertSchemaUsable, schemaSurfaces } from "@belay/contract";
import { MIGRATIONS, PROMISE_MIGRATIONS } from "./migrations/index.js";
import { errorNumbers } from "./mssql-errors.js";
import type { Executor } from "./session.js";
import { statement } from "./statements.js";
import { toInt } from "./keys.js";

/** A storage surface of the schema: the job tables (`SqlServerStore`) or the promise tables (`SqlServerPromiseStore`). */
export type Surface = MigrationSurface;

export const { jobs: JOB_SURFACE, promises: PROMISE_SURFACE } = schemaSurfaces(MIGRATIONS, PROMISE_MIGRATIONS);

/**
 * The migration lock: a transaction-owned application lock per schema (both surfaces take the
 * same one), waited for up to a minute; a wait that runs out fails the statement, so no migration
 * runs without it.
 */
const LOCK_MIGRATIONS = statement("migrateLock", { resource: "nvarchar(255)", schema: "sysname" }, () => `
EXEC sp_getapplock @resource, N'Exclusive', N'Transaction', 60000;
IF APPLOCK_MODE(N'public', @resource, N'Transaction') <> N'Exclusive' THROW 51000, N'belay: the migration lock was not granted within 60 s', 1;
IF SCHEMA_ID(@schema) IS NULL EXEC(N'CREATE SCHEMA ' + QUOTENAME(@schema));`);

const VERSION_TABLE = (table: string) =>
  statement(`migrateVersionTable:${table}`, { table: "nvarchar(300)" }, (S) => `
IF OBJECT_ID(@table, N'U') IS NULL
  CREATE TABLE ${S}.${table} (version int NOT NULL, requires int NOT NULL, CONSTRAINT ${table}_pk PRIMARY KEY CLUSTERED (version));`);

const READ_VERSION = (table: string) =>
  statement(`schemaVersion:${table}`, {}, (S) => `SELECT ISNULL(MAX(version), 0) AS version, ISNULL(MAX(requires), 0) AS requires FROM ${S}.${table}`);

const RECORD_VERSION = (table: string) =>
  statement(`recordVersion:${table}`, { version: "int", requires: "int" }, (S) => `INSERT INTO ${S}.${table} (version, requires) VALUES (@version, @requires)`);

/** Whether the database reads the last committed version instead of waiting behind writers. */
const READ_COMMITTED_SNAPSHOT = statement(
  "readCommittedSnapshot",
  {},
  () => `SELECT CAST(is_read_committed_snapshot_on AS int) AS rcsi, DB_NAME() AS db FROM sys.databases WHERE database_id = DB_ID()`,
);

const SURFACE_STATEMENTS = new Map(
  [JOB_SURFACE, PROMISE_SURFACE].map((s) => [s.versionTable, { table: VERSION_TABLE(s.versionTable), read: READ_VERSION(s.versionTable), record: RECORD_VERSION(s.versionTable) }]),
);

/**
 * Creates or upgrades a surface. Concurrent callers (several processes starting at once)
 * serialize on the schema's migration lock and re-read the version under it, so each migration
 * runs exactly once; the DDL and the version rows commit together (SQL Server's DDL is
 * transactional), so a crash mid-migration leaves the previous version intact. `upTo` stops at an
 * older version.
 */
export async function migrateSurface(
  executor: Executor,
  surface: Surface,
  schemaName: string,
  options: { readonly upTo?: number; readonly requireReadCommittedSnapshot?: boolean } = {},
): Promise<MigrateResult> {
  const upTo = options.upTo ?? surface.version;
  const statements = SURFACE_STATEMENTS.get(surface.versionTable)!;
  if (options.requireReadCommittedSnapshot ?? true) {
    const [row] = await executor.read("migrate", (session) => session.rows(READ_COMMITTED_SNAPSHOT));
    if (row !== undefined && toInt(row["rcsi"]) !== 1) {
      throw new Error(
        `database ${String(row["db"])} has READ_COMMITTED_SNAPSHOT off: Belay's reads would wait behind its writers. ` +
          `Run ALTER DATABASE CURRENT SET READ_COMMITTED_SNAPSHOT ON (it needs a moment without other connections), ` +
          `or pass requireReadCommittedSnapshot: false to accept blocking reads.`,
      );
    }
  }
  return executor.transaction("migrate", async (session) => {
    await session.query(LOCK_MIGRATIONS, { resource: `belay.migrate:${schemaName}`, schema: schemaName });
    await session.query(statements.table, { table: `[${schemaName}].[${surface.versionTable}]` });
    const [row] = await session.rows(statements.read);
    const fromVersion = toInt(row!["version"]);
    if (fromVersion > surface.version) throw new SchemaVersionError(fromVersion, surface.version);
    for (const migration of surface.migrations) {
      if (migration.version <= fromVersion || migration.version > upTo) continue;
      await session.query(migrationStatement(surface, migration));
      await session.query(statements.record, { version: migration.version, requires: migration.requires });
    }
    return { fromVersion, toVersion: Math.max(fromVersion, Math.min(upTo, surface.version)) };
  });
}

const migrationStatements = new Map<string, ReturnType<typeof statement>>();

/** A migration as a statement of the registry (no parameters), so the grammar checks see its text. */
export function migrationStatement(surface: Surface, migration: Migration) {
  const name = `migration:${surface.versionTable}:${migration.version}`;
  let st = migrationStatements.get(name);
  if (st === undefined) {
    st = statement(name, {}, (S) => migration.sql(S));
    migrationStatements.set(name, st);
  }
  return st;
}

// Declared at load, so the registry holds every migration's text.
for (const surface of [JOB_SURFACE, PROMISE_SURFACE]) for (const migration of surface.migrations) migrationStatement(surface, migration);

/**
 * Checks, before a store's first operation, that the surface exists and that this store can run
 * against it: a newer schema is fine as long as its migrations were additive; otherwise
 * `SchemaVersionError`, and `SchemaNotMigratedError` when there is none (or an older one).
 */
export async function checkSchema(executor: Executor, schemaName: string, surface: Surface = JOB_SURFACE): Promise<void> {
  const where = `${surface.what} ${schemaName}`;
  let row: Record<string, unknown> | undefined;
  try {
    [row] = await executor.read("checkSchema", (session) => session.rows(SURFACE_STATEMENTS.get(surface.versionTable)!.read));
  } catch (error) {
    // 208: invalid object name (no such table, or no such schema).
    if (errorNumbers((error as { cause?: unknown }).cause ?? error).includes(208) || errorNumbers(error).includes(208)) throw new SchemaNotMigratedError(where);
    throw error;
  }
  assertSchemaUsable({ version: toInt(row!["version"]), requires: toInt(row!["requires"]) }, surface.version, where);
}
