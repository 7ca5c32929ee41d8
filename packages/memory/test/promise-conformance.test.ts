import { type CreatePromiseStoreOptions, runPromiseStoreConformance } from "@belay/conformance";
import { migratedStores } from "../../../tests/support/conformance.mjs";
import { MemoryPromiseStore } from "../src/index.js";

runPromiseStoreConformance({
  name: "memory",
  ...migratedStores((options: CreatePromiseStoreOptions) => new MemoryPromiseStore(options)),
});
