import { type MigrateResult, SchemaNotMigratedError, SchemaVersionError } from "@belay/contract";
import type { Connection } from "./connection.js";
import { MIGRATIONS, SCHEMA_VERSION, migrationSql } from "./migrations/index.js";
import type { Tables } from "./tables.js";
import type { Steps, TransactionRunner } from "./transaction.js";

/** The schema version recorded in the file under this prefix; 0 when Belay's tables are absent. */
export function readSchemaVersion(db: Connection, t: Tables): number {
  const table = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(`${t.prefix}migrations`);
  if (table === undefined) return 0;
  return (db.prepare(`SELECT coalesce(max(version), 0) AS version FROM ${t.migrations}`).get() as { version: number }).version;
}

/**
 * Throws unless the file holds exactly the schema this package knows: `SchemaNotMigratedError`
 * when it is absent or older (call `migrate()`), `SchemaVersionError` when it is newer.
 */
export function assertSchema(db: Connection, t: Tables, where: string): void {
  const version = readSchemaVersion(db, t);
  if (version > SCHEMA_VERSION) throw new SchemaVersionError(version, SCHEMA_VERSION);
  if (version < SCHEMA_VERSION) throw new SchemaNotMigratedError(where);
}

/**
 * Creates or upgrades the schema. An up-to-date file costs one read and no lock. Otherwise the
 * write lock is taken (`BEGIN IMMEDIATE`) and the version read again inside it, so concurrent
 * callers — other processes included — apply each migration exactly once; SQLite's DDL is
 * transactional, so a failed migration leaves nothing behind.
 */
export async function migrate(db: Connection, runner: TransactionRunner, t: Tables): Promise<MigrateResult> {
  const seen = readSchemaVersion(db, t);
  if (seen > SCHEMA_VERSION) throw new SchemaVersionError(seen, SCHEMA_VERSION);
  if (seen === SCHEMA_VERSION) return { fromVersion: seen, toVersion: seen };
  return runner.write("migrate", null, function* (): Steps<MigrateResult> {
    const from = readSchemaVersion(db, t);
    if (from > SCHEMA_VERSION) throw new SchemaVersionError(from, SCHEMA_VERSION);
    for (const migration of MIGRATIONS) {
      if (migration.version <= from) continue;
      db.exec(migrationSql(migration, t.prefix));
      db.prepare(`INSERT INTO ${t.migrations} (version) VALUES (?)`).run(migration.version);
    }
    return { fromVersion: from, toVersion: SCHEMA_VERSION };
  });
}
