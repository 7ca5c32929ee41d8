import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runStoreConformance } from "@belay/conformance";
import type { JobStore } from "@belay/contract";
import Database from "better-sqlite3";
import { afterAll } from "vitest";
import { SqliteStore } from "../src/index.js";

// Every store gets a file of its own in a temporary folder, removed with the store.
const dir = mkdtempSync(join(tmpdir(), "belay-sqlite-conformance-"));
let files = 0;
/** Transactions the suite opened on a store's file, closed with the store if a clause left one open. */
const openTransactions = new Map<JobStore, Database.Database[]>();

function removeFiles(path: string): void {
  for (const suffix of ["", "-wal", "-shm"]) rmSync(`${path}${suffix}`, { force: true });
}

runStoreConformance({
  name: "sqlite",
  createStore: async (options) => {
    const store = new SqliteStore({ path: join(dir, `store-${++files}.db`), ...options });
    await store.migrate();
    return store;
  },
  destroyStore: async (store) => {
    for (const db of openTransactions.get(store) ?? []) if (db.open) db.close();
    openTransactions.delete(store);
    await store.close();
    removeFiles((store as SqliteStore).path);
  },
  hooks: {
    // The caller's own connection on the same file, with a transaction holding the write lock.
    beginTransaction: async (store) => {
      const db = new Database((store as SqliteStore).path);
      db.exec("BEGIN IMMEDIATE");
      openTransactions.set(store, [...(openTransactions.get(store) ?? []), db]);
      // The connection stays open after the transaction ends (closed with the store), so the
      // executor then runs in autocommit, as a driver does once its transaction is over.
      return {
        tx: db,
        executor: {
          query: async (sql, values) => {
            const statement = db.prepare(sql);
            if (statement.reader) return statement.all(...values) as Record<string, unknown>[];
            statement.run(...values);
            return [];
          },
        },
        commit: async () => void db.exec("COMMIT"),
        rollback: async () => void db.exec("ROLLBACK"),
      };
    },
    // A second store with its own connection on the same file, as a second worker process has.
    openPeer: async (store) =>
      new SqliteStore({
        path: (store as SqliteStore).path,
        bounds: store.capabilities.bounds,
        historyPolicy: store.capabilities.historyPolicy,
      }),
  },
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));
