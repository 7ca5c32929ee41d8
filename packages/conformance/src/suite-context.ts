import type { Bounds, HistoryPolicy, JobStore, StepHook } from "@belay/contract";

/** How the suite asks an adapter for a store. */
export interface CreateStoreOptions {
  /** Default `transitionsAndFailureDetail`. */
  readonly historyPolicy?: HistoryPolicy;
  /** Overrides of the default bounds. */
  readonly bounds?: Partial<Bounds>;
}

/** A transaction the suite opens on the store's own database, for the transactional clauses. */
export interface ConformanceTransaction {
  /** What to pass as `tx` to `enqueue` / `enqueueWorkflow`. */
  readonly tx: unknown;
  commit(): Promise<void>;
  rollback(): Promise<void>;
}

/**
 * Optional powers an adapter grants the suite. A clause that needs a missing hook is reported
 * as skipped with the hook's name in its title — never silently passed.
 */
export interface ConformanceHooks {
  /**
   * Installs (or removes, with `null`) a step hook on `store`: the store calls it at each named
   * internal step of a write. Enables the atomicity clauses (a throwing hook) and the
   * interleaving clauses (a hook that parks a write mid-transaction).
   */
  setStepHook?(store: JobStore, hook: StepHook | null): void;
  /** Opens a transaction on the database behind `store`. Enables the transactional clauses. */
  beginTransaction?(store: JobStore): Promise<ConformanceTransaction>;
  /**
   * Opens a second store on the same database as `store`, with its own connections — as a
   * second worker process would. Defaults to `store` itself (for in-process stores).
   */
  openPeer?(store: JobStore): Promise<JobStore>;
}

/** What `runStoreConformance` needs from an adapter. */
export interface StoreConformanceOptions {
  /** Shown in every test title. */
  readonly name: string;
  /** A fresh, empty, migrated store (its own schema or database) for every call. */
  createStore(options: CreateStoreOptions): Promise<JobStore>;
  /** Releases a store made by `createStore` (and its data). Default: `store.close()`. */
  destroyStore?(store: JobStore): Promise<void>;
  readonly hooks?: ConformanceHooks;
}

/** What each clause group receives. */
export interface SuiteContext {
  readonly name: string;
  readonly hooks: ConformanceHooks;
  /** A fresh store for this test, released after it. */
  store(options?: CreateStoreOptions): Promise<JobStore>;
  /** A second handle on `store`'s database, released after the test. */
  peer(store: JobStore): Promise<JobStore>;
  /** Installs a step hook; throws if the adapter granted none (guard clauses with `ctx.can`). */
  setStepHook(store: JobStore, hook: StepHook | null): void;
  /** Whether the adapter granted the named hook. */
  can(hook: keyof ConformanceHooks): boolean;
}
