import { runPromiseStoreConformance } from "@belay/conformance";
import type { PromiseStore } from "@belay/contract";
import type pg from "pg";
import { afterAll, describe } from "vitest";
import { PostgresPromiseStore } from "../src/index.js";
import { dropSchema, pgTarget, randomSchema, testPool } from "./pg-target.js";

const target = await pgTarget("postgres-promise-conformance.test.ts");
const url = target.url;

describe.skipIf(url === undefined)(`postgres promise conformance (${target.reason})`, () => {
  // Stores share one pool; each owns a fresh schema, dropped after its test. A peer (a second
  // server process) has a pool of its own on the same schema. The stores' pool pipelines, as the
  // pool a store opens from a connection string does (BEGIN with the load, the write with
  // COMMIT); the peer's does not, so the races run both ways of sending.
  const pool: pg.Pool = testPool(url ?? "postgres://unused", 20, { pipeline: true });
  const peerPool: pg.Pool = testPool(url ?? "postgres://unused", 10);

  afterAll(async () => {
    await pool.end();
    await peerPool.end();
    await target.stop();
  });

  runPromiseStoreConformance({
    name: "postgres",
    createStore: async (options) => {
      const store = new PostgresPromiseStore({ pool, schema: randomSchema("pconf"), ...options });
      await store.migrate();
      return store;
    },
    destroyStore: async (store) => {
      await store.close();
      await dropSchema(pool, (store as PostgresPromiseStore).schema);
    },
    hooks: {
      openPeer: async (store: PromiseStore) =>
        new PostgresPromiseStore({
          pool: peerPool,
          schema: (store as PostgresPromiseStore).schema,
          bounds: store.capabilities.bounds,
          settings: store.capabilities.settings,
        }),
    },
  });
});
