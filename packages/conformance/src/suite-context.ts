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
  /**
   * Opens another store on `store`'s database with other options (history policy, bounds),
   * without migrating it — as a deploy that changes the store's configuration restarts on the
   * same data. Proves that such a change needs no migration.
   */
  reopen?(store: JobStore, options: CreateStoreOptions): Promise<JobStore>;
  /**
   * Opens a store on a new, empty database of its own (its own schema or file), without calling
   * `migrate()`: a first process of a fresh deployment. Released with the test like any store.
   * Proves `SchemaNotMigratedError` and, with `openPeer`, concurrent `migrate()`.
   */
  openUnmigrated?(options: CreateStoreOptions): Promise<JobStore>;
  /**
   * Records in `store`'s database that its schema is at `version` and requires a store of at
   * least that version — what a later, non-additive release's migration would leave. Proves
   * `SchemaVersionError` (through a handle opened afterwards with `openPeer`).
   */
  recordSchemaVersion?(store: JobStore, version: number): Promise<void>;
  /**
   * Makes writes on `store`'s database fail with a retriable conflict (`TransientStoreError`),
   * as a busy database, a deadlock or a lost connection does — partway through the write, after
   * it has written what it can, where the store allows that. Returns the handle to write through
   * (`store` itself or a peer on its database) and `end()`, after which writes succeed again.
   * Only a store with a real database can grant it.
   */
  provokeTransient?(store: JobStore): Promise<TransientProvocation>;
}

/** A provoked retriable fault: see {@link ConformanceHooks.provokeTransient}. */
export interface TransientProvocation {
  /** The handle whose next write fails with `TransientStoreError`. */
  readonly store: JobStore;
  /** Ends the provocation (and closes the handle if it is not `store`). */
  end(): Promise<void>;
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
  /**
   * For a store that has no database (the in-memory store): why the hooks that only a database
   * can grant (`reopen`, `openUnmigrated`, `recordSchemaVersion`) do not apply. The clauses that
   * need them are then left out of the run, listed in one line, instead of reported as not proven.
   */
  readonly withoutDatabase?: string;
}

/** The hooks only a store with a database can grant: see {@link StoreConformanceOptions.withoutDatabase}. */
export const DATABASE_HOOKS: readonly (keyof ConformanceHooks)[] = ["reopen", "openUnmigrated", "recordSchemaVersion"];

/** What each clause group receives. */
export interface SuiteContext {
  readonly name: string;
  readonly hooks: ConformanceHooks;
  /** {@link StoreConformanceOptions.withoutDatabase}. */
  readonly withoutDatabase: string | undefined;
  /** A fresh store for this test, released after it. */
  store(options?: CreateStoreOptions): Promise<JobStore>;
  /** A second handle on `store`'s database, released after the test. */
  peer(store: JobStore): Promise<JobStore>;
  /** `hooks.reopen`, released after the test (guard with `clauseGranted`). */
  reopen(store: JobStore, options: CreateStoreOptions): Promise<JobStore>;
  /** `hooks.openUnmigrated`, released (and destroyed) after the test (guard with `clauseGranted`). */
  unmigrated(options?: CreateStoreOptions): Promise<JobStore>;
  /** Installs a step hook with `store.setStepHook`; throws if the store declares no `stepHook` (guard with `clauseNeeding`). */
  setStepHook(store: JobStore, hook: StepHook | null): void;
  /** The capabilities of this adapter's stores (read from the first store made, or a probe). */
  capabilities(): Promise<StoreCapabilities>;
}
