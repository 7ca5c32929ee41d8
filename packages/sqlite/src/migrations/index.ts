import { type Migration, schemaVersionOf } from "@belay/contract";
import { MIGRATION_000001 } from "./000001.js";
import { MIGRATION_000002 } from "./000002.js";
import { MIGRATION_000003 } from "./000003.js";

/** A migration's SQL template (`{prefix}` standing for the table prefix) for one prefix. */
const withPrefix = (template: string) => (prefix: string) => template.replaceAll("{prefix}", prefix);

/**
 * Every migration, in order; the namespace each `sql` receives is the table prefix. Append-only:
 * a released migration never changes, and later ones are additive (new tables, columns with
 * defaults, indexes) unless they raise `requires`.
 */
export const MIGRATIONS: readonly Migration[] = Object.freeze([
  { version: 1, requires: 1, sql: withPrefix(MIGRATION_000001) },
  { version: 2, requires: 1, sql: withPrefix(MIGRATION_000002) },
  { version: 3, requires: 1, sql: withPrefix(MIGRATION_000003) },
]);

/** The schema version this package creates and knows. */
export const SCHEMA_VERSION = schemaVersionOf(MIGRATIONS);
