import type { EnqueueRequest, EnqueueResult } from "./enqueue.js";
import type { EnqueueWorkflowRequest, EnqueueWorkflowResult } from "./workflows.js";

// Enqueue through a caller's transaction held open by another driver (Kysely, an ORM, a raw
// client): the optional capability `capabilities.enqueueThrough`. The store writes its own SQL
// and the caller's executor runs it on the connection of the caller's open transaction, so the
// jobs exist if and only if that transaction commits.

/** A row as a driver returns it: column name to value. */
export type QueryRow = Record<string, unknown>;

/**
 * Runs one SQL statement of the store, with positional parameters, on the connection of the
 * caller's open transaction, and resolves to its rows. The store writes the SQL in its own
 * dialect and checks that the transaction is open on its own database before writing anything
 * (else `InvalidTransactionError`).
 */
export interface QueryExecutor {
  query(sql: string, values: readonly unknown[]): Promise<readonly QueryRow[]>;
}

/** What an enqueue inside the caller's transaction did, and what is left to do once it commits. */
export interface EnqueuedThrough<T> {
  readonly result: T;
  /** Sends the wake-up hints that wait for the commit; call it after your transaction committed. */
  afterCommit(): void;
}

/** An enqueue request for `enqueueThrough`: the transaction is the executor's. */
export type EnqueueThroughRequest = Omit<EnqueueRequest, "tx">;

/** A workflow request for `enqueueWorkflowThrough`. */
export type EnqueueWorkflowThroughRequest = Omit<EnqueueWorkflowRequest, "tx">;

/** The two operations of the `enqueueThrough` capability. */
export interface EnqueueThroughOperations {
  /**
   * `enqueue` inside the transaction `executor` runs in, under a savepoint, so a rejected call
   * leaves the transaction usable. Calls on one transaction must not overlap.
   */
  enqueueThrough(executor: QueryExecutor, request: EnqueueThroughRequest): Promise<EnqueuedThrough<readonly EnqueueResult[]>>;
  /** `enqueueWorkflow` inside the transaction `executor` runs in; see `enqueueThrough`. */
  enqueueWorkflowThrough(executor: QueryExecutor, request: EnqueueWorkflowThroughRequest): Promise<EnqueuedThrough<EnqueueWorkflowResult>>;
}
