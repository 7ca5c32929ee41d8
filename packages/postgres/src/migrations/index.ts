import { type Migration, schemaVersionOf } from "@belay/contract";
import { migration000001 } from "./000001.js";
import { migration000002 } from "./000002.js";

/**
 * Every migration, in order; the namespace each `sql` receives is the quoted schema name.
 * Append-only: a released migration never changes, and later ones are additive (new tables,
 * columns with defaults, indexes) unless they raise `requires`, so version N and N − 1 run side
 * by side during a rolling deploy.
 */
export const MIGRATIONS: readonly Migration[] = Object.freeze([
  { version: 1, requires: 1, sql: migration000001 },
  { version: 2, requires: 1, sql: migration000002 },
]);

/** The schema version this build of the store knows (and `migrate()` creates). */
export const SCHEMA_VERSION = schemaVersionOf(MIGRATIONS);
