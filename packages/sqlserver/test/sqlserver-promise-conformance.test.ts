import { type CreatePromiseStoreOptions, runPromiseStoreConformance } from "@belay/conformance";
import type { PromiseStore } from "@belay/contract";
import { describe } from "vitest";
import { migratedStores } from "../../../tests/support/conformance.mjs";
import { SqlServerPromiseStore } from "../src/index.js";
import { conformancePools, dropSchema, randomSchema, sqlServerTarget } from "./target.js";

const target = sqlServerTarget();
const url = target.url;

describe.skipIf(url === undefined)(`sqlserver promise conformance (${target.reason})`, () => {
  // A peer (a second server process) has a pool of its own (`side`) on the same schema.
  const pools = conformancePools(url);

  runPromiseStoreConformance({
    name: "sqlserver",
    ...migratedStores(
      (options: CreatePromiseStoreOptions) => new SqlServerPromiseStore({ pool: pools.stores, schema: randomSchema("pconf"), ...options }),
      (store) => dropSchema(pools.stores, store.schema),
    ),
    hooks: {
      openPeer: async (store: PromiseStore) =>
        new SqlServerPromiseStore({ pool: pools.side, schema: (store as SqlServerPromiseStore).schema, bounds: store.capabilities.bounds, settings: store.capabilities.settings }),
    },
  });
});
