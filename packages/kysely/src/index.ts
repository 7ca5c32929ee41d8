/**
 * `@belay/kysely` — enqueue Belay jobs inside your own Kysely transaction (PostgreSQL or
 * SQLite): a job exists if and only if your business writes commit.
 */
export { KyselyEnqueuer, kyselyEnqueuer } from "./kysely-enqueuer.js";
export type { KyselyEnqueuerOptions, WorkflowReceipt, WorkflowRequest } from "./kysely-enqueuer.js";
export { kyselyExecutor } from "./kysely-executor.js";
/** The store this package needs: one with `capabilities.enqueueThrough` (`SqliteStore`, `PostgresStore`). */
export type { ThroughStore } from "./through-store.js";
/** Re-exported from `@belay/contract`, where they are declared. */
export type { QueryExecutor, QueryRow, EnqueuedThrough } from "@belay/contract";
