import {
  type Bounds, type ConnectionOptions, type HistoryPolicy, InvalidInputError, checkConnectionOptions, resolveBounds, resolveHistoryPolicy,
} from "@belay/contract";
import type { MssqlPool } from "./driver.js";

/** Options of {@link SqlServerStore}. Give either `pool` or `connectionString`. */
export interface SqlServerStoreConfig {
  /**
   * Your connection pool: an `mssql.ConnectionPool` (connected, or the store connects it). The
   * store runs each operation on it and never closes it: `close()` leaves your pool open.
   */
  readonly pool?: MssqlPool;
  /**
   * Or a connection string: `mssql://user:password@host:1433/database?encrypt=true&trustServerCertificate=false`
   * (also `sqlserver://`), or an ADO.NET string (`Server=…;Database=…;User Id=…;Password=…`). The
   * store creates its own pool from it (and closes it on `close()`).
   */
  readonly connectionString?: string;
  /** Size of the pool created from `connectionString`. Default 10. */
  readonly maxConnections?: number;
  /**
   * The SQL Server schema holding Belay's tables: a plain identifier (letters, digits, `_`, not
   * starting with a digit), at most 128 characters. Default `belay`.
   */
  readonly schema?: string;
  /** Overrides of the default bounds (each within what the schema's columns hold: see the README). */
  readonly bounds?: Partial<Bounds>;
  /** Default `transitionsAndFailureDetail`. */
  readonly historyPolicy?: HistoryPolicy;
  /**
   * Whether `migrate()` refuses a database without `READ_COMMITTED_SNAPSHOT` (default `true`).
   * Without it, monitoring reads wait behind writers instead of reading the last committed version.
   */
  readonly requireReadCommittedSnapshot?: boolean;
}

/** The default schema. */
export const DEFAULT_SCHEMA = "belay";

/**
 * What the key columns of the schema hold, in UTF-8 bytes (`varbinary(n)`): a bound counted in
 * characters (UTF-16 code units) fits when three bytes per character do — the most UTF-8 needs
 * for one code unit. `nvarchar(n)` columns hold `n` UTF-16 code units, the unit of the bounds.
 */
export const COLUMN_BYTES = Object.freeze({
  /** Job, schedule, workflow, worker and observer ids; audit targets. */
  id: 768,
  queue: 768,
  jobName: 768,
  tagKey: 384,
  tagValue: 768,
});

/** `nvarchar(n)` columns, in UTF-16 code units. */
export const COLUMN_CHARS = Object.freeze({
  traceContext: 1024,
  /** A workflow's name (bounded by `jobNameLength`). */
  workflowName: 256,
});

/** Each bound counted in characters and the key column (bytes, 3 per character) or text column (characters) holding it. */
export const BOUND_COLUMNS: ReadonlyArray<{ readonly bound: keyof Bounds; readonly column: string; readonly capacity: number; readonly unit: "bytes" | "chars" }> = Object.freeze([
  { bound: "idLength", column: "jobs.id", capacity: COLUMN_BYTES.id, unit: "bytes" },
  { bound: "queueNameLength", column: "jobs.queue", capacity: COLUMN_BYTES.queue, unit: "bytes" },
  { bound: "jobNameLength", column: "jobs.job_name", capacity: COLUMN_BYTES.jobName, unit: "bytes" },
  { bound: "tagKeyLength", column: "job_tags.tag_key", capacity: COLUMN_BYTES.tagKey, unit: "bytes" },
  { bound: "tagValueLength", column: "job_tags.tag_value", capacity: COLUMN_BYTES.tagValue, unit: "bytes" },
  { bound: "traceContextLength", column: "jobs.trace_context", capacity: COLUMN_CHARS.traceContext, unit: "chars" },
  { bound: "jobNameLength", column: "workflows.name", capacity: COLUMN_CHARS.workflowName, unit: "chars" },
]);

/** The most characters a bound may allow so that its column holds any text within it. */
export function boundCapacity(entry: (typeof BOUND_COLUMNS)[number]): number {
  return entry.unit === "bytes" ? Math.floor(entry.capacity / 3) : entry.capacity;
}

/** A config with every default applied and every field checked. */
export interface ResolvedSqlServerStoreConfig {
  readonly schemaName: string;
  /** The schema as a bracket-quoted identifier, ready to splice into SQL. */
  readonly schema: string;
  readonly bounds: Readonly<Bounds>;
  readonly historyPolicy: HistoryPolicy;
  readonly requireReadCommittedSnapshot: boolean;
}

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Where a store connects and which schema it works in: the options every SQL Server store shares. */
export type SqlServerConnectionConfig = ConnectionOptions<MssqlPool>;

/**
 * Checks the connection options (exactly one of `pool` and `connectionString`, the pool size, the
 * schema name); throws `InvalidInputError` naming the field. Returns the schema's plain and quoted names.
 */
export function resolveConnectionConfig(config: SqlServerConnectionConfig): { readonly schemaName: string; readonly schema: string } {
  checkConnectionOptions(
    config,
    (pool) => (typeof pool?.request === "function" && typeof pool?.transaction === "function" ? null : "must have request() and transaction() (an mssql ConnectionPool)"),
    "an mssql:// URL or an ADO.NET connection string",
  );
  const schemaName = config.schema ?? DEFAULT_SCHEMA;
  if (typeof schemaName !== "string" || !IDENTIFIER.test(schemaName) || schemaName.length > 128) {
    throw new InvalidInputError("schema", "must be a plain identifier of at most 128 characters: letters, digits or _, not starting with a digit");
  }
  return { schemaName, schema: `[${schemaName}]` };
}

/** Applies defaults and validates; throws `InvalidInputError` naming the field. */
export function resolveSqlServerStoreConfig(config: SqlServerStoreConfig): ResolvedSqlServerStoreConfig {
  const { schemaName, schema } = resolveConnectionConfig(config);
  const bounds = resolveBounds(config.bounds);
  for (const entry of BOUND_COLUMNS) {
    const most = boundCapacity(entry);
    if (bounds[entry.bound] > most) {
      throw new InvalidInputError(`bounds.${entry.bound}`, `must be at most ${most} on SQL Server (column ${entry.column} holds ${entry.capacity} ${entry.unit}), got ${bounds[entry.bound]}`);
    }
  }
  const historyPolicy = resolveHistoryPolicy(config.historyPolicy);
  return { schemaName, schema, bounds, historyPolicy, requireReadCommittedSnapshot: resolveRequireReadCommittedSnapshot(config.requireReadCommittedSnapshot) };
}

/** The `requireReadCommittedSnapshot` option of either store, checked (`true` by default). */
export function resolveRequireReadCommittedSnapshot(value: boolean | undefined): boolean {
  if (value !== undefined && typeof value !== "boolean") throw new InvalidInputError("requireReadCommittedSnapshot", "must be a boolean");
  return value ?? true;
}
