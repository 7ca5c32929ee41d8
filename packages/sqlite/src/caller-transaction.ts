import { InvalidTransactionError } from "@belay/contract";
import { type Connection, mainFileOf } from "./connection.js";

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
