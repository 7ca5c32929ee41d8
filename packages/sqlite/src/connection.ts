import { realpathSync } from "node:fs";
import { resolve } from "node:path";
import { TransientStoreError } from "@belay/contract";
import Database from "better-sqlite3";
import type { ResolvedSqliteFileConfig } from "./sqlite-store-config.js";
import type { Tables } from "./tables.js";

/** A better-sqlite3 connection. */
export type Connection = Database.Database;
/** A prepared statement. */
export type Statement = Database.Statement;

/**
 * The longest SQLite's own busy handler may block the event loop at once. A write that finds the
 * file locked longer than this yields to the event loop and tries again (see `acquireWriteLock`),
 * so other work in the process — heartbeats, a second store on the same file — keeps running.
 */
export const LOCK_SLICE_MS = 20;

/**
 * Opens a connection and sets it up: WAL (readers never wait for the writer, and a process crash
 * loses nothing committed), the configured `synchronous` level, foreign keys (the side tables
 * cascade with their job), and a busy timeout.
 */
export function openConnection(config: ResolvedSqliteFileConfig): Connection {
  // The first open may switch the file to WAL, which needs the lock: wait the full budget here.
  const db = new Database(config.path, { timeout: config.busyTimeoutMs });
  try {
    db.pragma("journal_mode = WAL");
    db.pragma(`synchronous = ${config.synchronous === "full" ? "FULL" : "NORMAL"}`);
    db.pragma("foreign_keys = ON");
    db.pragma(`busy_timeout = ${Math.min(config.busyTimeoutMs, LOCK_SLICE_MS)}`);
  } catch (error) {
    db.close();
    throw asStoreError(error);
  }
  return db;
}

/** Whether `error` is SQLite reporting a lock held elsewhere (SQLITE_BUSY, SQLITE_LOCKED and their extended codes). */
export function isLockError(error: unknown): boolean {
  const code = typeof error === "object" && error !== null ? (error as { code?: unknown }).code : undefined;
  return (
    typeof code === "string" &&
    (code.startsWith("SQLITE_BUSY") || code.startsWith("SQLITE_LOCKED") || code === "SQLITE_PROTOCOL")
  );
}

/** Lock errors become `TransientStoreError`; everything else passes through unchanged. */
export function asStoreError(error: unknown): unknown {
  if (!isLockError(error)) return error;
  const code = (error as { code: string }).code;
  return new TransientStoreError(`the database is locked by another connection (${code}); nothing was committed`, {
    cause: error,
  });
}

/**
 * The main database file of a connection, resolved (symlinks followed), or `null` for an
 * in-memory or temporary database. Used to check a caller's transaction is on the store's file.
 */
export function mainFileOf(db: Connection): string | null {
  return resolveMainFile(db.pragma("database_list") as { name: string; file: string }[]);
}

/** The resolved main file named by the rows of `PRAGMA database_list`, or `null` when it has none. */
export function resolveMainFile(databases: readonly { name: string; file: string }[]): string | null {
  const file = databases.find((row) => row.name === "main")?.file ?? "";
  if (file === "") return null;
  try {
    return realpathSync(file);
  } catch {
    return resolve(file);
  }
}

/**
 * The prepared statements of one connection. Each statement is prepared once, the first time its
 * SQL builder is used, and kept: statements are reused for the life of the connection.
 */
export class Statements {
  readonly #db: Connection;
  readonly #byBuilder = new Map<(t: Tables) => string, Statement>();
  readonly #byKey = new Map<string, Statement>();

  constructor(
    db: Connection,
    readonly t: Tables,
  ) {
    this.#db = db;
  }

  /** The statement built by `build` (a module-level SQL builder). */
  get(build: (t: Tables) => string): Statement {
    let statement = this.#byBuilder.get(build);
    if (statement === undefined) {
      statement = this.#db.prepare(build(this.t));
      this.#byBuilder.set(build, statement);
    }
    return statement;
  }

  /** A statement whose SQL depends on the request's shape (filters); `key` names the shape. */
  shaped(key: string, build: (t: Tables) => string): Statement {
    let statement = this.#byKey.get(key);
    if (statement === undefined) {
      statement = this.#db.prepare(build(this.t));
      this.#byKey.set(key, statement);
    }
    return statement;
  }
}
