import type { EnqueueThroughOperations, JobStore } from "@belay/contract";

/**
 * A store that can enqueue inside a transaction held open through another driver: one that
 * declares `capabilities.enqueueThrough` (`SqliteStore`, `PostgresStore`). The executor, row and
 * receipt types are the Storage Contract's (`QueryExecutor`, `QueryRow`, `EnqueuedThrough`).
 */
export type ThroughStore = JobStore & EnqueueThroughOperations;
