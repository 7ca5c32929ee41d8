import { type CreatePromiseStoreOptions, runPromiseStoreConformance } from "@belay/conformance";
import { migratedStores } from "../../../tests/support/conformance.mjs";
import { SqlitePromiseStore } from "../src/index.js";
import { databaseFiles, removeDatabase } from "./support/files.js";

// Every store gets a file of its own in a temporary folder, removed with the store.
const { fresh } = databaseFiles("belay-sqlite-promise-conformance-", "promises");

runPromiseStoreConformance({
  name: "sqlite",
  ...migratedStores(
    (options: CreatePromiseStoreOptions) => new SqlitePromiseStore({ path: fresh(), ...options }),
    (store) => removeDatabase(store.path),
  ),
  hooks: {
    // A second store with its own connection on the same file, as a second server process has.
    openPeer: async (store) =>
      new SqlitePromiseStore({ path: (store as SqlitePromiseStore).path, bounds: store.capabilities.bounds, settings: store.capabilities.settings }),
  },
});
