/**
 * `@belay/kysely` — enqueue Belay jobs inside your own Kysely transaction (PostgreSQL or
 * SQLite): a job exists if and only if your business writes commit.
 */
export { KyselyEnqueuer, kyselyEnqueuer } from "./kysely-enqueuer.js";
export type { KyselyEnqueuerOptions, WorkflowReceipt, WorkflowRequest } from "./kysely-enqueuer.js";
export { kyselyExecutor } from "./kysely-executor.js";
/** The structural store types this package needs (satisfied by `SqliteStore` and `PostgresStore`). */
export type { ThroughStore, QueryExecutor, QueryRow, EnqueuedThrough } from "./through-store.js";
