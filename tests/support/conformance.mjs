// What a store's conformance test files share: the store factory the suites call. Plain
// JavaScript with its types beside it (conformance.d.mts), for the reason fixtures.mjs gives.

/**
 * The `createStore` and `destroyStore` of a conformance suite (`runStoreConformance`,
 * `runPromiseStoreConformance`) over `open`, which makes a store for the suite's options: each
 * store is migrated before the suite gets it; when the suite is done with it, it is closed and then
 * `dispose`d (its schema dropped, its file removed).
 */
export function migratedStores(open, dispose = () => undefined) {
  return {
    createStore: async (options) => {
      const store = open(options);
      await store.migrate();
      return store;
    },
    destroyStore: async (store) => {
      await store.close();
      await dispose(store);
    },
  };
}
