import { migration000001 } from "./000001.js";

/** One numbered, append-only schema change. */
export interface Migration {
  readonly version: number;
  /**
   * The oldest store version that can still run against the schema once this migration is
   * applied. Additive migrations keep the previous value, so version N and N − 1 run side by
   * side during a rolling deploy.
   */
  readonly requires: number;
  /** The SQL, given the quoted schema name. */
  readonly sql: (schema: string) => string;
}

/** Every migration, in order. Never edit or reorder one that was released: append. */
export const MIGRATIONS: readonly Migration[] = Object.freeze([{ version: 1, requires: 1, sql: migration000001 }]);

/** The schema version this build of the store knows. */
export const SCHEMA_VERSION = MIGRATIONS.at(-1)!.version;
