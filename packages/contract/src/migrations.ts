import { SchemaNotMigratedError, SchemaVersionError } from "./errors.js";

/**
 * One numbered, append-only schema change of a SQL store. A released migration never changes:
 * later ones are appended, and are additive (new tables, columns with defaults, indexes) unless
 * they raise `requires`, so a store of version N − 1 keeps working on a schema of version N
 * during a rolling deploy.
 */
export interface Migration {
  /** 1, 2, 3, … without gaps. */
  readonly version: number;
  /**
   * The oldest store version that can still run against the schema once this migration is
   * applied. An additive migration keeps the previous migration's value.
   */
  readonly requires: number;
  /** The SQL, given the store's namespace (the quoted schema name, or the table prefix). */
  readonly sql: (namespace: string) => string;
}

/** What a database says about its schema: the newest version applied and what that version requires. */
export interface SchemaState {
  /** 0 when no Belay schema exists there. */
  readonly version: number;
  readonly requires: number;
}

/**
 * The version a list of migrations creates, after checking the list: versions 1, 2, 3, … in
 * order, each `requires` between 1 and its own version and never below the previous one.
 */
export function schemaVersionOf(migrations: readonly Migration[]): number {
  let requires = 1;
  for (const [i, migration] of migrations.entries()) {
    if (migration.version !== i + 1) throw new RangeError(`migration ${i + 1} is numbered ${migration.version}`);
    if (migration.requires < requires || migration.requires > migration.version) {
      throw new RangeError(`migration ${migration.version} requires ${migration.requires}, outside ${requires}..${migration.version}`);
    }
    requires = migration.requires;
  }
  if (migrations.length === 0) throw new RangeError("a store needs at least one migration");
  return migrations.length;
}

/**
 * Throws unless a store that knows schema versions up to `known` may run against `found`:
 * `SchemaNotMigratedError` when there is no schema or an older one (call `migrate()`),
 * `SchemaVersionError` when a newer schema requires a newer store.
 */
export function assertSchemaUsable(found: SchemaState, known: number, where: string): void {
  if (found.requires > known) throw new SchemaVersionError(found.version, known);
  if (found.version < known) throw new SchemaNotMigratedError(where);
}

/**
 * One storage surface of a schema: its migrations, the version they create, and the table in the
 * schema that records which ran. A store's job tables and its promise tables are two surfaces of
 * one schema, each numbered on its own, so either store's `migrate()` creates only its own.
 */
export interface MigrationSurface {
  /** The table of applied versions, in the schema. */
  readonly versionTable: string;
  readonly migrations: readonly Migration[];
  readonly version: number;
  /** How a refusal names what is missing. */
  readonly what: string;
}

/** The job surface (`schema_migrations`) and the promise surface (`promise_migrations`) of a schema-based store. */
export function schemaSurfaces(
  jobs: readonly Migration[],
  promises: readonly Migration[],
): { readonly jobs: MigrationSurface; readonly promises: MigrationSurface } {
  return {
    jobs: { versionTable: "schema_migrations", migrations: jobs, version: schemaVersionOf(jobs), what: "schema" },
    promises: { versionTable: "promise_migrations", migrations: promises, version: schemaVersionOf(promises), what: "promise tables of schema" },
  };
}
