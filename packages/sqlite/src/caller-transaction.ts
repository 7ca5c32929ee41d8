import { type QueryExecutor, type QueryRow, InvalidTransactionError, isBelayError } from "@belay/contract";
import { type Connection, type Statement, asStoreError, mainFileOf, resolveMainFile } from "./connection.js";
import { type Io, SqlTexts } from "./io.js";
import type { Tables } from "./tables.js";

/** A row as a driver returns it: the contract's `QueryRow`, under the name this package exported it by. */
export type SqliteRow = QueryRow;

/**
 * A way to run SQL inside a transaction the caller holds open on the store's file through a
 * driver of their own — what `SqliteStore#enqueueThrough` accepts: the contract's
 * `QueryExecutor`, under the name this package exported it by. `query` runs one statement with
 * its `?` placeholders bound to `values`, on the connection of that transaction, and resolves to
 * the rows it returns (an empty array for a statement without rows).
 *
 * With Kysely: `(sql, values) => trx.executeQuery(CompiledQuery.raw(sql, [...values])).then((r) => r.rows)`
 * (what `@belay/kysely` does).
 */
export type SqliteQueryExecutor = QueryExecutor;

/**
 * An executor that may answer synchronously. A synchronous one (the caller's better-sqlite3
 * connection) runs a whole enqueue without yielding to the event loop, so nothing else can put
 * a statement inside its savepoint.
 */
export type CallerExecutor = {
  query(sql: string, values: readonly unknown[]): readonly QueryRow[] | Promise<readonly QueryRow[]>;
};

/** Whether `value` looks like a better-sqlite3 `Database` (checked by shape: two installed copies differ in identity). */
function isConnection(value: unknown): value is Connection {
  if (typeof value !== "object" || value === null) return false;
  const candidate = value as Partial<Connection>;
  return (
    typeof candidate.prepare === "function" &&
    typeof candidate.exec === "function" &&
    typeof candidate.pragma === "function" &&
    typeof candidate.open === "boolean" &&
    typeof candidate.inTransaction === "boolean"
  );
}

/**
 * The caller's connection `tx`, checked: a better-sqlite3 `Database`, open, with a transaction
 * open on it, on the same database file as the store's own connection `own` (whose resolved main
 * file is `ownFile`), compared by resolved path. Throws `InvalidTransactionError` otherwise — a
 * transaction the store cannot join is never ignored.
 */
export function callerConnection(tx: unknown, own: Connection, ownFile: string | null): Connection {
  if (!isConnection(tx)) {
    throw new InvalidTransactionError("expected the better-sqlite3 Database your transaction is open on");
  }
  if (!tx.open) throw new InvalidTransactionError("the connection is closed");
  if (!tx.inTransaction) throw new InvalidTransactionError("no transaction is open on the connection (BEGIN one first)");
  if (tx === own) throw new InvalidTransactionError("that is the store's own connection; open your own on the same file");
  const theirs = mainFileOf(tx);
  if (theirs === null || ownFile === null || theirs !== ownFile) {
    throw new InvalidTransactionError(`the connection is on ${theirs ?? "an in-memory database"}, not on the store's file ${ownFile ?? "(in memory)"}`);
  }
  return tx;
}

/**
 * A caller's better-sqlite3 connection as an executor that answers synchronously, with its
 * statements prepared once per connection.
 */
export function connectionExecutor(db: Connection): CallerExecutor {
  const prepared = new Map<string, Statement>();
  return {
    query(sql, values) {
      let statement = prepared.get(sql);
      if (statement === undefined) {
        statement = db.prepare(sql);
        prepared.set(sql, statement);
      }
      if (statement.reader) return statement.all(...values) as QueryRow[];
      statement.run(...values);
      return [];
    },
  };
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * Checks that `executor` runs inside an open transaction on the store's file (`ownFile`, resolved),
 * and throws `InvalidTransactionError` otherwise: an executor on another file, on an in-memory
 * database, on another kind of database, or whose transaction is finished.
 */
export async function checkCallerTransaction(executor: QueryExecutor, ownFile: string | null): Promise<void> {
  // PRAGMA first: on another kind of database it fails before anything else is tried (BEGIN, on
  // PostgreSQL, would only warn inside a transaction, and the ROLLBACK below would end it).
  let theirs: string | null;
  try {
    theirs = resolveMainFile((await executor.query("PRAGMA database_list", [])) as { name: string; file: string }[]);
  } catch (error) {
    if (isBelayError(error)) throw error;
    throw new InvalidTransactionError(`cannot read which SQLite file the transaction is on: ${messageOf(error)}`);
  }
  if (theirs === null || ownFile === null || theirs !== ownFile) {
    throw new InvalidTransactionError(`the transaction is on ${theirs ?? "an in-memory database"}, not on the store's file ${ownFile ?? "(in memory)"}`);
  }
  // SQLite has no SQL to ask whether a transaction is open, and a SAVEPOINT outside one would
  // silently start (and on RELEASE, commit) a transaction of its own. BEGIN is the proof: SQLite
  // refuses it inside a transaction and only there.
  try {
    await executor.query("BEGIN", []);
  } catch (error) {
    if (/within a transaction/i.test(messageOf(error))) return;
    if (isBelayError(error)) throw error;
    throw new InvalidTransactionError(`cannot run statements in the transaction: ${messageOf(error)}`);
  }
  try {
    await executor.query("ROLLBACK", []);
  } catch {
    // Nothing was written inside the BEGIN just made; the refusal below is what matters.
  }
  throw new InvalidTransactionError("no transaction is open on the connection (begin one first)");
}

let savepoints = 0;

function isPromise<T>(value: T | Promise<T>): value is Promise<T> {
  return typeof (value as { then?: unknown } | null)?.then === "function";
}

/**
 * Runs the operation `io` inside the caller's open transaction through `executor`, under a
 * savepoint: an operation that throws, or whose result `keep` refuses, leaves the caller's
 * transaction exactly as it was. Never begins or commits: the rows commit or roll back with the
 * caller's transaction. `step` is called at each step the operation names (the test hook).
 *
 * Results are awaited only when the executor returns a promise, so with a synchronous executor
 * every statement, savepoint included, runs before anything else can reach the connection.
 */
export async function runInCallerTransaction<T>(
  executor: CallerExecutor,
  texts: SqlTexts,
  io: Io<T>,
  keep: (result: T) => boolean,
  step: (name: string) => void | Promise<void>,
): Promise<T> {
  const query = (sql: string, values: readonly unknown[] = []) => executor.query(sql, values);
  // A name of its own per call: two calls overlapping on one connection (against the rule) then
  // fail loudly instead of releasing or undoing each other's savepoint.
  const savepoint = `belay_enqueue_${++savepoints}`;
  const undo = async (): Promise<void> => {
    const back = query(`ROLLBACK TO ${savepoint}`);
    if (isPromise(back)) await back;
    const released = query(`RELEASE ${savepoint}`);
    if (isPromise(released)) await released;
  };
  let result: T;
  try {
    const began = query(`SAVEPOINT ${savepoint}`);
    if (isPromise(began)) await began;
    let next = io.next();
    while (!next.done) {
      const effect = next.value;
      if (typeof effect === "string") {
        const parked = step(effect);
        if (parked) await parked;
        next = io.next();
        continue;
      }
      const answer = query(texts.get(effect.sql), effect.values);
      const rows = isPromise(answer) ? await answer : answer;
      next = io.next(effect.read === "row" ? rows[0] : effect.read === "rows" ? rows : undefined);
    }
    result = next.value;
  } catch (error) {
    try {
      await undo();
    } catch {
      // SQLite may already have rolled the whole transaction back (e.g. on SQLITE_BUSY); the
      // caller's COMMIT will then fail and tell them.
    }
    throw asStoreError(error);
  }
  try {
    if (keep(result)) {
      const released = query(`RELEASE ${savepoint}`);
      if (isPromise(released)) await released;
    } else {
      await undo();
    }
  } catch (error) {
    throw asStoreError(error);
  }
  return result;
}

/**
 * The caller transactions one store may enqueue into: the caller's own better-sqlite3
 * connections (`tx`), each with its statements prepared once, and executors of other drivers,
 * each checked to run inside an open transaction on the store's file.
 */
export class CallerTransactions {
  readonly #own: Connection;
  readonly #texts: SqlTexts;
  readonly #executors = new WeakMap<Connection, CallerExecutor>();
  #ownFile: string | null | undefined;

  constructor(own: Connection, t: Tables) {
    this.#own = own;
    this.#texts = new SqlTexts(t);
  }

  /** The caller's connection `tx` (checked as {@link callerConnection} does) as a synchronous executor. */
  onConnection(tx: unknown): CallerExecutor {
    const db = callerConnection(tx, this.#own, this.#mainFile());
    let executor = this.#executors.get(db);
    if (executor === undefined) {
      executor = connectionExecutor(db);
      this.#executors.set(db, executor);
    }
    return executor;
  }

  /** `executor`, once proven to run inside an open transaction on the store's file (see {@link checkCallerTransaction}). */
  async through(executor: QueryExecutor): Promise<CallerExecutor> {
    if (typeof executor?.query !== "function") {
      throw new InvalidTransactionError("expected an executor with query(sql, values) running in your transaction");
    }
    await checkCallerTransaction(executor, this.#mainFile());
    return executor;
  }

  /** Runs `io` through `executor` under a savepoint: see {@link runInCallerTransaction}. */
  run<T>(executor: CallerExecutor, io: Io<T>, keep: (result: T) => boolean, step: (name: string) => void | Promise<void>): Promise<T> {
    return runInCallerTransaction(executor, this.#texts, io, keep, step);
  }

  #mainFile(): string | null {
    if (this.#ownFile === undefined) this.#ownFile = mainFileOf(this.#own);
    return this.#ownFile;
  }
}
