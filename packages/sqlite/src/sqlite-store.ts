import { CheckedJobStore } from "@belay/contract";
import { SqliteOperations } from "./sqlite-operations.js";
import type { SqliteStoreConfig } from "./sqlite-store-config.js";

/**
 * The Storage Contract on SQLite through better-sqlite3 12: the embedded store. Any number of
 * processes on one host may share the file, each a full node — claims, concurrency limits and
 * lease expiry stay correct across them, because every write is one `BEGIN IMMEDIATE`
 * transaction under the file's single write lock. Never put the file on a network filesystem.
 *
 * Every optional capability is there: `enqueue` with `tx` (your own better-sqlite3 `Database`
 * on the same file, inside your open transaction), `enqueueThrough` (a transaction you hold
 * through another driver, e.g. Kysely), in-process wake-up hints and the step hook.
 */
export class SqliteStore extends CheckedJobStore<SqliteOperations> {
  /** The database file, as given. */
  readonly path: string;

  /**
   * Opens (and creates, if missing) the database file and switches it to WAL. Call `migrate()`
   * once before anything else (any process may; concurrent calls are safe): an operation on a
   * file without the schema throws `SchemaNotMigratedError`. Throws `InvalidInputError` naming
   * the field of a bad config.
   *
   * @example
   * ```ts
   * import { SqliteStore } from "@belay/sqlite";
   *
   * const store = new SqliteStore({ path: "./belay.db" });
   * await store.migrate();
   * await store.enqueue({
   *   jobs: [{ id: "welcome-42", jobName: "email.welcome", queue: "mail", payload: '{"userId":42}', dueAt: Date.now() }],
   *   now: Date.now(),
   * });
   * ```
   */
  constructor(config: SqliteStoreConfig) {
    const operations = new SqliteOperations(config);
    super(operations);
    this.path = operations.path;
  }
}
