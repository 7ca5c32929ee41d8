// The subset of the `pg` driver that the store needs, typed structurally (kysely's PostgresPool
// pattern) so that `pg` stays a peer dependency: a `pg.Pool` and a `pg.PoolClient` satisfy these
// interfaces, and so does any driver shaped like them.

/** A value parser for one column type, as `pg`'s per-query `types` option expects. */
export interface PostgresTypeParsers {
  getTypeParser(oid: number, format?: string): (value: string) => unknown;
}

/** One query, in the form `pg`'s `client.query(config)` accepts. */
export interface PostgresQueryConfig {
  readonly text: string;
  readonly values?: unknown[];
  /** A prepared-statement name: the driver parses the text once per connection. */
  readonly name?: string;
  readonly types?: PostgresTypeParsers;
}

/** What a query returns: its rows (parsed by the store's own type parsers). */
export interface PostgresQueryResult {
  readonly rows: Record<string, unknown>[];
  readonly rowCount: number | null;
}

/**
 * A connection that can run queries: what `enqueue({ tx })` accepts. With `pg`, a `PoolClient`
 * (or a `Client`) on which the caller has run `BEGIN`.
 */
export interface PostgresClient {
  query(config: PostgresQueryConfig): Promise<PostgresQueryResult>;
}

/** A notification delivered to a `LISTEN`ing connection. */
export interface PostgresNotification {
  readonly channel: string;
  readonly payload?: string | undefined;
  /** The backend process id of the session that sent it. */
  readonly processId?: number;
}

/** A connection checked out of a pool. `release(error)` destroys it instead of returning it. */
export interface PostgresPoolClient extends PostgresClient {
  release(destroy?: boolean | Error): void;
  on(event: "notification", listener: (message: PostgresNotification) => void): unknown;
  on(event: "error", listener: (error: Error) => void): unknown;
  on(event: "end", listener: () => void): unknown;
  removeListener?(event: "error", listener: (error: Error) => void): unknown;
  removeAllListeners?(event?: string): unknown;
}

/**
 * The subset of `pg.Pool` the store uses. The store never ends a pool it was given; it ends
 * only the pool it created itself from `connectionString`.
 */
export interface PostgresPool {
  connect(): Promise<PostgresPoolClient>;
  end(): Promise<void>;
}
