import { type Bounds, type HistoryPolicy, InvalidInputError } from "@belay/contract";

/** Options of {@link SqliteStore}. */
export interface SqliteStoreConfig {
  /**
   * The database file (created if missing). Co-resident deployment: your application's own file,
   * which gives enqueue inside your transactions. Dedicated: a file of its own. Never on a network
   * filesystem: SQLite's file locking is unsafe there.
   */
  readonly path: string;
  /** Prefix of every table and index Belay creates: letters, digits and `_`, 1–64 characters. Default `belay_`. */
  readonly tablePrefix?: string;
  /**
   * How long a write waits for the file's write lock (held by another process or connection)
   * before it fails with `TransientStoreError`, in milliseconds. Default 5,000.
   */
  readonly busyTimeoutMs?: number;
  /**
   * `normal` (default): in WAL mode a power loss or OS crash may lose the last transactions
   * acknowledged before it, but never corrupts the file; a process crash loses nothing.
   * `full`: every commit is on disk before it is acknowledged (an fsync per commit), slower.
   */
  readonly synchronous?: "normal" | "full";
  /** Overrides of the default bounds. */
  readonly bounds?: Partial<Bounds>;
  /** Default `transitionsAndFailureDetail`. */
  readonly historyPolicy?: HistoryPolicy;
}

/** A config with every default applied and every field checked. */
export interface ResolvedSqliteStoreConfig {
  readonly path: string;
  readonly tablePrefix: string;
  readonly busyTimeoutMs: number;
  readonly synchronous: "normal" | "full";
  readonly historyPolicy: HistoryPolicy;
}

/** The default table prefix. */
export const DEFAULT_TABLE_PREFIX = "belay_";
/** The default wait for the write lock. */
export const DEFAULT_BUSY_TIMEOUT_MS = 5_000;

const PREFIX = /^[A-Za-z0-9_]{1,64}$/;

/** The options of the file and its connection, shared by `SqliteStore` and `SqlitePromiseStore`. */
export type SqliteFileConfig = Pick<SqliteStoreConfig, "path" | "tablePrefix" | "busyTimeoutMs" | "synchronous">;

/** {@link SqliteFileConfig} with every default applied. */
export type ResolvedSqliteFileConfig = Pick<ResolvedSqliteStoreConfig, "path" | "tablePrefix" | "busyTimeoutMs" | "synchronous">;

/** Applies the file options' defaults and validates them; throws `InvalidInputError` naming the field. */
export function resolveSqliteFileConfig(config: SqliteFileConfig): ResolvedSqliteFileConfig {
  if (typeof config !== "object" || config === null) throw new InvalidInputError("config", "must be an object");
  if (typeof config.path !== "string" || config.path.length === 0) {
    throw new InvalidInputError("path", "must be a non-empty file path");
  }
  const tablePrefix = config.tablePrefix ?? DEFAULT_TABLE_PREFIX;
  if (typeof tablePrefix !== "string" || !PREFIX.test(tablePrefix)) {
    throw new InvalidInputError("tablePrefix", "must be 1 to 64 letters, digits or underscores");
  }
  const busyTimeoutMs = config.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS;
  if (!Number.isSafeInteger(busyTimeoutMs) || busyTimeoutMs < 0) {
    throw new InvalidInputError("busyTimeoutMs", "must be an integer of milliseconds ≥ 0");
  }
  const synchronous = config.synchronous ?? "normal";
  if (synchronous !== "normal" && synchronous !== "full") {
    throw new InvalidInputError("synchronous", "must be normal or full");
  }
  return { path: config.path, tablePrefix, busyTimeoutMs, synchronous };
}

/** Applies defaults and validates; throws `InvalidInputError` naming the field. */
export function resolveSqliteStoreConfig(config: SqliteStoreConfig): ResolvedSqliteStoreConfig {
  const file = resolveSqliteFileConfig(config);
  const historyPolicy = config.historyPolicy ?? "transitionsAndFailureDetail";
  if (!["off", "transitions", "transitionsAndFailureDetail"].includes(historyPolicy)) {
    throw new InvalidInputError("historyPolicy", "must be off, transitions or transitionsAndFailureDetail");
  }
  return { ...file, historyPolicy };
}
