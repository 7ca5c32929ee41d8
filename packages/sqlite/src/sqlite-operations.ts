import type * as contract from "@belay/contract";
import { Mutex, StoreClosedError, resolveBounds } from "@belay/contract";
import { type CallerExecutor, CallerTransactions } from "./caller-transaction.js";
import { type Connection, Statements, asStoreError, openConnection } from "./connection.js";
import { Hints } from "./hints.js";
import { type Io, onStatements } from "./io.js";
import { assertSchema, migrate } from "./migrate.js";
import { listAuditRecords } from "./sql/audit.js";
import { claim } from "./sql/claim.js";
import { enqueue } from "./sql/enqueue.js";
import { expireLeases, heartbeat, release } from "./sql/leases.js";
import { acquireMaintainerLease, releaseMaintainerLease } from "./sql/maintainer.js";
import * as observers from "./sql/observers.js";
import * as operator from "./sql/operator.js";
import { reportOutcomes } from "./sql/outcomes.js";
import { countJobs, getDependencies, getJob, getJobHistory, getJobOutput, listJobs } from "./sql/reads.js";
import { purgeTerminal } from "./sql/retention.js";
import * as schedules from "./sql/schedules.js";
import { facetTags, suggestTags } from "./sql/tags.js";
import { enqueueWorkflow, getWorkflow, listWorkflows } from "./sql/workflows.js";
import { type ResolvedSqliteStoreConfig, type SqliteStoreConfig, resolveSqliteStoreConfig } from "./sqlite-store-config.js";
import { type Tables, tablesFor } from "./tables.js";
import { type IoContext, type OpContext, type ReadContext, type Steps, TransactionRunner } from "./transaction.js";

type Write<R, T> = (ctx: OpContext, request: R) => Steps<T>;
type IoWrite<R, T> = (ctx: IoContext, request: R) => Io<T>;
type Read<R, T> = (ctx: ReadContext, request: R) => T;

const keepEnqueue = (results: readonly contract.EnqueueResult[]): boolean => !results.some((r) => r.status === "rejected");
const keepWorkflow = (result: contract.EnqueueWorkflowResult): boolean => result.status === "created";

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
  readonly #tables: Tables;
  readonly #db: Connection;
  readonly #reads: ReadContext;
  readonly #runner: TransactionRunner;
  // better-sqlite3 is synchronous, but the step hook may park a write inside its transaction:
  // the lock keeps every other operation of the instance off the connection until it ends.
  readonly #mutex = new Mutex();
  readonly #hints = new Hints();
  readonly #callers: CallerTransactions;
  #hook: contract.StepHook | null = null;
  #schemaChecked = false;
  #closed = false;

  constructor(config: SqliteStoreConfig) {
    this.#config = resolveSqliteStoreConfig(config);
    this.#bounds = resolveBounds(config.bounds);
    this.path = this.#config.path;
    this.#tables = tablesFor(this.#config.tablePrefix);
    this.#db = openConnection(this.#config);
    this.#reads = Object.freeze({ q: new Statements(this.#db, this.#tables), bounds: this.#bounds });
    this.#callers = new CallerTransactions(this.#db, this.#tables);
    this.#runner = new TransactionRunner(this.#db, this.#config.busyTimeoutMs);
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

  /** See `JobStore.setStepHook`: a returned promise parks the write holding the file's write lock. */
  setStepHook(hook: contract.StepHook | null): void {
    this.#hook = hook;
  }

  async migrate(): Promise<contract.MigrateResult> {
    this.#assertOpen();
    return this.#mutex.run(async () => {
      this.#assertConnected();
      const result = await migrate(this.#db, this.#runner, this.#tables);
      this.#schemaChecked = true;
      return result;
    });
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#hints.clear();
    await this.#mutex.run(() => {
      if (this.#db.open) this.#db.close();
    });
  }

  /**
   * `listener(queue)` is called after this store's own commits that made a job of `queue` due now
   * (enqueue, mint, trigger, release, requeue, a retry or released dependent due now). In-process
   * only and lossy; other processes find the work by polling.
   */
  subscribeHints(listener: contract.HintListener): () => void {
    this.#assertOpen();
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
  enqueueThrough(executor: contract.QueryExecutor, request: contract.EnqueueThroughRequest): Promise<contract.EnqueuedThrough<readonly contract.EnqueueResult[]>> {
    return this.#through(executor, "enqueue", enqueue, request, keepEnqueue);
  }

  enqueueWorkflowThrough(executor: contract.QueryExecutor, request: contract.EnqueueWorkflowThroughRequest): Promise<contract.EnqueuedThrough<contract.EnqueueWorkflowResult>> {
    return this.#through(executor, "enqueueWorkflow", enqueueWorkflow, request, keepWorkflow);
  }

  // ---- execution -----------------------------------------------------------------------------

  claim(request: contract.ClaimRequest): Promise<contract.ClaimResult> {
    return this.#write("claim", claim, request);
  }

  reportOutcomes(request: contract.ReportOutcomesRequest): Promise<readonly contract.OutcomeResult[]> {
    return this.#write("reportOutcomes", reportOutcomes, request);
  }

  heartbeat(request: contract.HeartbeatRequest): Promise<readonly contract.HeartbeatResult[]> {
    return this.#write("heartbeat", heartbeat, request);
  }

  release(request: contract.ReleaseRequest): Promise<readonly contract.ReleaseResult[]> {
    return this.#write("release", release, request);
  }

  expireLeases(request: contract.ExpireLeasesRequest): Promise<contract.ExpireLeasesResult> {
    return this.#write("expireLeases", expireLeases, request);
  }

  // ---- schedules -----------------------------------------------------------------------------

  upsertSchedule(request: contract.UpsertScheduleRequest): Promise<contract.UpsertScheduleResult> {
    return this.#write("upsertSchedule", schedules.upsertSchedule, request);
  }

  removeSchedule(request: { readonly scheduleId: string }): Promise<contract.RemoveScheduleResult> {
    return this.#write("removeSchedule", schedules.removeSchedule, request);
  }

  listSchedules(): Promise<readonly contract.ScheduleRecord[]> {
    return this.#read(schedules.listSchedules);
  }

  getSchedule(scheduleId: string): Promise<contract.ScheduleWithPayload | null> {
    return this.#read(schedules.getSchedule, scheduleId);
  }

  mintDue(request: contract.MintDueRequest): Promise<readonly contract.MintResult[]> {
    return this.#write("mintDue", schedules.mintDue, request);
  }

  triggerSchedule(request: contract.TriggerScheduleRequest): Promise<contract.TriggerScheduleResult> {
    return this.#write("triggerSchedule", schedules.triggerSchedule, request);
  }

  // ---- operator actions ----------------------------------------------------------------------

  cancelJob(request: contract.JobActionRequest): Promise<contract.CancelResult> {
    return this.#write("cancelJob", operator.cancelJob, request);
  }

  requeueJob(request: contract.JobActionRequest): Promise<contract.RequeueResult> {
    return this.#write("requeueJob", operator.requeueJob, request);
  }

  pauseQueue(request: contract.QueueActionRequest): Promise<contract.QueueActionResult> {
    return this.#write("pauseQueue", operator.pauseQueue, request);
  }

  resumeQueue(request: contract.QueueActionRequest): Promise<contract.QueueActionResult> {
    return this.#write("resumeQueue", operator.resumeQueue, request);
  }

  setConcurrencyLimit(request: contract.SetConcurrencyLimitRequest): Promise<contract.QueueActionResult> {
    return this.#write("setConcurrencyLimit", operator.setConcurrencyLimit, request);
  }

  listAuditRecords(request: contract.ListAuditRequest): Promise<contract.AuditPage> {
    return this.#read(listAuditRecords, request);
  }

  // ---- monitoring reads ----------------------------------------------------------------------

  getJob(jobId: string): Promise<contract.JobRecord | null> {
    return this.#read(getJob, jobId);
  }

  getJobOutput(jobId: string): Promise<string | null> {
    return this.#read(getJobOutput, jobId);
  }

  getJobHistory(jobId: string): Promise<readonly contract.TransitionRecord[]> {
    return this.#read(getJobHistory, jobId);
  }

  listJobs(request: contract.ListJobsRequest): Promise<contract.JobPage> {
    return this.#read(listJobs, request);
  }

  countJobs(): Promise<readonly contract.JobCount[]> {
    return this.#read(countJobs);
  }

  listQueueSettings(): Promise<readonly contract.QueueSettings[]> {
    return this.#read(operator.listQueueSettings);
  }

  getDependencies(jobId: string): Promise<contract.DependencyEdges | null> {
    return this.#snapshot(getDependencies, jobId);
  }

  facetTags(request: contract.FacetRequest): Promise<readonly contract.FacetValue[]> {
    return this.#read(facetTags, request);
  }

  suggestTags(request: contract.SuggestTagsRequest): Promise<contract.TagSuggestionPage> {
    return this.#snapshot(suggestTags, request);
  }

  // ---- workflows -----------------------------------------------------------------------------

  getWorkflow(workflowId: string): Promise<contract.WorkflowRecord | null> {
    return this.#snapshot(getWorkflow, workflowId);
  }

  listWorkflows(request: contract.ListWorkflowsRequest): Promise<contract.WorkflowPage> {
    return this.#snapshot(listWorkflows, request);
  }

  // ---- retention -----------------------------------------------------------------------------

  purgeTerminal(request: contract.PurgeTerminalRequest): Promise<contract.PurgeTerminalResult> {
    return this.#write("purgeTerminal", purgeTerminal, request);
  }

  // ---- the maintainer lease ----------------------------------------------------------------------

  acquireMaintainerLease(request: contract.AcquireMaintainerLeaseRequest): Promise<contract.AcquireMaintainerLeaseResult> {
    return this.#write("acquireMaintainerLease", acquireMaintainerLease, request);
  }

  releaseMaintainerLease(request: contract.ReleaseMaintainerLeaseRequest): Promise<contract.ReleaseMaintainerLeaseResult> {
    return this.#write("releaseMaintainerLease", releaseMaintainerLease, request);
  }

  // ---- observers -----------------------------------------------------------------------------

  registerObserver(request: contract.RegisterObserverRequest): Promise<contract.RegisterObserverResult> {
    return this.#write("registerObserver", observers.registerObserver, request);
  }

  removeObserver(request: { readonly observerId: string }): Promise<{ readonly status: "removed" | "notFound" }> {
    return this.#write("removeObserver", observers.removeObserver, request);
  }

  claimObserverDeliveries(request: contract.ClaimObserverDeliveriesRequest): Promise<contract.ClaimObserverDeliveriesResult> {
    return this.#write("claimObserverDeliveries", observers.claimObserverDeliveries, request);
  }

  reportObserverDeliveries(request: contract.ReportObserverDeliveriesRequest): Promise<contract.ReportObserverDeliveriesResult> {
    return this.#write("reportObserverDeliveries", observers.reportObserverDeliveries, request);
  }

  getObserver(observerId: string): Promise<contract.ObserverStatus | null> {
    return this.#snapshot(observers.getObserver, observerId);
  }

  listObservers(): Promise<readonly contract.ObserverStatus[]> {
    return this.#snapshot(observers.listObservers);
  }

  listObserverDeadLetters(observerId: string): Promise<readonly contract.ObserverDeadLetter[]> {
    return this.#read(observers.listObserverDeadLetters, observerId);
  }

  // ---- internals -----------------------------------------------------------------------------

  #assertOpen(): void {
    if (this.#closed) throw new StoreClosedError();
  }

  /** Inside the lock: the connection is still open (a close queued behind earlier work closes it). */
  #assertConnected(): void {
    if (!this.#db.open) throw new StoreClosedError();
  }

  #assertSchema(): void {
    if (this.#schemaChecked) return;
    assertSchema(this.#db, this.#tables, `${this.path} (tables ${this.#tables.prefix}*)`);
    this.#schemaChecked = true;
  }

  /** Runs a write as one transaction under the store's lock, then sends the hints it noted. */
  async #write<R, T>(operation: string, op: Write<R, T>, request: R): Promise<T> {
    this.#assertOpen();
    return this.#mutex.run(async () => {
      this.#assertConnected();
      this.#assertSchema();
      const ctx: OpContext = { q: this.#reads.q, bounds: this.#bounds, history: this.#config.historyPolicy, hinted: new Set() };
      const result = await this.#runner.write(operation, this.#hook, () => op(ctx, request));
      this.#hints.announce(ctx.hinted!);
      return result;
    });
  }

  /** {@link #write} for an operation written as `Io`: its queries run on the store's prepared statements. */
  #writeIo<R, T>(operation: string, op: IoWrite<R, T>, request: R): Promise<T> {
    return this.#write(operation, (ctx, r: R) => onStatements(ctx.q, op(ctx, r)), request);
  }

  /** Runs a read of one statement (one statement is one snapshot) under the store's lock. */
  async #read<R, T>(op: Read<R, T>, request?: R): Promise<T> {
    this.#assertOpen();
    return this.#mutex.run(() => {
      this.#assertConnected();
      this.#assertSchema();
      try {
        return op(this.#reads, request as R);
      } catch (error) {
        throw asStoreError(error);
      }
    });
  }

  /** Runs a read of several statements in one read transaction, so they see one snapshot. */
  async #snapshot<R, T>(op: Read<R, T>, request?: R): Promise<T> {
    this.#assertOpen();
    return this.#mutex.run(() => {
      this.#assertConnected();
      this.#assertSchema();
      return this.#runner.read(() => op(this.#reads, request as R));
    });
  }

  /**
   * The caller's better-sqlite3 connection, checked, as a synchronous executor: the enqueue then
   * runs on it from savepoint to release without yielding, so nothing else can put a statement
   * inside. Nothing of the store's own connection is involved: it needs neither the lock nor a BEGIN.
   */
  #onConnection(tx: unknown): CallerExecutor {
    this.#assertOpen();
    return this.#callers.onConnection(tx);
  }

  /** Checks `executor` is inside an open transaction on this store's file, then runs the enqueue there. */
  async #through<R, T>(
    executor: contract.QueryExecutor,
    operation: string,
    op: IoWrite<R, T>,
    request: R,
    keep: (result: T) => boolean,
  ): Promise<contract.EnqueuedThrough<T>> {
    this.#assertOpen();
    return this.#inCaller(await this.#callers.through(executor), operation, op, request, keep);
  }

  /** Runs an enqueue inside the caller's transaction; the hints wait for `afterCommit()`. */
  async #inCaller<R, T>(
    executor: CallerExecutor,
    operation: string,
    op: IoWrite<R, T>,
    request: R,
    keep: (result: T) => boolean,
  ): Promise<contract.EnqueuedThrough<T>> {
    this.#assertSchema();
    const ctx: IoContext = { bounds: this.#bounds, history: this.#config.historyPolicy, hinted: new Set() };
    const step = (name: string) => this.#hook?.({ operation, step: name });
    const result = await this.#callers.run(executor, op(ctx, request), keep, step);
    return { result, afterCommit: () => this.#hints.announce(ctx.hinted!) };
  }
}
