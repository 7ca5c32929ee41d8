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
  /**
   * How many promises the store remembers the rows of (those it last read or wrote, the least
   * recently used forgotten first; rows with more than 16 KiB of JSON are not kept). An
   * operation whose rows are all remembered sends no load: its write checks, in the same
   * statement, that those rows are unchanged, and when another process changed one the operation
   * runs again with a load — a guess that costs a statement when wrong, never a wrong answer. So
   * an acquire or a fulfill after this store's own create is one round trip instead of two.
   * `0` turns it off. Default 4,096.
   */
  readonly rowCache?: number;
  /**
   * Group commit: how many transactions at most carry other callers' operations together. An
   * operation whose whole work is one statement (a create, or an acquire or fulfill whose rows
   * the store remembers) that finds this many in flight waits, and the next one carries every
   * such operation waiting (up to 64), in one round trip and one commit; one that finds a free
   * slot and nobody waiting goes out at once, alone. Operations in flight together never touch a
   * row in common, and each is answered only once its transaction has committed. Needs a
   * pipelining pool (the store's own is one). `0` turns it off (every operation commits on its
   * own). Default 2.
   */
  readonly groupCommit?: number;
}

/** A promise store config with every default applied and every field checked. */
export interface ResolvedPostgresPromiseStoreConfig extends ResolvedSqlPromiseOptions {
  readonly rowCache: number;
  readonly groupCommit: number;
}

/** Applies defaults and validates; throws `InvalidInputError` naming the field (the front checks `bounds` and `settings`). */
export function resolvePostgresPromiseStoreConfig(config: PostgresPromiseStoreConfig): ResolvedPostgresPromiseStoreConfig {
  const resolved = resolveSqlPromiseOptions(config, resolveConnectionConfig);
  if (config.listenClient !== undefined && typeof config.listenClient !== "function") {
    throw new InvalidInputError("listenClient", "must be a function returning a connection");
  }
  const rowCache = config.rowCache ?? 4096;
  if (!Number.isSafeInteger(rowCache) || rowCache < 0 || rowCache > 1_000_000) throw new InvalidInputError("rowCache", "must be an integer from 0 to 1,000,000");
  const groupCommit = config.groupCommit ?? 2;
  if (!Number.isSafeInteger(groupCommit) || groupCommit < 0 || groupCommit > 64) throw new InvalidInputError("groupCommit", "must be an integer from 0 to 64");
  return { ...resolved, rowCache, groupCommit };
}
