import type { Bounds, HistoryPolicy, JobStore, QueryExecutor, StepHook, StoreCapabilities } from "@belay/contract";

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
  /**
   * Runs a statement on this transaction's connection: what the suite passes to `enqueueThrough`
   * for a store with `capabilities.enqueueThrough`. Without it those clauses are not proven.
   */
  readonly executor?: QueryExecutor;
  commit(): Promise<void>;
  rollback(): Promise<void>;
}

/**
 * Optional powers an adapter grants the suite, beyond what the store itself declares in its
 * capabilities (the step hook of the atomicity and interleaving clauses is `store.setStepHook`,
 * under `capabilities.stepHook`). A clause that needs a missing power is reported as skipped
 * with what is missing — never silently passed.
 */
export interface ConformanceHooks {
  /**
   * Opens a transaction on the database behind `store`. Required to prove
   * `capabilities.transactionalEnqueue` (and, with `executor`, `capabilities.enqueueThrough`).
   */
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
  /** Installs a step hook with `store.setStepHook`; throws if the store declares no `stepHook` (guard with `clauseNeeding`). */
  setStepHook(store: JobStore, hook: StepHook | null): void;
  /** The capabilities of this adapter's stores (read from the first store made, or a probe). */
  capabilities(): Promise<StoreCapabilities>;
}
