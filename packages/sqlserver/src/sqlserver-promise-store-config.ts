import { InvalidInputError, type PromiseFrontOptions, type ResolvedSqlPromiseOptions, resolveSqlPromiseOptions } from "@belay/contract";
import type { MssqlPool } from "./driver.js";
import { resolveConnectionConfig, resolveRequireReadCommittedSnapshot } from "./sqlserver-store-config.js";

/** Options of {@link SqlServerPromiseStore}. Give either `pool` or `connectionString`. */
export interface SqlServerPromiseStoreConfig extends PromiseFrontOptions {
  /** Your `mssql.ConnectionPool`; `close()` leaves it open. */
  readonly pool?: MssqlPool;
  /** Or a connection string or `mssql://` URL: the store creates its own pool (and closes it on `close()`). */
  readonly connectionString?: string;
  /** Size of the pool created from `connectionString`. Default 10. */
  readonly maxConnections?: number;
  /** The schema holding the promise tables (beside a `SqlServerStore`'s job tables). Default `belay`. */
  readonly schema?: string;
  /** How often an operation that met a retriable conflict (deadlock, concurrent creator) runs in all before `TransientStoreError`. Default 4. */
  readonly attempts?: number;
  /** As for `SqlServerStore`: whether `migrate()` refuses a database without READ_COMMITTED_SNAPSHOT. Default `true`. */
  readonly requireReadCommittedSnapshot?: boolean;
}

export interface ResolvedSqlServerPromiseStoreConfig extends ResolvedSqlPromiseOptions {
  readonly requireReadCommittedSnapshot: boolean;
}

/** Applies defaults and validates; throws `InvalidInputError` naming the field (the front checks `bounds` and `settings`). */
export function resolveSqlServerPromiseStoreConfig(config: SqlServerPromiseStoreConfig): ResolvedSqlServerPromiseStoreConfig {
  const resolved = resolveSqlPromiseOptions(config, resolveConnectionConfig);
  if (config.bounds?.idLength !== undefined && config.bounds.idLength > 1024) {
    throw new InvalidInputError("bounds.idLength", `must be at most 1024 on SQL Server (promise ids are varbinary(1024)), got ${config.bounds.idLength}`);
  }
  if (config.bounds?.addressLength !== undefined && config.bounds.addressLength > 2666) {
    throw new InvalidInputError("bounds.addressLength", `must be at most 2666 on SQL Server (addresses are matched as varbinary(8000)), got ${config.bounds.addressLength}`);
  }
  return { ...resolved, requireReadCommittedSnapshot: resolveRequireReadCommittedSnapshot(config.requireReadCommittedSnapshot) };
}
