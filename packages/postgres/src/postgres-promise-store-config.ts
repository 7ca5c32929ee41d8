import { InvalidInputError, type PromiseFrontOptions, type ResolvedSqlPromiseOptions, resolveSqlPromiseOptions } from "@belay/contract";
import type { PostgresPool, PostgresPoolClient } from "./pool.js";
import { resolveConnectionConfig } from "./postgres-store-config.js";

/** Options of {@link PostgresPromiseStore}. Give either `pool` or `connectionString`. */
export interface PostgresPromiseStoreConfig extends PromiseFrontOptions {
  /**
   * Your connection pool: a `pg.Pool`, or anything with the same `connect()`. The store borrows a
   * connection per operation and returns it at once; `close()` leaves your pool open.
   */
  readonly pool?: PostgresPool;
  /** Or a connection URL: the store creates its own `pg.Pool` (and ends it on `close()`). */
  readonly connectionString?: string;
  /** Size of the pool created from `connectionString`. Default 10. */
  readonly maxConnections?: number;
  /**
   * The PostgreSQL schema holding the promise tables: a plain identifier, at most 63 bytes.
   * Default `belay` — the same schema as the job tables of a `PostgresStore`, beside which they
   * live (each surface has its own migrations).
   */
  readonly schema?: string;
  /**
   * How often an operation that met a retriable conflict (a deadlock, a lock timeout, a
   * concurrent creator of the same id) runs, in all, before it throws `TransientStoreError`. Default 4.
   */
  readonly attempts?: number;
  /**
   * Where the LISTEN connection of `subscribeOutbox` comes from. Default: a connection checked
   * out of the pool for as long as someone listens (it counts against the pool's size). Give a
   * factory to use a dedicated connection instead.
   */
  readonly listenClient?: () => Promise<PostgresPoolClient>;
}

/** A promise store config with every default applied and every field checked. */
export type ResolvedPostgresPromiseStoreConfig = ResolvedSqlPromiseOptions;

/** Applies defaults and validates; throws `InvalidInputError` naming the field (the front checks `bounds` and `settings`). */
export function resolvePostgresPromiseStoreConfig(config: PostgresPromiseStoreConfig): ResolvedPostgresPromiseStoreConfig {
  const resolved = resolveSqlPromiseOptions(config, resolveConnectionConfig);
  if (config.listenClient !== undefined && typeof config.listenClient !== "function") {
    throw new InvalidInputError("listenClient", "must be a function returning a connection");
  }
  return resolved;
}
