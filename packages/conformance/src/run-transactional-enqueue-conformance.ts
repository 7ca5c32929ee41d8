import type { JobState, JobStore } from "@belay/contract";
import { afterEach, describe } from "vitest";
import { transactionalEnqueueClauses } from "./clauses/transactional-enqueue.js";

/** A job the suite enqueues through a bridge: the bridge picks its job name and payload. */
export interface TransactionalJob {
  readonly id: string;
  readonly queue: string;
  /** Jobs that must end first (existing, or earlier in the same call). */
  readonly parentIds?: readonly string[];
}

/** What the bridge reports for one enqueued job (a refused call throws instead). */
export interface TransactionalReceipt {
  readonly id: string;
  readonly status: "created" | "duplicate";
  readonly state: JobState;
}

/** A workflow the suite enqueues through a bridge. */
export interface TransactionalWorkflow {
  readonly id: string;
  readonly name: string;
  readonly jobs: readonly TransactionalJob[];
}

/**
 * One test's world, set up by the bridge under test: a Belay store, and a way to run business
 * transactions on the store's database in the bridge's own terms — the application's driver or
 * query builder — with the bridge's enqueue inside them. `Tx` is whatever the bridge uses as an
 * open transaction (a Kysely `Transaction`, a `pg` client, …).
 */
export interface TransactionalEnqueueFixture<Tx> {
  /** A migrated store on its own database, schema or file. The suite reads jobs back through it. */
  readonly store: JobStore;
  /** Opens a business transaction on the store's database. */
  begin(): Promise<Tx>;
  /**
   * Writes one business row keyed `key` in `tx` (an order, say). Keys are unique: writing the
   * same key twice in one transaction must fail, as a business write fails.
   */
  writeRow(tx: Tx, key: string): Promise<void>;
  /** The keys of the committed business rows, read outside any transaction. */
  committedRows(): Promise<readonly string[]>;
  /**
   * Enqueues `jobs`, as one atomic call, through the bridge inside `tx`. Resolves with a receipt
   * per job in order; a refused call (an unknown parent) throws a Belay error and writes nothing.
   */
  enqueue(tx: Tx, jobs: readonly TransactionalJob[]): Promise<readonly TransactionalReceipt[]>;
  /** Enqueues a workflow through the bridge inside `tx`. */
  enqueueWorkflow(tx: Tx, workflow: TransactionalWorkflow): Promise<{ readonly status: "created" | "duplicate" }>;
  /** Commits `tx`, the bridge's way (including whatever it does after a commit). */
  commit(tx: Tx): Promise<void>;
  rollback(tx: Tx): Promise<void>;
  savepoint(tx: Tx, name: string): Promise<void>;
  rollbackToSavepoint(tx: Tx, name: string): Promise<void>;
  /**
   * Opens a transaction on a database that is not the store's (ideally one holding a Belay schema
   * of the same name), to prove the bridge refuses to enqueue there. Without it that clause is
   * reported as skipped.
   */
  beginElsewhere?(): Promise<Tx>;
  /** Releases everything the fixture holds (connections, store, schema or file). */
  tearDown(): Promise<void>;
}

/** What `runTransactionalEnqueueConformance` needs from a bridge. */
export interface TransactionalEnqueueConformanceOptions<Tx> {
  /** Shown in every test title. */
  readonly name: string;
  /** A fresh fixture for every test; torn down after it. */
  setUp(): Promise<TransactionalEnqueueFixture<Tx>>;
}

/** What the transactional clauses receive. */
export interface TransactionalSuiteContext<Tx> {
  /** This test's fixture, torn down after it. */
  fixture(): Promise<TransactionalEnqueueFixture<Tx>>;
}

/**
 * Registers the transactional-enqueue clauses as vitest tests: enqueue inside an application's
 * own transaction, so a job exists if and only if the business writes beside it commit. For
 * bridges between a Belay store and an application's database access (`@belay/kysely`, or your
 * own). Call it at the top level of a test file:
 *
 * @example
 * ```ts
 * import { runTransactionalEnqueueConformance } from "@belay/conformance";
 *
 * runTransactionalEnqueueConformance({
 *   name: "my-bridge on postgres",
 *   setUp: async () => {
 *     const store = await freshStore();
 *     return {
 *       store,
 *       begin: () => db.startTransaction().execute(),
 *       writeRow: (trx, key) => trx.insertInto("orders").values({ key }).execute().then(() => undefined),
 *       committedRows: async () => (await db.selectFrom("orders").select("key").execute()).map((r) => r.key),
 *       enqueue: (trx, jobs) => bridge.enqueueMany(trx, jobs.map(toRequest)),
 *       // … enqueueWorkflow, commit, rollback, savepoint, rollbackToSavepoint, tearDown
 *     };
 *   },
 * });
 * ```
 */
export function runTransactionalEnqueueConformance<Tx>(options: TransactionalEnqueueConformanceOptions<Tx>): void {
  const live: TransactionalEnqueueFixture<Tx>[] = [];
  const ctx: TransactionalSuiteContext<Tx> = {
    async fixture() {
      const fixture = await options.setUp();
      live.push(fixture);
      return fixture;
    },
  };

  // Dropping a schema or database can wait on a loaded server well past vitest's 10 s default.
  afterEach(async () => {
    for (const fixture of live.splice(0)) await fixture.tearDown();
  }, 60_000);

  describe(`${options.name}: transactional enqueue`, () => transactionalEnqueueClauses(ctx));
}
