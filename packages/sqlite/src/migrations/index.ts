import { MIGRATION_000001 } from "./000001.js";

/** One numbered migration: SQL text with `{prefix}` standing for the table prefix. */
export interface Migration {
  readonly version: number;
  readonly sql: string;
}

/**
 * Every migration, in order. Append-only: a released migration never changes, and later ones are
 * additive (new tables, columns with defaults, indexes), so a store of version N − 1 keeps working
 * on a schema of version N during a rolling deploy.
 */
export const MIGRATIONS: readonly Migration[] = Object.freeze([{ version: 1, sql: MIGRATION_000001 }]);

/** The schema version this package creates and knows. */
export const SCHEMA_VERSION = MIGRATIONS[MIGRATIONS.length - 1]!.version;

/** A migration's SQL for one table prefix. */
export function migrationSql(migration: Migration, prefix: string): string {
  return migration.sql.replaceAll("{prefix}", prefix);
}
