import { type Bounds, type ConnectionOptions, type HistoryPolicy, InvalidInputError, checkConnectionOptions, resolveHistoryPolicy } from "@belay/contract";
import type { PostgresPool, PostgresPoolClient } from "./pool.js";

/** Options of {@link PostgresStore}. Give either `pool` or `connectionString`. */
export interface PostgresStoreConfig {
  /**
   * Your connection pool: a `pg.Pool`, or anything with the same `connect()`. The store borrows
   * a connection per operation and returns it at once; `close()` leaves your pool open.
   */
  readonly pool?: PostgresPool;
  /** Or a connection URL: the store creates its own `pg.Pool` (and ends it on `close()`). */
  readonly connectionString?: string;
  /** Size of the pool created from `connectionString`. Default 10. */
  readonly maxConnections?: number;
  /**
   * Most enqueue statements in flight at once (default 2). Concurrent `enqueue` calls beyond it
   * wait for the next statement and share it: one commit for many producers (group commit).
   * Only calls whose jobs are all valid and without parents are shared; a call never waits when
   * a slot is free. A large value turns sharing off.
   */
  readonly enqueueConcurrency?: number;
  /**
   * The PostgreSQL schema holding Belay's tables: a plain identifier (letters, digits, `_`, `$`,
   * not starting with a digit), at most 63 bytes. Default `belay`.
   */
  readonly schema?: string;
  /** Overrides of the default bounds. */
  readonly bounds?: Partial<Bounds>;
  /** Default `transitionsAndFailureDetail`. */
  readonly historyPolicy?: HistoryPolicy;
  /**
   * Wake-up hints over LISTEN/NOTIFY (default true): enqueues announce due work after they
   * commit, and `subscribeHints` keeps one LISTEN connection per store. Hints only cut latency;
   * workers still poll.
   */
  readonly hints?: boolean;
  /**
   * Where the LISTEN connection comes from. Default: a connection checked out of the pool for
   * as long as someone listens (it counts against the pool's size). Give a factory to use a
   * dedicated connection instead, e.g. `() => new pg.Client(url).connect()`-style wrappers.
   */
  readonly listenClient?: () => Promise<PostgresPoolClient>;
}

/** A config with every default applied and every field checked. */
export interface ResolvedPostgresStoreConfig {
  readonly schemaName: string;
  /** The schema as a quoted identifier, ready to splice into SQL. */
  readonly schema: string;
  readonly historyPolicy: HistoryPolicy;
  readonly hints: boolean;
}

/** The default schema. */
export const DEFAULT_SCHEMA = "belay";

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_$]*$/;

/** Where a store connects and which schema it works in: the options every PostgreSQL store shares. */
export type PostgresConnectionConfig = ConnectionOptions<PostgresPool>;

/**
 * Checks the connection options (exactly one of `pool` and `connectionString`, the pool size, the
 * schema name); throws `InvalidInputError` naming the field. Returns the schema's plain and quoted names.
 */
export function resolveConnectionConfig(config: PostgresConnectionConfig): { readonly schemaName: string; readonly schema: string } {
  checkConnectionOptions(config, (pool) => (typeof pool?.connect === "function" ? null : "must have connect() (a pg.Pool)"), "a postgres:// URL");
  const schemaName = config.schema ?? DEFAULT_SCHEMA;
  if (typeof schemaName !== "string" || !IDENTIFIER.test(schemaName)) {
    throw new InvalidInputError("schema", "must be a plain identifier: letters, digits, _ or $, not starting with a digit");
  }
  if (Buffer.byteLength(schemaName, "utf8") > 63) {
    throw new InvalidInputError("schema", `must be at most 63 bytes, got ${Buffer.byteLength(schemaName, "utf8")}`);
  }
  return { schemaName, schema: `"${schemaName}"` };
}

/** Applies defaults and validates; throws `InvalidInputError` naming the field. */
export function resolvePostgresStoreConfig(config: PostgresStoreConfig): ResolvedPostgresStoreConfig {
  const { schemaName, schema } = resolveConnectionConfig(config);
  if (config.enqueueConcurrency !== undefined && (!Number.isSafeInteger(config.enqueueConcurrency) || config.enqueueConcurrency < 1)) {
    throw new InvalidInputError("enqueueConcurrency", "must be an integer ≥ 1");
  }
  const historyPolicy = resolveHistoryPolicy(config.historyPolicy);
  if (config.hints !== undefined && typeof config.hints !== "boolean") throw new InvalidInputError("hints", "must be a boolean");
  if (config.listenClient !== undefined && typeof config.listenClient !== "function") {
    throw new InvalidInputError("listenClient", "must be a function returning a connection");
  }
  return { schemaName, schema, historyPolicy, hints: config.hints ?? true };
}

/**
 * A pool created on first use from a connection string, so that `pg` is loaded only when the
 * caller asked for it (it is a peer dependency).
 */
export class OwnedPool implements PostgresPool {
  readonly #connectionString: string;
  readonly #max: number;
  readonly #options: Readonly<Record<string, unknown>>;
  #pool: Promise<PostgresPool> | null = null;

  /** @param options further `pg.Pool` options (the promise store's pipelining connections). */
  constructor(connectionString: string, max: number, options: Readonly<Record<string, unknown>> = {}) {
    this.#connectionString = connectionString;
    this.#max = max;
    this.#options = options;
  }

  #get(): Promise<PostgresPool> {
    this.#pool ??= import("pg").then((module) => {
      type Driver = { Pool: new (options: object) => PostgresPool & { on(event: "error", listener: () => void): unknown } };
      const loaded = module as unknown as Driver & { default?: Driver };
      const pool = new (loaded.default ?? loaded).Pool({ ...this.#options, connectionString: this.#connectionString, max: this.#max });
      // An idle connection that breaks is dropped by the pool; without a listener the error would crash the process.
      pool.on("error", () => undefined);
      return pool;
    });
    return this.#pool;
  }

  async connect() {
    return (await this.#get()).connect();
  }

  async end(): Promise<void> {
    if (this.#pool !== null) await (await this.#pool).end();
  }
}
