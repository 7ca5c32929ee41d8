import { runStoreConformance } from "@belay/conformance";
import { MemoryStore } from "../src/index.js";

runStoreConformance({
  name: "memory",
  createStore: async (options) => {
    const store = new MemoryStore(options);
    await store.migrate();
    return store;
  },
  hooks: {
    beginTransaction: async (store) => {
      const tx = (store as MemoryStore).beginTransaction();
      return { tx, commit: () => tx.commit(), rollback: () => tx.rollback() };
    },
  },
});
