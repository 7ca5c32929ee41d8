import { type MigrateResult, Mutex, StoreClosedError } from "@belay/contract";
import type { Connection } from "./connection.js";
import { type SchemaSurface, assertSchema, migrate } from "./migrate.js";
import type { Tables } from "./tables.js";
import { TransactionRunner } from "./transaction.js";

/**
 * One store instance's connection with its lock and lifecycle, the same for the job surface
 * (`SqliteOperations`) and the promise surface (`SqlitePromiseBackend`). better-sqlite3 is
 * synchronous, but the step hook may park a write inside its transaction: the lock keeps every
 * other operation of the instance off the connection until it ends. An operation runs once the
 * instance is open, the connection still is (a close queued behind earlier work closes it) and
 * the surface's schema has been checked — once per instance, and not after its own `migrate()`.
 */
export class LockedConnection {
  readonly db: Connection;
  readonly tables: Tables;
  readonly runner: TransactionRunner;
  readonly #surface: SchemaSurface;
  /** Where the schema is, for its errors: the file and the tables' prefix. */
  readonly #where: string;
  readonly #mutex = new Mutex();
  #schemaChecked = false;
  #closed = false;

  constructor(db: Connection, tables: Tables, busyTimeoutMs: number, surface: SchemaSurface, where: string) {
    this.db = db;
    this.tables = tables;
    this.runner = new TransactionRunner(db, busyTimeoutMs);
    this.#surface = surface;
    this.#where = where;
  }

  /** Throws `StoreClosedError` once the instance is closed. */
  assertOpen(): void {
    if (this.#closed) throw new StoreClosedError();
  }

  /** Checks the surface's schema, the first time only. */
  assertSchema(): void {
    if (this.#schemaChecked) return;
    assertSchema(this.db, this.tables, this.#where, this.#surface);
    this.#schemaChecked = true;
  }

  /** Runs `work` under the lock, on the open connection, with the schema checked. */
  async run<T>(work: () => T | Promise<T>): Promise<T> {
    this.assertOpen();
    return this.#mutex.run(() => {
      this.#assertConnected();
      this.assertSchema();
      return work();
    });
  }

  /** Creates or upgrades the surface's tables under the lock; its schema needs no check afterwards. */
  async migrate(): Promise<MigrateResult> {
    this.assertOpen();
    return this.#mutex.run(async () => {
      this.#assertConnected();
      const result = await migrate(this.db, this.runner, this.tables, this.#surface);
      this.#schemaChecked = true;
      return result;
    });
  }

  /** Reads the schema's version afresh (not the check cached at the first operation): the file answers and the tables are there. */
  async ping(): Promise<void> {
    this.assertOpen();
    await this.#mutex.run(() => {
      this.#assertConnected();
      assertSchema(this.db, this.tables, this.#where, this.#surface);
    });
  }

  /** Refuses every later operation, and closes the connection once the work queued before it has run. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#mutex.run(() => {
      if (this.db.open) this.db.close();
    });
  }

  #assertConnected(): void {
    if (!this.db.open) throw new StoreClosedError();
  }
}
