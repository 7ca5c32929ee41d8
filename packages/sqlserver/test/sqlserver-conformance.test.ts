import type { JobStore } from "@belay/contract";
import { type CreateStoreOptions, runStoreConformance } from "@belay/conformance";
import { describe } from "vitest";
import { migratedStores } from "../../../tests/support/conformance.mjs";
import { type MssqlTransaction, SqlServerStore } from "../src/index.js";
import { conformancePools, dropSchema, randomSchema, sqlServerTarget } from "./target.js";

// Every clause of the Storage Contract against a real SQL Server (BELAY_TEST_MSSQL_URL, or a
// container). Without one the whole file is skipped; the global setup has said so, loudly, once.
const target = sqlServerTarget();
const url = target.url;

describe.skipIf(url === undefined)(`sqlserver conformance (${target.reason})`, () => {
  // Caller transactions come from a pool of their own (`side`), as an application's would.
  const pools = conformancePools(url);
  const options = new WeakMap<JobStore, CreateStoreOptions>();

  runStoreConformance({
    name: "sqlserver",
    ...migratedStores(
      (storeOptions: CreateStoreOptions) => {
        const store = new SqlServerStore({ pool: pools.stores, schema: randomSchema("conf"), ...storeOptions });
        options.set(store, storeOptions);
        return store;
      },
      (store) => dropSchema(pools.stores, store.schema),
    ),
    hooks: {
      beginTransaction: async () => {
        const tx: MssqlTransaction = pools.side.transaction();
        await tx.begin();
        let finished = false;
        const finish = async (how: "commit" | "rollback") => {
          if (finished) return;
          finished = true;
          await (how === "commit" ? tx.commit() : tx.rollback());
        };
        // Once the transaction is over, the executor runs in autocommit on the pool, as a driver
        // does after its transaction ended: the store must see that no transaction is open.
        const executor = {
          query: async (sql: string, values: readonly unknown[]) => {
            const request = finished ? pools.side.request() : tx.request();
            values.forEach((value, i) => request.input(String(i + 1), value));
            return [...((await request.query(sql)).recordset ?? [])];
          },
        };
        return { tx, executor, commit: () => finish("commit"), rollback: () => finish("rollback") };
      },
      // A second process: its own pool, the same schema, the same options.
      openPeer: async (store) =>
        new SqlServerStore({ connectionString: url!, maxConnections: 4, schema: (store as SqlServerStore).schema, ...options.get(store) }),
    },
  });
});
