import type { PromiseBounds, PromiseSettings, PromiseStore, PromiseStoreCapabilities, StepHook } from "@belay/contract";

/** How the promise suite asks an adapter for a store. */
export interface CreatePromiseStoreOptions {
  /** Overrides of the default promise bounds (the input clauses use small ones). */
  readonly bounds?: Partial<PromiseBounds>;
  /** Overrides of the default settings (retry timeout, preload limit). */
  readonly settings?: Partial<PromiseSettings>;
}

/**
 * Optional powers an adapter grants the promise suite. A clause that needs a missing power is
 * reported as skipped with what is missing, never silently passed. (The step hook is the store's
 * own `setStepHook`, under `capabilities.stepHook`.)
 */
export interface PromiseConformanceHooks {
  /**
   * Opens a second store on the same database as `store`, with its own connections, as a second
   * server process would. Defaults to `store` itself (for in-process stores).
   */
  openPeer?(store: PromiseStore): Promise<PromiseStore>;
}

/** What `runPromiseStoreConformance` needs from an adapter. */
export interface PromiseStoreConformanceOptions {
  /** Shown in every test title. */
  readonly name: string;
  /** A fresh, empty, migrated promise store (its own schema, database or file) for every call. */
  createStore(options: CreatePromiseStoreOptions): Promise<PromiseStore>;
  /** Releases a store made by `createStore` (and its data). Default: `store.close()`. */
  destroyStore?(store: PromiseStore): Promise<void>;
  readonly hooks?: PromiseConformanceHooks;
  /**
   * Clauses that expose a known defect of the contract's shared machine (every store inherits
   * it) are registered as expected failures by default (`"expect-failure"`, vitest's `it.fails`):
   * the run stays green and names them, and one starts failing the day the defect is fixed, so
   * it gets unmarked. `"assert"` runs them as ordinary clauses (for whoever fixes the machine).
   */
  readonly machineDefects?: "expect-failure" | "assert";
}

/** What each promise clause group receives. */
export interface PromiseSuiteContext {
  readonly name: string;
  readonly hooks: PromiseConformanceHooks;
  readonly machineDefects: "expect-failure" | "assert";
  /** A fresh store for this test, released after it. */
  store(options?: CreatePromiseStoreOptions): Promise<PromiseStore>;
  /** A second handle on `store`'s database (or `store` itself), released after the test. */
  peer(store: PromiseStore): Promise<PromiseStore>;
  /** Installs a step hook; throws if the store declares no `stepHook` (guard with `promiseClauseNeeding`). */
  setStepHook(store: PromiseStore, hook: StepHook | null): void;
  /** The capabilities of this adapter's stores (read from the first store made, or a probe). */
  capabilities(): Promise<PromiseStoreCapabilities>;
}
