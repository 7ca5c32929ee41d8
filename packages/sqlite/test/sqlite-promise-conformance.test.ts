import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runPromiseStoreConformance } from "@belay/conformance";
import { afterAll } from "vitest";
import { SqlitePromiseStore } from "../src/index.js";

// Every store gets a file of its own in a temporary folder, removed with the store.
const dir = mkdtempSync(join(tmpdir(), "belay-sqlite-promise-conformance-"));
let files = 0;

function removeFiles(path: string): void {
  for (const suffix of ["", "-wal", "-shm"]) rmSync(`${path}${suffix}`, { force: true });
}

runPromiseStoreConformance({
  name: "sqlite",
  createStore: async (options) => {
    const store = new SqlitePromiseStore({ path: join(dir, `promises-${++files}.db`), ...options });
    await store.migrate();
    return store;
  },
  destroyStore: async (store) => {
    await store.close();
    removeFiles((store as SqlitePromiseStore).path);
  },
  hooks: {
    // A second store with its own connection on the same file, as a second server process has.
    openPeer: async (store) =>
      new SqlitePromiseStore({ path: (store as SqlitePromiseStore).path, bounds: store.capabilities.bounds, settings: store.capabilities.settings }),
  },
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));
