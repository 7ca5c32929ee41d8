import { CheckedJobStore } from "@belay/contract";
import { PostgresOperations } from "./postgres-operations.js";
import type { PostgresStoreConfig } from "./postgres-store-config.js";

/**
 * The Belay store on PostgreSQL. Any number of worker processes on any number of hosts share
 * one database: claims take due jobs with `FOR UPDATE SKIP LOCKED`, every worker write is
 * fenced in the statement that makes it, and each operation commits all its rows together.
 * Enqueue, claim, outcome and heartbeat batches are one statement each (prepared, fed by
 * arrays).
 *
 * Every optional capability is there: `enqueue({ tx })` inside your own `pg` transaction
 * (under a savepoint, so a rejected call leaves it intact; its hints ride it as `NOTIFY`),
 * `enqueueThrough` inside a transaction you hold through another driver (Kysely, or anything that
 * runs SQL with `$n` parameters), wake-up hints over LISTEN/NOTIFY (when `hints` is on) and the
 * step hook. A caller's transaction that is not open, or not on this store's server, database and
 * schema, is refused with `InvalidTransactionError` before anything is written.
 */
export class PostgresStore extends CheckedJobStore<PostgresOperations> {
  /**
   * Checks the config (throwing `InvalidInputError` naming the field) and sets the store up; it
   * connects on first use. Call `migrate()` once before anything else (any number of processes
   * may, at once): an operation on a database without the schema throws `SchemaNotMigratedError`.
   *
   * @example
   * ```ts
   * import pg from "pg";
   * import { PostgresStore } from "@belay/postgres";
   *
   * const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL });
   * const store = new PostgresStore({ pool });
   * await store.migrate();
   * await store.enqueue({
   *   jobs: [{ id: "j1", jobName: "email.send", queue: "default", payload: "{}", dueAt: Date.now() }],
   *   now: Date.now(),
   * });
   * ```
   */
  constructor(config: PostgresStoreConfig) {
    super(new PostgresOperations(config));
    if (!this.capabilities.wakeUpHints) {
      // Without hints there is no `subscribeHints` at all (the contract allows absent or
      // refusing): a caller that tests for the method finds out without calling it.
      Object.defineProperty(this, "subscribeHints", { value: undefined });
    }
  }

  /** The schema this store works in. */
  get schema(): string {
    return this.operations.schemaName;
  }

  /** Whether the LISTEN connection of the wake-up hints is open right now (for health checks and tests). */
  get listening(): boolean {
    return this.operations.listening;
  }
}
