import { type Migration, schemaVersionOf } from "@belay/contract";
import { migration000001 } from "./000001.js";
import { migration000002 } from "./000002.js";
import { promiseMigration000001 } from "./promises/000001.js";

/**
 * Every migration of the job tables, in order; the namespace each `sql` receives is the
 * bracket-quoted schema name. Append-only: a released migration never changes, and later ones
 * are additive unless they raise `requires`, so version N and N − 1 run side by side during a
 * rolling deploy.
 */
export const MIGRATIONS: readonly Migration[] = Object.freeze([
  { version: 1, requires: 1, sql: migration000001 },
  { version: 2, requires: 1, sql: migration000002 },
]);

/** The schema version this build of the store knows (and `migrate()` creates). */
export const SCHEMA_VERSION = schemaVersionOf(MIGRATIONS);

/** The promise surface's migrations, numbered on their own (`promise_migrations`), under the same lock. */
export const PROMISE_MIGRATIONS: readonly Migration[] = Object.freeze([{ version: 1, requires: 1, sql: promiseMigration000001 }]);

/** The promise surface's version this build knows. */
export const PROMISE_SCHEMA_VERSION = schemaVersionOf(PROMISE_MIGRATIONS);
