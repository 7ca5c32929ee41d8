import { type MigrateResult, type SchemaState, SchemaVersionError, assertSchemaUsable } from "@belay/contract";
import type { Connection } from "./connection.js";
import { MIGRATIONS, SCHEMA_VERSION } from "./migrations/index.js";
import type { Tables } from "./tables.js";
import type { Steps, TransactionRunner } from "./transaction.js";

/**
 * The schema recorded in the file under this prefix; version 0 when Belay's tables are absent.
 * The migrations table records versions only, so a schema requires exactly its own version: a
 * store refuses every schema newer than it knows.
 */
export function readSchemaState(db: Connection, t: Tables): SchemaState {
  const table = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(`${t.prefix}migrations`);
  if (table === undefined) return { version: 0, requires: 0 };
  const { version } = db.prepare(`SELECT coalesce(max(version), 0) AS version FROM ${t.migrations}`).get() as { version: number };
  return { version, requires: version };
}

/**
 * Throws unless the file holds a schema this package can run against: `SchemaNotMigratedError`
 * when it is absent or older (call `migrate()`), `SchemaVersionError` when it is newer.
 */
export function assertSchema(db: Connection, t: Tables, where: string): void {
  assertSchemaUsable(readSchemaState(db, t), SCHEMA_VERSION, where);
}

function refuseNewer(found: SchemaState): void {
  if (found.requires > SCHEMA_VERSION) throw new SchemaVersionError(found.version, SCHEMA_VERSION);
}

/**
 * Creates or upgrades the schema. An up-to-date file costs one read and no lock. Otherwise the
 * write lock is taken (`BEGIN IMMEDIATE`) and the version read again inside it, so concurrent
 * callers — other processes included — apply each migration exactly once; SQLite's DDL is
 * transactional, so a failed migration leaves nothing behind.
 */
export async function migrate(db: Connection, runner: TransactionRunner, t: Tables): Promise<MigrateResult> {
  const seen = readSchemaState(db, t);
  refuseNewer(seen);
  if (seen.version === SCHEMA_VERSION) return { fromVersion: seen.version, toVersion: seen.version };
  return runner.write("migrate", null, function* (): Steps<MigrateResult> {
    const from = readSchemaState(db, t);
    refuseNewer(from);
    for (const migration of MIGRATIONS) {
      if (migration.version <= from.version) continue;
      db.exec(migration.sql(t.prefix));
      db.prepare(`INSERT INTO ${t.migrations} (version) VALUES (?)`).run(migration.version);
    }
    return { fromVersion: from.version, toVersion: SCHEMA_VERSION };
  });
}
