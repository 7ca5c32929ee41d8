/**
 * `@belay/sqlserver` — the Belay store on SQL Server (the `mssql` driver, a peer dependency).
 */
export { SqlServerStore } from "./sqlserver-store.js";
/** The Promise Store Contract on SQL Server, beside the job tables in the same schema. */
export { SqlServerPromiseStore } from "./sqlserver-promise-store.js";
export type { SqlServerPromiseStoreConfig } from "./sqlserver-promise-store-config.js";
/** Configuration: see {@link SqlServerStoreConfig}. */
export { DEFAULT_SCHEMA, COLUMN_BYTES, COLUMN_CHARS, resolveSqlServerStoreConfig } from "./sqlserver-store-config.js";
export type { SqlServerStoreConfig, ResolvedSqlServerStoreConfig } from "./sqlserver-store-config.js";
/** The structural driver types the store accepts (satisfied by `mssql`). */
export type { MssqlPool, MssqlRequest, MssqlTransaction, MssqlResult, MssqlRow } from "./driver.js";
/** How driver errors are classified (retriable ones become `TransientStoreError`). */
export { classifyError, TRANSIENT_ERROR_NUMBERS, PERMANENT_ERROR_NUMBERS } from "./mssql-errors.js";
export type { ErrorClass } from "./mssql-errors.js";
/** The schema versions this build migrates to. */
export { SCHEMA_VERSION, PROMISE_SCHEMA_VERSION } from "./migrations/index.js";
