import { InvalidInputError } from "@belay/contract";

// The subset of the `mssql` driver the store uses, typed structurally (kysely's pattern) so that
// `mssql` stays a peer dependency: an `mssql.ConnectionPool`, its `Request` and its `Transaction`
// satisfy these interfaces. Parameters are bound untyped (`input(name, value)`): every statement
// declares its own typed locals from them (see `statements.ts`), so the driver's type inference
// (string → nvarchar, Buffer → varbinary, integer → int or bigint, boolean → bit) is all it needs.

/** A row as the driver returns it: column name to value. */
export type MssqlRow = Record<string, unknown>;

/** What `request.query()` resolves to. */
export interface MssqlResult {
  readonly recordset?: readonly MssqlRow[];
  /** One array of rows per result set of the batch. */
  readonly recordsets?: readonly (readonly MssqlRow[])[] | Record<string, readonly MssqlRow[]>;
  readonly rowsAffected?: readonly number[];
}

/** One statement batch to send: `input()` binds `@name`, `query()` runs the text. */
export interface MssqlRequest {
  input(name: string, value: unknown): MssqlRequest;
  query(text: string): Promise<MssqlResult>;
}

/**
 * A transaction of the driver: what `enqueue({ tx })` accepts — an `mssql.Transaction` on which
 * `begin()` has resolved (and neither `commit()` nor `rollback()` has been called).
 */
export interface MssqlTransaction {
  begin(isolationLevel?: number): Promise<unknown>;
  commit(): Promise<unknown>;
  rollback(): Promise<unknown>;
  request(): MssqlRequest;
}

/**
 * The subset of `mssql.ConnectionPool` the store uses. The store never closes a pool it was
 * given; it closes only the pool it created itself from `connectionString`.
 */
export interface MssqlPool {
  connect(): Promise<unknown>;
  close(): Promise<unknown>;
  request(): MssqlRequest;
  transaction(): MssqlTransaction;
  readonly connected?: boolean;
  readonly connecting?: boolean;
}

/** `mssql`'s isolation level of READ COMMITTED (tedious' code): snapshot reads when the database has READ_COMMITTED_SNAPSHOT on. */
export const READ_COMMITTED = 0x02;

/** The rows of every result set of `result`, in order. */
export function resultSets(result: MssqlResult): MssqlRow[][] {
  const sets = result.recordsets;
  if (Array.isArray(sets)) return sets.map((rows) => [...rows]);
  if (sets !== undefined && typeof sets === "object") return Object.values(sets).map((rows) => [...(rows as readonly MssqlRow[])]);
  return result.recordset === undefined ? [] : [[...result.recordset]];
}

/** The options `new mssql.ConnectionPool(config)` takes, as far as the store fills them in. */
export interface MssqlPoolConfig {
  server: string;
  port?: number;
  database?: string;
  user?: string;
  password?: string;
  pool?: { max?: number; min?: number; idleTimeoutMillis?: number };
  options: { encrypt?: boolean; trustServerCertificate?: boolean; instanceName?: string; appName?: string };
  requestTimeout?: number;
  connectionTimeout?: number;
}

const TRUE = /^(1|true|yes)$/i;

/**
 * The driver config of a store URL, `mssql://user:password@host:port/database?encrypt=true&trustServerCertificate=true`
 * (also `sqlserver://`), or `null` for any other text (an ADO.NET connection string, which the driver parses itself).
 */
export function configOfUrl(url: string, maxConnections: number): MssqlPoolConfig | null {
  if (!/^(mssql|sqlserver):\/\//i.test(url)) return null;
  let parsed: URL;
  try {
    parsed = new URL(url.replace(/^(mssql|sqlserver):/i, "http:"));
  } catch {
    throw new InvalidInputError("connectionString", "must be a valid mssql:// URL");
  }
  const query = parsed.searchParams;
  const database = decodeURIComponent(parsed.pathname.replace(/^\//, ""));
  const config: MssqlPoolConfig = {
    server: decodeURIComponent(parsed.hostname),
    pool: { max: maxConnections, min: 0 },
    options: {
      encrypt: query.has("encrypt") ? TRUE.test(query.get("encrypt")!) : true,
      trustServerCertificate: query.has("trustServerCertificate") ? TRUE.test(query.get("trustServerCertificate")!) : false,
    },
  };
  if (parsed.port !== "") config.port = Number(parsed.port);
  if (database !== "") config.database = database;
  if (parsed.username !== "") config.user = decodeURIComponent(parsed.username);
  if (parsed.password !== "") config.password = decodeURIComponent(parsed.password);
  const instance = query.get("instanceName");
  if (instance !== null) config.options.instanceName = instance;
  const requestTimeout = query.get("requestTimeout");
  if (requestTimeout !== null) config.requestTimeout = Number(requestTimeout);
  const connectionTimeout = query.get("connectionTimeout");
  if (connectionTimeout !== null) config.connectionTimeout = Number(connectionTimeout);
  return config;
}

/** The driver's package name, imported by name at run time (a peer dependency with no types of its own). */
const DRIVER: string = "mssql";

/**
 * A pool created on first use from a connection string or URL, so that `mssql` is loaded only
 * when the caller asked for it (it is a peer dependency).
 */
export class OwnedPool implements MssqlPool {
  readonly #connectionString: string;
  readonly #max: number;
  #pool: MssqlPool | null = null;
  #ready: Promise<MssqlPool> | null = null;

  constructor(connectionString: string, max: number) {
    this.#connectionString = connectionString;
    this.#max = max;
  }

  /** The connected pool. */
  open(): Promise<MssqlPool> {
    this.#ready ??= (import(DRIVER) as Promise<unknown>)
      .then(async (module) => {
        type Driver = { ConnectionPool: new (config: object | string) => MssqlPool & { on(event: "error", listener: () => void): unknown } };
        const loaded = module as unknown as Driver & { default?: Driver };
        const driver = loaded.default ?? loaded;
        const config = configOfUrl(this.#connectionString, this.#max);
        const pool = new driver.ConnectionPool(config ?? this.#connectionString);
        // A connection that breaks while idle is dropped by the pool; without a listener the error would crash the process.
        pool.on("error", () => undefined);
        await pool.connect();
        this.#pool = pool;
        return pool;
      })
      .catch((error: unknown) => {
        this.#ready = null;
        throw error;
      });
    return this.#ready;
  }

  async connect(): Promise<unknown> {
    return this.open();
  }

  async close(): Promise<void> {
    const ready = this.#ready;
    this.#ready = null;
    if (ready === null) return;
    const pool = await ready.catch(() => null);
    await pool?.close();
  }

  request(): MssqlRequest {
    if (this.#pool === null) throw new Error("OwnedPool: open() first");
    return this.#pool.request();
  }

  transaction(): MssqlTransaction {
    if (this.#pool === null) throw new Error("OwnedPool: open() first");
    return this.#pool.transaction();
  }
}
