import { type MigrateResult, type Migration, type SchemaState, SchemaVersionError, assertSchemaUsable } from "@belay/contract";
import type { Connection } from "./connection.js";
import { MIGRATIONS, SCHEMA_VERSION } from "./migrations/index.js";
import { PROMISE_MIGRATIONS, PROMISE_SCHEMA_VERSION } from "./migrations/promises/index.js";
import type { Tables } from "./tables.js";
import type { Steps, TransactionRunner } from "./transaction.js";

/**
 * One independently versioned set of tables in the file: the job surface (`SqliteStore`) or the
 * promise surface (`SqlitePromiseStore`). Each records its versions in its own table, so each
 * class's `migrate()` creates and upgrades only its own surface.
 */
export interface SchemaSurface {
  /** The unquoted name of the version table under `prefix`. */
  readonly versionTable: (prefix: string) => string;
  readonly migrations: readonly Migration[];
  readonly version: number;
}

/** The job surface: `{prefix}migrations`. */
export const JOB_SURFACE: SchemaSurface = Object.freeze({
  versionTable: (prefix: string) => `${prefix}migrations`,
  migrations: MIGRATIONS,
  version: SCHEMA_VERSION,
});

/** The promise surface: `{prefix}promise_migrations`. */
export const PROMISE_SURFACE: SchemaSurface = Object.freeze({
  versionTable: (prefix: string) => `${prefix}promise_migrations`,
  migrations: PROMISE_MIGRATIONS,
  version: PROMISE_SCHEMA_VERSION,
});

/**
 * The schema of `surface` recorded in the file under this prefix; version 0 when its tables are
 * absent. The version table records versions only, so a schema requires exactly its own version:
 * a store refuses every schema newer than it knows.
 */
export function readSchemaState(db: Connection, t: Tables, surface: SchemaSurface = JOB_SURFACE): SchemaState {
  const name = surface.versionTable(t.prefix);
  const table = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(name);
  if (table === undefined) return { version: 0, requires: 0 };
  const { version } = db.prepare(`SELECT coalesce(max(version), 0) AS version FROM "${name}"`).get() as { version: number };
  return { version, requires: version };
}

/**
 * Throws unless the file holds a schema of `surface` this package can run against:
 * `SchemaNotMigratedError` when it is absent or older (call `migrate()`), `SchemaVersionError`
 * when it is newer.
 */
export function assertSchema(db: Connection, t: Tables, where: string, surface: SchemaSurface = JOB_SURFACE): void {
  assertSchemaUsable(readSchemaState(db, t, surface), surface.version, where);
}

function refuseNewer(found: SchemaState, surface: SchemaSurface): void {
  if (found.requires > surface.version) throw new SchemaVersionError(found.version, surface.version);
}

/**
 * Creates or upgrades the schema of `surface`. An up-to-date file costs one read and no lock.
 * Otherwise the file's write lock is taken (`BEGIN IMMEDIATE`, the same lock for every surface)
 * and the version read again inside it, so concurrent callers — other processes included — apply
 * each migration exactly once; SQLite's DDL is transactional, so a failed migration leaves nothing
 * behind.
 */
export async function migrate(db: Connection, runner: TransactionRunner, t: Tables, surface: SchemaSurface = JOB_SURFACE): Promise<MigrateResult> {
  const seen = readSchemaState(db, t, surface);
  refuseNewer(seen, surface);
  if (seen.version === surface.version) return { fromVersion: seen.version, toVersion: seen.version };
  return runner.write("migrate", null, function* (): Steps<MigrateResult> {
    const from = readSchemaState(db, t, surface);
    refuseNewer(from, surface);
    for (const migration of surface.migrations) {
      if (migration.version <= from.version) continue;
      db.exec(migration.sql(t.prefix));
      db.prepare(`INSERT INTO "${surface.versionTable(t.prefix)}" (version) VALUES (?)`).run(migration.version);
    }
    return { fromVersion: from.version, toVersion: surface.version };
  });
}
