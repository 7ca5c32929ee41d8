import { CheckedJobStore } from "@belay/contract";
import { SqlServerOperations } from "./sqlserver-operations.js";
import type { SqlServerStoreConfig } from "./sqlserver-store-config.js";

/**
 * The Belay store on SQL Server (2017 or later, or Azure SQL). Any number of worker processes on
 * any number of hosts share one database: claims take due jobs with `UPDLOCK, READPAST, ROWLOCK`
 * and return them with `OUTPUT`, every worker write is fenced on the row it locks, and each
 * operation commits all its rows together in one transaction. Migrations and the claims of a
 * queue with a concurrency limit serialize on `sp_getapplock`.
 *
 * Capabilities: `enqueue({ tx })` inside your own `mssql` transaction and `enqueueThrough` inside
 * a transaction you hold through another driver (Kysely's mssql dialect, or anything that runs SQL
 * with `@1`, `@2`, … parameters) — both under a savepoint, so a refused call leaves your
 * transaction intact — and the step hook. No wake-up hints: SQL Server has no LISTEN/NOTIFY, and
 * the poll interval is the latency. A caller's transaction that is not open, or not on this
 * store's database and schema, is refused with `InvalidTransactionError` before anything is written.
 */
export class SqlServerStore extends CheckedJobStore<SqlServerOperations> {
  /**
   * Checks the config (throwing `InvalidInputError` naming the field) and sets the store up; it
   * connects on first use. Call `migrate()` once before anything else (any number of processes
   * may, at once): an operation on a database without the schema throws `SchemaNotMigratedError`.
   *
   * @example
   * ```ts
   * import sql from "mssql";
   * import { SqlServerStore } from "@belay/sqlserver";
   *
   * const pool = await new sql.ConnectionPool(process.env.MSSQL_URL!).connect();
   * const store = new SqlServerStore({ pool });
   * await store.migrate();
   * await store.enqueue({
   *   jobs: [{ id: "j1", jobName: "email.send", queue: "default", payload: "{}", dueAt: Date.now() }],
   *   now: Date.now(),
   * });
   * ```
   */
  constructor(config: SqlServerStoreConfig) {
    super(new SqlServerOperations(config));
    // Without hints there is no `subscribeHints` at all: a caller that tests for the method finds out without calling it.
    Object.defineProperty(this, "subscribeHints", { value: undefined });
  }

  /** The schema this store works in. */
  get schema(): string {
    return this.operations.schemaName;
  }

  /** Migrates only up to `version` (for upgrade tests; `migrate()` is what applications call). */
  migrateTo(version: number) {
    return this.operations.migrateTo(version);
  }
}
