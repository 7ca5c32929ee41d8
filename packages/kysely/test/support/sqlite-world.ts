import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SqliteStore } from "@belay/sqlite";
import Database from "better-sqlite3";
import { Kysely, SqliteDialect } from "kysely";
import { kyselyEnqueuer } from "../../src/index.js";
import type { BusinessDb, KyselyWorld } from "./kysely-fixture.js";

/** A folder of database files for one test file; `remove()` deletes it. */
export function scratchFolder(name: string): { readonly path: (file: string) => string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), `belay-kysely-${name}-`));
  let files = 0;
  return {
    path: (file) => join(dir, `${file}-${++files}.db`),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** The application's Kysely instance on a file: its own better-sqlite3 connection, the business table created. */
export function applicationDb(path: string): Kysely<BusinessDb> {
  const database = new Database(path);
  database.exec("CREATE TABLE IF NOT EXISTS business_rows (key TEXT PRIMARY KEY)");
  return new Kysely<BusinessDb>({ dialect: new SqliteDialect({ database }) });
}

/**
 * One test's SQLite world, co-resident: Belay's tables and the business table in one file, the
 * store on its own connection and the application's Kysely on another.
 */
export async function sqliteWorld(folder: ReturnType<typeof scratchFolder>): Promise<KyselyWorld & { readonly store: SqliteStore }> {
  const path = folder.path("app");
  const store = new SqliteStore({ path });
  await store.migrate();
  const db = applicationDb(path);
  const reader = new Database(path, { readonly: true });
  const others: { store: SqliteStore; db: Kysely<BusinessDb> }[] = [];
  return {
    store,
    belay: kyselyEnqueuer(store),
    db,
    committedRows: async () => reader.prepare("SELECT key FROM business_rows ORDER BY key").pluck().all() as string[],
    elsewhere: async () => {
      // Another file with a Belay schema of its own under the same prefix.
      const other = folder.path("elsewhere");
      const otherStore = new SqliteStore({ path: other });
      await otherStore.migrate();
      const otherDb = applicationDb(other);
      others.push({ store: otherStore, db: otherDb });
      return otherDb;
    },
    close: async () => {
      for (const other of others) {
        await other.db.destroy();
        await other.store.close();
      }
      reader.close();
      await db.destroy();
      await store.close();
    },
  };
}
