/**
 * `@belay/postgres` — the Belay store on PostgreSQL (the `pg` driver, a peer dependency).
 */
export { PostgresStore } from "./postgres-store.js";
/** The Promise Store Contract on PostgreSQL, beside the job tables in the same schema. */
export { PostgresPromiseStore } from "./postgres-promise-store.js";
export type { PostgresPromiseStoreConfig } from "./postgres-promise-store-config.js";
/** Configuration: see {@link PostgresStoreConfig}. */
export { DEFAULT_SCHEMA, resolvePostgresStoreConfig } from "./postgres-store-config.js";
export type { PostgresStoreConfig, ResolvedPostgresStoreConfig } from "./postgres-store-config.js";
/** The structural driver types the store accepts (satisfied by `pg`). */
export type {
  PostgresPool,
  PostgresPoolClient,
  PostgresClient,
  PostgresQueryConfig,
  PostgresQueryResult,
  PostgresNotification,
  PostgresTypeParsers,
} from "./pool.js";
/** Enqueue inside a transaction held through another driver: see `PostgresStore#enqueueThrough`. */
export type { PostgresQueryExecutor, PostgresRow } from "./caller-transaction.js";
/** The contract's types, re-exported under the names this package has always exported them by. */
export type { EnqueuedThrough } from "@belay/contract";
/** The schema version this build migrates to. */
export { SCHEMA_VERSION, PROMISE_SCHEMA_VERSION } from "./migrations/index.js";
