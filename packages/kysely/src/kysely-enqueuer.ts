import {
  type EnqueueRequest, type EnqueueResult, type EnqueueWorkflowRequest, type EnqueueWorkflowResult, type EnqueuedThrough,
  type QueryExecutor, InvalidTransactionError, TransientStoreError,
} from "@belay/contract";
import {
  type AnyJobDefinition, type Clock, type EnqueueOptions, type EnqueueReceipt, type JobRequest, type PayloadOf, Client,
} from "@belay/core";
import type { Kysely, Transaction } from "kysely";
import { isKysely, kyselyExecutor } from "./kysely-executor.js";
import type { ThroughStore } from "./through-store.js";

/** Options of {@link kyselyEnqueuer}. */
export interface KyselyEnqueuerOptions {
  /** Where "now" comes from (enqueue time, `delayMs`). Default: the system clock. */
  readonly clock?: Clock;
}

/** What a workflow enqueue did: as `Client#enqueueWorkflow` returns it. */
export type WorkflowReceipt = Awaited<ReturnType<Client["enqueueWorkflow"]>>;

/** A workflow to enqueue: as `Client#enqueueWorkflow` takes it. */
export type WorkflowRequest = Parameters<Client["enqueueWorkflow"]>[0];

/**
 * Enqueues Belay jobs inside your own Kysely transaction, so a job exists if and only if your
 * business writes commit: no outbox, no job for an order that rolled back, no order without its
 * job. Typed like `@belay/core`'s `Client` (same job definitions, options and receipts); the
 * first argument says where the jobs are written:
 *
 * - a `Transaction` (from `db.transaction().execute(...)` or `db.startTransaction()`): inside
 *   it, under a savepoint, so a refused call (a bad payload, an unknown parent) throws and leaves
 *   your transaction usable. Given a finished transaction, or one on another database than the
 *   store's, it throws `InvalidTransactionError` and writes nothing anywhere.
 * - a plain `Kysely` instance: in a transaction of its own, committed before the call returns.
 *
 * The store writes with its own schema and SQL (`SqliteStore` on its file, `PostgresStore` on
 * its database and schema); your Kysely instance must reach that same database. Calls on one
 * transaction run one after another.
 *
 * Wake-up hints (an idle worker polls at once) never fire before the commit. On PostgreSQL they
 * ride your transaction as `NOTIFY`, heard at its commit, whatever opened it. On SQLite they are
 * in-process and sent once the enqueuer knows the commit happened: with a plain `Kysely`, with
 * {@link KyselyEnqueuer.transaction}, or when you call {@link KyselyEnqueuer.committed}; else a
 * worker finds the jobs at its next poll.
 *
 * @example
 * ```ts
 * const belay = kyselyEnqueuer(store);
 *
 * await belay.transaction(db, async (trx) => {
 *   const order = await trx.insertInto("orders").values({ customer: "c-7", total: 4200 })
 *     .returning("id").executeTakeFirstOrThrow();
 *   await belay.enqueue(trx, sendOrderConfirmation, { orderId: order.id });
 * });
 * ```
 */
export class KyselyEnqueuer {
  /** The store the jobs are written to. */
  readonly store: ThroughStore;
  readonly #client: Client;
  /** Hints of each transaction, sent when it is known to have committed. */
  readonly #waiting = new WeakMap<object, (() => void)[]>();

  constructor(store: ThroughStore, options: KyselyEnqueuerOptions = {}) {
    if (store?.capabilities?.enqueueThrough !== true || typeof store.enqueueThrough !== "function" || typeof store.enqueueWorkflowThrough !== "function") {
      throw new TypeError("kyselyEnqueuer needs a store that can enqueue through a caller's transaction (SqliteStore, PostgresStore)");
    }
    this.store = store;
    this.#client = new Client({ store: this.#routed(store), ...(options.clock === undefined ? {} : { clock: options.clock }) });
  }

  /** Enqueues one job in `db` (a transaction, or a `Kysely` for a transaction of its own). */
  enqueue<TJob extends AnyJobDefinition>(
    db: Kysely<any>,
    job: TJob,
    payload: PayloadOf<TJob>,
    options: EnqueueOptions = {},
  ): Promise<EnqueueReceipt> {
    return this.#client.enqueue(job, payload, { ...options, tx: db });
  }

  /** Enqueues several jobs atomically in `db`; requests (from `request()`) may name each other as parents. */
  enqueueMany(db: Kysely<any>, requests: readonly JobRequest<any>[]): Promise<EnqueueReceipt[]> {
    return this.#client.enqueueMany(requests, { tx: db });
  }

  /** Enqueues a workflow in `db`: named, atomic, every parent a member. */
  enqueueWorkflow(db: Kysely<any>, workflow: WorkflowRequest): Promise<WorkflowReceipt> {
    return this.#client.enqueueWorkflow(workflow, { tx: db });
  }

  /**
   * Runs `callback` in a new transaction of `db`, as `db.transaction().execute(callback)` does,
   * and once it has committed sends the wake-up hints of the jobs enqueued through its `trx`.
   */
  async transaction<DB, T>(db: Kysely<DB>, callback: (trx: Transaction<DB>) => Promise<T>): Promise<T> {
    let opened: Transaction<DB> | undefined;
    const result = await db.transaction().execute((trx) => {
      opened = trx;
      return callback(trx);
    });
    if (opened !== undefined) this.committed(opened);
    return result;
  }

  /**
   * Tells the enqueuer that `trx` has committed: sends the wake-up hints of the jobs enqueued
   * through that very object (SQLite's in-process hints; on PostgreSQL they already rode the
   * commit). For transactions you commit yourself, e.g. `await trx.commit().execute()`.
   */
  committed(trx: Kysely<any>): void {
    const waiting = this.#waiting.get(trx);
    this.#waiting.delete(trx);
    for (const afterCommit of waiting ?? []) afterCommit();
  }

  /** The store as the `Client` sees it: its enqueue calls go through the caller's Kysely handle (`tx`). */
  #routed(store: ThroughStore): ThroughStore {
    const enqueue = (request: EnqueueRequest): Promise<readonly EnqueueResult[]> =>
      this.#within(request.tx, (executor) => store.enqueueThrough(executor, { jobs: request.jobs, now: request.now }));
    const enqueueWorkflow = (request: EnqueueWorkflowRequest): Promise<EnqueueWorkflowResult> =>
      this.#within(request.tx, (executor) => store.enqueueWorkflowThrough(executor, { workflow: request.workflow, now: request.now }));
    return new Proxy(store, {
      get(target, key) {
        if (key === "enqueue") return enqueue;
        if (key === "enqueueWorkflow") return enqueueWorkflow;
        const value: unknown = Reflect.get(target, key, target);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
  }

  async #within<T>(db: unknown, work: (executor: QueryExecutor) => Promise<EnqueuedThrough<T>>): Promise<T> {
    if (!isKysely(db)) throw new InvalidTransactionError("expected a Kysely instance or a Kysely transaction");
    if (!db.isTransaction) {
      // No transaction given: one of our own, so the jobs commit (and hint) on their own.
      await this.#refuseOpenTransaction(db);
      const { result, afterCommit } = await this.#ownTransaction(db, work);
      afterCommit();
      return result;
    }
    const { result, afterCommit } = await this.#serially(db, () => work(kyselyExecutor(db)));
    const waiting = this.#waiting.get(db);
    if (waiting === undefined) this.#waiting.set(db, [afterCommit]);
    else waiting.push(afterCommit);
    return result;
  }

  /**
   * A plain `Kysely` handle on PostgreSQL may still sit inside a transaction begun with raw SQL
   * (`db.connection()` and `BEGIN`): PostgreSQL would only warn at our `BEGIN`, and our `COMMIT`
   * would commit the caller's transaction. Outside a transaction block every statement is its
   * own transaction, so its start time is the statement's; inside one, it is earlier.
   */
  async #refuseOpenTransaction(db: Kysely<any>): Promise<void> {
    if (this.store.capabilities.name !== "postgres") return; // SQLite refuses a nested BEGIN itself
    const [row] = await kyselyExecutor(db).query("SELECT transaction_timestamp() = statement_timestamp() AS fresh", []);
    if (row?.["fresh"] === false) {
      throw new InvalidTransactionError(
        "this Kysely handle is inside a transaction begun outside Kysely; pass a Kysely Transaction (db.transaction()) instead",
      );
    }
  }

  /**
   * Runs `work` in a transaction of its own. On SQLite a deferred transaction that reads before
   * it writes fails with SQLITE_BUSY when another connection commits in between; the whole
   * transaction is ours, so it is run again (a few times, briefly backing off).
   */
  async #ownTransaction<T>(db: Kysely<any>, work: (executor: QueryExecutor) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await db.transaction().execute((trx) => work(kyselyExecutor(trx)));
      } catch (error) {
        if (!(error instanceof TransientStoreError) || this.store.capabilities.name !== "sqlite" || attempt >= OWN_TRANSACTION_ATTEMPTS) {
          throw error;
        }
        await new Promise((resolve) => setTimeout(resolve, Math.min(2 ** attempt, 50)));
      }
    }
  }

  /**
   * Runs `work` after the earlier calls on `trx` have settled — across every enqueuer in this
   * process. Two calls overlapping on one connection would interleave their statements inside
   * each other's savepoints. (Derived handles of one transaction — `trx.withSchema(…)` — are
   * other objects: do not enqueue through two of them at once.)
   */
  #serially<T>(trx: object, work: () => Promise<T>): Promise<T> {
    const current = (queues.get(trx) ?? Promise.resolve()).then(work, work);
    queues.set(
      trx,
      current.catch(() => undefined),
    );
    return current;
  }
}

/** Attempts of an enqueue in a transaction of the enqueuer's own on SQLite (see `#ownTransaction`). */
const OWN_TRANSACTION_ATTEMPTS = 10;

/**
 * The tail of each transaction's queue of calls, shared by every enqueuer of the process (and by
 * both module formats, should ESM and CJS copies be loaded): one call at a time per transaction.
 */
const queues: WeakMap<object, Promise<unknown>> = ((globalThis as Record<symbol, unknown>)[Symbol.for("belay.kysely.queues")] ??=
  new WeakMap<object, Promise<unknown>>()) as WeakMap<object, Promise<unknown>>;

/**
 * An enqueuer for `store` (a `SqliteStore` or `PostgresStore`) that writes inside your Kysely
 * transactions. See {@link KyselyEnqueuer}.
 *
 * @example
 * ```ts
 * import { kyselyEnqueuer } from "@belay/kysely";
 *
 * const belay = kyselyEnqueuer(store);
 * await db.transaction().execute(async (trx) => {
 *   await trx.insertInto("orders").values(order).execute();
 *   await belay.enqueue(trx, sendOrderConfirmation, { orderId: order.id });
 * });
 * ```
 */
export function kyselyEnqueuer(store: ThroughStore, options: KyselyEnqueuerOptions = {}): KyselyEnqueuer {
  return new KyselyEnqueuer(store, options);
}
