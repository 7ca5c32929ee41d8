import { type CreatePromiseStoreOptions, runPromiseStoreConformance } from "@belay/conformance";
import type { PromiseStore } from "@belay/contract";
import { describe } from "vitest";
import { migratedStores } from "../../../tests/support/conformance.mjs";
import { PostgresPromiseStore } from "../src/index.js";
import { conformancePools, dropSchema, pgTarget, randomSchema } from "./pg-target.js";

const target = await pgTarget("postgres-promise-conformance.test.ts");
const url = target.url;

describe.skipIf(url === undefined)(`postgres promise conformance (${target.reason})`, () => {
  // Stores share one pool; each owns a fresh schema, dropped after its test. A peer (a second
  // server process) has a pool of its own on the same schema. The stores' pool pipelines, as the
  // pool a store opens from a connection string does (BEGIN with the load, the write with
  // COMMIT); the peer's does not, so the races run both ways of sending.
  const { stores: pool, side: peerPool } = conformancePools(target, { pipeline: true });

  // Twice: with the row cache (the default: an operation whose rows the store remembers sends
  // one checked statement instead of a load and a write) and without it (every operation loads).
  // The peers keep the default, so every race also meets a cache that is wrong.
  for (const { name, rowCache } of [
    { name: "postgres", rowCache: undefined },
    { name: "postgres, row cache off", rowCache: 0 },
  ]) {
    runPromiseStoreConformance({
      name,
      ...migratedStores(
        (options: CreatePromiseStoreOptions) =>
          new PostgresPromiseStore({ pool, schema: randomSchema("pconf"), ...(rowCache === undefined ? {} : { rowCache }), ...options }),
        (store) => dropSchema(pool, store.schema),
      ),
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
  }
});
