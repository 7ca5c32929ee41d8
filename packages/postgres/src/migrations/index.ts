import { type Migration, schemaVersionOf } from "@belay/contract";
import { migration000001 } from "./000001.js";
import { migration000002 } from "./000002.js";
import { migration000003 } from "./000003.js";
import { migration000004 } from "./000004.js";
import { migration000005 } from "./000005.js";
import { migration000006 } from "./000006.js";
import { promiseMigration000001 } from "./promise-000001.js";
import { promiseMigration000002 } from "./promise-000002.js";

/**
 * Every migration, in order; the namespace each `sql` receives is the quoted schema name.
 * Append-only: a released migration never changes, and later ones are additive (new tables,
 * columns with defaults, indexes) unless they raise `requires`, so version N and N − 1 run side
 * by side during a rolling deploy.
 */
export const MIGRATIONS: readonly Migration[] = Object.freeze([
  { version: 1, requires: 1, sql: migration000001 },
  { version: 2, requires: 1, sql: migration000002 },
  { version: 3, requires: 1, sql: migration000003 },
  { version: 4, requires: 1, sql: migration000004 },
  { version: 5, requires: 1, sql: migration000005 },
  { version: 6, requires: 6, sql: migration000006 },
]);

/** The schema version this build of the store knows (and `migrate()` creates). */
export const SCHEMA_VERSION = schemaVersionOf(MIGRATIONS);

/**
 * The promise surface's migrations (`PostgresPromiseStore`), numbered on their own and recorded
 * in `promise_migrations`, beside the job tables in the same schema and under the same
 * migration lock. Same rules as {@link MIGRATIONS}.
 */
export const PROMISE_MIGRATIONS: readonly Migration[] = Object.freeze([
  { version: 1, requires: 1, sql: promiseMigration000001 },
  { version: 2, requires: 1, sql: promiseMigration000002 },
]);

/** The promise surface's version this build knows (and `PostgresPromiseStore#migrate()` creates). */
export const PROMISE_SCHEMA_VERSION = schemaVersionOf(PROMISE_MIGRATIONS);
