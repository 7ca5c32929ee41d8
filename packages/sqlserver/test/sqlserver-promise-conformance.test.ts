import { runPromiseStoreConformance } from "@belay/conformance";
import type { PromiseStore } from "@belay/contract";
import { afterAll, beforeAll, describe } from "vitest";
import { type MssqlPool, SqlServerPromiseStore } from "../src/index.js";
import { dropSchema, randomSchema, sqlServerTarget, testPool } from "./target.js";

const target = sqlServerTarget();
const url = target.url;

describe.skipIf(url === undefined)(`sqlserver promise conformance (${target.reason})`, () => {
  let pool: MssqlPool;
  let peerPool: MssqlPool;

  beforeAll(async () => {
    pool = await testPool(url!, 20);
    peerPool = await testPool(url!, 10);
  });

  afterAll(async () => {
    await pool?.close();
    await peerPool?.close();
  });

  runPromiseStoreConformance({
    name: "sqlserver",
    createStore: async (options) => {
      const store = new SqlServerPromiseStore({ pool, schema: randomSchema("pconf"), ...options });
      await store.migrate();
      return store;
    },
    destroyStore: async (store) => {
      await store.close();
      await dropSchema(pool, (store as SqlServerPromiseStore).schema);
    },
    hooks: {
      openPeer: async (store: PromiseStore) =>
        new SqlServerPromiseStore({ pool: peerPool, schema: (store as SqlServerPromiseStore).schema, bounds: store.capabilities.bounds, settings: store.capabilities.settings }),
    },
  });
});
