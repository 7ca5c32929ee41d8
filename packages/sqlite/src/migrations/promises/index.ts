import { type Migration, schemaVersionOf } from "@belay/contract";
import { PROMISE_MIGRATION_000001 } from "./000001.js";

/** A migration's SQL template (`{prefix}` standing for the table prefix) for one prefix. */
const withPrefix = (template: string) => (prefix: string) => template.replaceAll("{prefix}", prefix);

/**
 * Every migration of the promise surface, in order, numbered on their own (recorded in
 * `{prefix}promise_migrations`, apart from the job schema's versions). Append-only, as the job
 * surface's: a released migration never changes, later ones are additive unless they raise
 * `requires`.
 */
export const PROMISE_MIGRATIONS: readonly Migration[] = Object.freeze([{ version: 1, requires: 1, sql: withPrefix(PROMISE_MIGRATION_000001) }]);

/** The promise schema version this package creates and knows. */
export const PROMISE_SCHEMA_VERSION = schemaVersionOf(PROMISE_MIGRATIONS);
