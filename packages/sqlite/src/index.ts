/**
 * `@belay/sqlite` — the Belay store on SQLite (better-sqlite3 12): the embedded default. Any
 * number of processes on one host may share the file; never across hosts.
 */
export { SqliteStore } from "./sqlite-store.js";
export { SqlitePromiseStore } from "./sqlite-promise-store.js";
export { resolveSqliteStoreConfig, DEFAULT_TABLE_PREFIX, DEFAULT_BUSY_TIMEOUT_MS } from "./sqlite-store-config.js";
export type { SqliteStoreConfig, ResolvedSqliteStoreConfig } from "./sqlite-store-config.js";
export { resolveSqlitePromiseStoreConfig } from "./sqlite-promise-store-config.js";
export type { SqlitePromiseStoreConfig, ResolvedSqlitePromiseStoreConfig } from "./sqlite-promise-store-config.js";
/** Enqueue inside a transaction held through another driver: see `SqliteStore#enqueueThrough`. */
export type { SqliteQueryExecutor, SqliteRow } from "./caller-transaction.js";
/** The contract's types, re-exported under the names this package has always exported them by. */
export type { EnqueuedThrough, Migration } from "@belay/contract";
export { SCHEMA_VERSION, MIGRATIONS } from "./migrations/index.js";
/** The promise surface's own migrations, recorded apart from the job schema's (`{prefix}promise_migrations`). */
export { PROMISE_SCHEMA_VERSION, PROMISE_MIGRATIONS } from "./migrations/promises/index.js";
