import { runPromiseStoreConformance } from "@belay/conformance";
import { MemoryPromiseStore } from "../src/index.js";

runPromiseStoreConformance({
  name: "memory",
  createStore: async (options) => {
    const store = new MemoryPromiseStore(options);
    await store.migrate();
    return store;
  },
});
