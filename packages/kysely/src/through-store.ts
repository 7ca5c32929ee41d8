import type {
  EnqueueRequest,
  EnqueueResult,
  EnqueueWorkflowRequest,
  EnqueueWorkflowResult,
  JobStore,
} from "@belay/contract";

// The subset of a Belay store this package needs, typed structurally (kysely's PostgresPool
// pattern) so that neither store is a dependency: `SqliteStore` and `PostgresStore` satisfy it,
// and so does any store that runs its enqueue through a caller's executor.

/** A row as a driver returns it: column name to value. */
export type QueryRow = Record<string, unknown>;

/**
 * Runs one SQL statement of the store, with positional parameters, on the connection of the
 * caller's open transaction, and resolves to its rows. The store writes the SQL in its own
 * dialect and checks that the transaction is on its own database before writing anything.
 */
export interface QueryExecutor {
  query(sql: string, values: readonly unknown[]): Promise<readonly QueryRow[]>;
}

/** What an enqueue inside the caller's transaction did, and what is left to do once it commits. */
export interface EnqueuedThrough<T> {
  readonly result: T;
  /** Sends the wake-up hints that wait for the commit (SQLite's in-process ones; nothing on PostgreSQL). */
  afterCommit(): void;
}

/**
 * A store that can enqueue inside a transaction held open through another driver. Both SQL
 * stores are: `SqliteStore` and `PostgresStore` (each with its own schema and SQL).
 */
export interface ThroughStore extends JobStore {
  enqueueThrough(executor: QueryExecutor, request: Omit<EnqueueRequest, "tx">): Promise<EnqueuedThrough<readonly EnqueueResult[]>>;
  enqueueWorkflowThrough(
    executor: QueryExecutor,
    request: Omit<EnqueueWorkflowRequest, "tx">,
  ): Promise<EnqueuedThrough<EnqueueWorkflowResult>>;
}
