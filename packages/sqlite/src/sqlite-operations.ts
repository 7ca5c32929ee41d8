import type * as contract from "@belay/contract";
import { type OperationAnswer, type OperationName, type OperationRequest, defineOperations, resolveBounds } from "@belay/contract";
import { type CallerExecutor, CallerTransactions } from "./caller-transaction.js";
import { Statements, asStoreError, openConnection } from "./connection.js";
import { Hints } from "./hints.js";
import { type Io, onStatements } from "./io.js";
import { LockedConnection } from "./locked-connection.js";
import { JOB_SURFACE } from "./migrate.js";
import { listAuditRecords } from "./sql/audit.js";
import { claim } from "./sql/claim.js";
import { enqueue } from "./sql/enqueue.js";
import { expireLeases, heartbeat, release } from "./sql/leases.js";
import { acquireMaintainerLease, releaseMaintainerLease } from "./sql/maintainer.js";
import {
  claimObserverDeliveries, getObserver, listObserverDeadLetters, listObservers, registerObserver, removeObserver, reportObserverDeliveries,
} from "./sql/observers.js";
import { cancelJob, listQueueSettings, pauseQueue, requeueJob, resumeQueue, setConcurrencyLimit } from "./sql/operator.js";
import { reportOutcomes } from "./sql/outcomes.js";
import { countJobs, getDependencies, getJob, getJobHistory, getJobOutput, listJobs } from "./sql/reads.js";
import { purgeTerminal } from "./sql/retention.js";
import { getSchedule, listSchedules, mintDue, removeSchedule, triggerSchedule, upsertSchedule } from "./sql/schedules.js";
import { facetTags, suggestTags } from "./sql/tags.js";
import { enqueueWorkflow, getWorkflow, listWorkflows } from "./sql/workflows.js";
import { type ResolvedSqliteStoreConfig, type SqliteStoreConfig, resolveSqliteStoreConfig } from "./sqlite-store-config.js";
import { tablesFor } from "./tables.js";
import type { IoContext, OpContext, ReadContext, Steps } from "./transaction.js";

type Write<R, T> = (ctx: OpContext, request: R) => Steps<T>;
type IoWrite<R, T> = (ctx: IoContext, request: R) => Io<T>;
type Read<R, T> = (ctx: ReadContext, request: R) => T;

const keepEnqueue = (results: readonly contract.EnqueueResult[]): boolean => !results.some((r) => r.status === "rejected");
const keepWorkflow = (result: contract.EnqueueWorkflowResult): boolean => result.status === "created";

/** The operations that are one write transaction of their `sql/` function. */
const WRITES = {
  claim, reportOutcomes, heartbeat, release, expireLeases, upsertSchedule, removeSchedule, mintDue, triggerSchedule,
  cancelJob, requeueJob, pauseQueue, resumeQueue, setConcurrencyLimit, purgeTerminal, acquireMaintainerLease,
  releaseMaintainerLease, registerObserver, removeObserver, claimObserverDeliveries, reportObserverDeliveries,
} satisfies { readonly [K in OperationName]?: Write<OperationRequest<K>, OperationAnswer<K>> };

type Reads = { readonly [K in OperationName]?: Read<Exclude<OperationRequest<K>, undefined>, OperationAnswer<K>> };

/** The operations that are one statement (one statement is one snapshot). */
const READS = {
  listSchedules, getSchedule, listAuditRecords, getJob, getJobOutput, getJobHistory, listJobs, countJobs, listQueueSettings,
  facetTags, listObserverDeadLetters,
} satisfies Reads;

/** The reads of several statements, run in one read transaction so that they see one snapshot. */
const SNAPSHOTS = { getDependencies, suggestTags, getWorkflow, listWorkflows, getObserver, listObservers } satisfies Reads;

// The operations of WRITES, READS and SNAPSHOTS are defined from them, in the class's static block.
export interface SqliteOperations extends Pick<contract.JobStoreOperations, keyof typeof WRITES | keyof typeof READS | keyof typeof SNAPSHOTS> {}

/**
 * The Storage Contract's operations on one SQLite connection, behind `SqliteStore`'s checked
 * front (which has checked every request's shape before it arrives here). Operations run one at
 * a time under the instance's lock; each write is one `BEGIN IMMEDIATE` transaction, each
 * multi-statement read one snapshot, and each delegates to its function in `sql/`.
 */
export class SqliteOperations implements contract.JobStoreOperations {
  readonly capabilities: contract.StoreCapabilities;
  /** The database file, as given. */
  readonly path: string;
  readonly #config: ResolvedSqliteStoreConfig;
  readonly #bounds: Readonly<contract.Bounds>;
  readonly #conn: LockedConnection;
  readonly #reads: ReadContext;
  readonly #hints = new Hints();
  readonly #callers: CallerTransactions;
  #hook: contract.StepHook | null = null;

  constructor(config: SqliteStoreConfig) {
    this.#config = resolveSqliteStoreConfig(config);
    this.#bounds = resolveBounds(config.bounds);
    this.path = this.#config.path;
    const tables = tablesFor(this.#config.tablePrefix);
    const db = openConnection(this.#config);
    this.#conn = new LockedConnection(db, tables, this.#config.busyTimeoutMs, JOB_SURFACE, `${this.path} (tables ${tables.prefix}*)`);
    this.#reads = Object.freeze({ q: new Statements(db, tables), bounds: this.#bounds });
    this.#callers = new CallerTransactions(db, tables);
    this.capabilities = Object.freeze({
      name: "sqlite",
      transactionalEnqueue: true,
      enqueueThrough: true,
      stepHook: true,
      wakeUpHints: true,
      bounds: this.#bounds,
      historyPolicy: this.#config.historyPolicy,
    });
  }

  static {
    defineOperations<SqliteOperations, Write<never, unknown>>(this, WRITES, (name, op) =>
      function (this: SqliteOperations, request: never) {
        return this.#write(name, op, request);
      });
    defineOperations<SqliteOperations, Read<never, unknown>>(this, READS, (_name, op) =>
      function (this: SqliteOperations, argument: never) {
        return this.#read(op, argument);
      });
    defineOperations<SqliteOperations, Read<never, unknown>>(this, SNAPSHOTS, (_name, op) =>
      function (this: SqliteOperations, argument: never) {
        return this.#snapshot(op, argument);
      });
  }

  /** See `JobStore.setStepHook`: a returned promise parks the write holding the file's write lock. */
  setStepHook(hook: contract.StepHook | null): void {
    this.#hook = hook;
  }

  migrate(): Promise<contract.MigrateResult> {
    return this.#conn.migrate();
  }

  close(): Promise<void> {
    this.#hints.clear();
    return this.#conn.close();
  }

  /**
   * `listener(queue)` is called after this store's own commits that made a job of `queue` due now
   * (enqueue, mint, trigger, release, requeue, a retry or released dependent due now). In-process
   * only and lossy; other processes find the work by polling.
   */
  subscribeHints(listener: contract.HintListener): () => void {
    this.#conn.assertOpen();
    return this.#hints.subscribe(listener);
  }

  // ---- enqueue: on the store's connection, on the caller's (`tx`), or through an executor ----

  /**
   * With `tx` — the caller's own better-sqlite3 `Database` on the same file, with a transaction
   * open — the jobs are written on that connection inside that transaction (under a savepoint)
   * and exist only if it commits. No hints are sent for them: the store cannot see that commit.
   */
  async enqueue(request: contract.EnqueueRequest): Promise<readonly contract.EnqueueResult[]> {
    if (request.tx !== undefined) return (await this.#inCaller(this.#onConnection(request.tx), "enqueue", enqueue, request, keepEnqueue)).result;
    return this.#writeIo("enqueue", enqueue, request);
  }

  async enqueueWorkflow(request: contract.EnqueueWorkflowRequest): Promise<contract.EnqueueWorkflowResult> {
    if (request.tx !== undefined) {
      return (await this.#inCaller(this.#onConnection(request.tx), "enqueueWorkflow", enqueueWorkflow, request, keepWorkflow)).result;
    }
    return this.#writeIo("enqueueWorkflow", enqueueWorkflow, request);
  }

  /**
   * The same SQL as `enqueue`, run by `executor` inside the caller's transaction on this store's
   * file (checked first: `InvalidTransactionError` otherwise), under a savepoint. `afterCommit()`
   * sends the hints to this store's listeners.
   */
  async enqueueThrough(executor: contract.QueryExecutor, request: contract.EnqueueThroughRequest): Promise<contract.EnqueuedThrough<readonly contract.EnqueueResult[]>> {
    return this.#inCaller(await this.#throughExecutor(executor), "enqueue", enqueue, request, keepEnqueue);
  }

  async enqueueWorkflowThrough(executor: contract.QueryExecutor, request: contract.EnqueueWorkflowThroughRequest): Promise<contract.EnqueuedThrough<contract.EnqueueWorkflowResult>> {
    return this.#inCaller(await this.#throughExecutor(executor), "enqueueWorkflow", enqueueWorkflow, request, keepWorkflow);
  }

  // ---- internals -----------------------------------------------------------------------------

  /** Runs a write as one transaction under the store's lock, then sends the hints it noted. */
  #write<R, T>(operation: string, op: Write<R, T>, request: R): Promise<T> {
    return this.#conn.run(async () => {
      const ctx: OpContext = { q: this.#reads.q, bounds: this.#bounds, history: this.#config.historyPolicy, hinted: new Set() };
      const result = await this.#conn.runner.write(operation, this.#hook, () => op(ctx, request));
      this.#hints.announce(ctx.hinted!);
      return result;
    });
  }

  /** {@link #write} for an operation written as `Io`: its queries run on the store's prepared statements. */
  #writeIo<R, T>(operation: string, op: IoWrite<R, T>, request: R): Promise<T> {
    return this.#write(operation, (ctx, r: R) => onStatements(ctx.q, op(ctx, r)), request);
  }

  /** Runs a read of one statement (one statement is one snapshot) under the store's lock. */
  #read<R, T>(op: Read<R, T>, request: R): Promise<T> {
    return this.#conn.run(() => {
      try {
        return op(this.#reads, request);
      } catch (error) {
        throw asStoreError(error);
      }
    });
  }

  /** Runs a read of several statements in one read transaction, so they see one snapshot. */
  #snapshot<R, T>(op: Read<R, T>, request: R): Promise<T> {
    return this.#conn.run(() => this.#conn.runner.read(() => op(this.#reads, request)));
  }

  /**
   * The caller's better-sqlite3 connection, checked, as a synchronous executor: the enqueue then
   * runs on it from savepoint to release without yielding, so nothing else can put a statement
   * inside. Nothing of the store's own connection is involved: it needs neither the lock nor a BEGIN.
   */
  #onConnection(tx: unknown): CallerExecutor {
    this.#conn.assertOpen();
    return this.#callers.onConnection(tx);
  }

  /** `executor` checked to be inside an open transaction on this store's file, to run an enqueue on. */
  #throughExecutor(executor: contract.QueryExecutor): Promise<CallerExecutor> {
    this.#conn.assertOpen();
    return this.#callers.through(executor);
  }

  /** Runs an enqueue inside the caller's transaction; the hints wait for `afterCommit()`. */
  async #inCaller<R, T>(
    executor: CallerExecutor,
    operation: string,
    op: IoWrite<R, T>,
    request: R,
    keep: (result: T) => boolean,
  ): Promise<contract.EnqueuedThrough<T>> {
    this.#conn.assertSchema();
    const ctx: IoContext = { bounds: this.#bounds, history: this.#config.historyPolicy, hinted: new Set() };
    const step = (name: string) => this.#hook?.({ operation, step: name });
    const result = await this.#callers.run(executor, op(ctx, request), keep, step);
    return { result, afterCommit: () => this.#hints.announce(ctx.hinted!) };
  }
}
