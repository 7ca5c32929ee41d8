import { type CreateStoreOptions, runStoreConformance } from "@belay/conformance";
import { TransientStoreError } from "@belay/contract";
import { migratedStores } from "../../../tests/support/conformance.mjs";
import { MemoryStore } from "../src/index.js";

runStoreConformance({
  name: "memory",
  ...migratedStores((options: CreateStoreOptions) => new MemoryStore(options)),
  // Nothing to reopen, migrate or version: the store's data lives and dies with the object.
  withoutDatabase: "the in-memory store has no database to reopen or migrate",
  hooks: {
    beginTransaction: async (store) => {
      const tx = (store as MemoryStore).beginTransaction();
      return { tx, commit: () => tx.commit(), rollback: () => tx.rollback() };
    },
    // A retriable fault at the commit step, after every write of the operation has been applied:
    // the store must undo them all.
    provokeTransient: async (store) => {
      let armed = true;
      store.setStepHook!((point) => {
        if (!armed || point.step !== "commit") return;
        armed = false;
        throw new TransientStoreError("provoked: a retriable conflict at commit");
      });
      return { store, end: async () => store.setStepHook!(null) };
    },
  },
});
