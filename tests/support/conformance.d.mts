/** A store the conformance suites can migrate and close. */
export interface MigratableStore {
  migrate(): Promise<unknown>;
  close(): Promise<void>;
}

/** A conformance suite's `createStore` (migrated stores made by `open`) and `destroyStore` (close, then `dispose`). */
export declare function migratedStores<O, S extends MigratableStore>(
  open: (options: O) => S,
  dispose?: (store: S) => unknown,
): { createStore(options: O): Promise<S>; destroyStore(store: S): Promise<void> };
