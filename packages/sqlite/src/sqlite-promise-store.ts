import { CheckedPromiseStore } from "@belay/contract";
import { SqlitePromiseBackend } from "./sqlite-promise-backend.js";
import type { SqlitePromiseStoreConfig } from "./sqlite-promise-store-config.js";

/**
 * The Promise Store Contract on SQLite through better-sqlite3 12: durable promises, tasks,
 * callbacks, listeners, schedules and the outbox in the same file (and under the same table
 * prefix) as a `SqliteStore`'s jobs, with their own numbered migrations. The rules are the
 * contract's (`CheckedPromiseStore` runs `PromiseMachine`); this store supplies the transaction:
 * every write runs in a `BEGIN IMMEDIATE` transaction under the file's write lock, committed before
 * it resolves (writes that queue while one runs share its commit, each from its own savepoint),
 * so any number of processes on one host may share the file. A write that waits for the lock
 * longer than `busyTimeoutMs` fails with `TransientStoreError`, nothing committed.
 */
export class SqlitePromiseStore extends CheckedPromiseStore {
  /** The database file, as given. */
  readonly path: string;

  /**
   * Opens (and creates, if missing) the database file and switches it to WAL. Call `migrate()`
   * once before anything else (any process may; concurrent calls are safe; it creates only the
   * promise tables): an operation on a file without them throws `SchemaNotMigratedError`. Throws
   * `InvalidInputError` naming the field of a bad config, before any file is opened.
   *
   * @example
   * ```ts
   * import { SqlitePromiseStore } from "@belay/sqlite";
   *
   * const promises = new SqlitePromiseStore({ path: "./belay.db", settings: { retryTimeoutMs: 30_000 } });
   * await promises.migrate();
   * const now = Date.now();
   * const created = await promises.handle(
   *   { kind: "promise.create", id: "order-42", timeoutAt: now + 60_000, tags: { "resonate:target": "poll://any@workers" } },
   *   now,
   * );
   * console.log(created.status); // 200
   * ```
   */
  constructor(config: SqlitePromiseStoreConfig) {
    const backend = new SqlitePromiseBackend(config);
    super(backend, { bounds: backend.config.bounds, settings: backend.config.settings });
    this.path = backend.path;
  }
}
