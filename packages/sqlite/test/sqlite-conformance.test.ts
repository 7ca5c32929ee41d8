import { type CreateStoreOptions, runStoreConformance } from "@belay/conformance";
import type { JobStore } from "@belay/contract";
import Database from "better-sqlite3";
import { migratedStores } from "../../../tests/support/conformance.mjs";
import { SqliteStore } from "../src/index.js";
import { databaseFiles, removeDatabase } from "./support/files.js";

// Every store gets a file of its own in a temporary folder, removed with the store.
const { fresh } = databaseFiles("belay-sqlite-conformance-", "store");
/** Transactions the suite opened on a store's file, closed with the store if a clause left one open. */
const openTransactions = new Map<JobStore, Database.Database[]>();

const stores = migratedStores(
  (options: CreateStoreOptions) => new SqliteStore({ path: fresh(), ...options }),
  (store) => removeDatabase(store.path),
);

runStoreConformance({
  name: "sqlite",
  createStore: stores.createStore,
  destroyStore: async (store) => {
    for (const db of openTransactions.get(store) ?? []) if (db.open) db.close();
    openTransactions.delete(store);
    await stores.destroyStore(store as SqliteStore);
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
    // The same file under another configuration, as a restarted process would open it.
    reopen: async (store, options) => new SqliteStore({ path: (store as SqliteStore).path, ...options }),
    // A file of its own that nobody migrated.
    openUnmigrated: async (options) => new SqliteStore({ path: fresh(), ...options }),
    // What a later release's migration leaves: its version recorded in the version table.
    recordSchemaVersion: async (store, version) => {
      const db = new Database((store as SqliteStore).path);
      try {
        db.prepare("INSERT INTO belay_migrations (version) VALUES (?)").run(version);
      } finally {
        db.close();
      }
    },
    // SQLite's real lock contention strikes only at BEGIN IMMEDIATE, before a write has written
    // anything (test/sqlite-store.test.ts holds the lock for real). To prove a write that fails
    // after every statement ran commits nothing, the next write's last step before COMMIT raises
    // the error SQLite reports for a lock held elsewhere (SQLITE_BUSY).
    provokeTransient: async (store) => {
      let armed = true;
      store.setStepHook!((point) => {
        if (!armed || point.step !== "commit") return;
        armed = false;
        throw new Database.SqliteError("database is locked", "SQLITE_BUSY");
      });
      return { store, end: async () => store.setStepHook!(null) };
    },
  },
});
