import {
  type AuditPage,
  type Bounds,
  type CancelResult,
  type ClaimObserverDeliveriesRequest,
  type ClaimObserverDeliveriesResult,
  type ClaimRequest,
  type ClaimResult,
  type DependencyEdges,
  type EnqueueRequest,
  type EnqueueResult,
  type EnqueueWorkflowRequest,
  type EnqueueWorkflowResult,
  type ExpireLeasesRequest,
  type ExpireLeasesResult,
  type FacetRequest,
  type FacetValue,
  type HeartbeatRequest,
  type HeartbeatResult,
  type HintListener,
  type JobActionRequest,
  type JobCount,
  type JobPage,
  type JobRecord,
  type JobStore,
  type ListAuditRequest,
  type ListJobsRequest,
  type ListWorkflowsRequest,
  type MigrateResult,
  type MintDueRequest,
  type MintResult,
  type ObserverDeadLetter,
  type ObserverStatus,
  type OutcomeResult,
  type PurgeTerminalRequest,
  type PurgeTerminalResult,
  type QueueActionRequest,
  type QueueActionResult,
  type QueueSettings,
  type RegisterObserverRequest,
  type RegisterObserverResult,
  type ReleaseRequest,
  type ReleaseResult,
  type RemoveScheduleResult,
  type ReportObserverDeliveriesRequest,
  type ReportObserverDeliveriesResult,
  type ReportOutcomesRequest,
  type RequeueResult,
  type ScheduleRecord,
  type ScheduleWithPayload,
  type SetConcurrencyLimitRequest,
  type StepHook,
  type StoreCapabilities,
  type SuggestTagsRequest,
  type TagSuggestionPage,
  type TransitionRecord,
  type TriggerScheduleRequest,
  type TriggerScheduleResult,
  type UpsertScheduleRequest,
  type UpsertScheduleResult,
  type WorkflowPage,
  type WorkflowRecord,
  InvalidInputError,
  InvalidTransactionError,
  StoreClosedError,
  assertClaimObserverDeliveriesRequest,
  assertClaimRequest,
  assertExpireLeasesRequest,
  assertHeartbeatRequest,
  assertJobActionRequest,
  assertJobFilter,
  assertListAuditRequest,
  assertListJobsRequest,
  assertMintDueRequest,
  assertPurgeTerminalRequest,
  assertQueueActionRequest,
  assertRegisterObserverRequest,
  assertReleaseRequest,
  assertReportObserverDeliveriesRequest,
  assertReportOutcomesRequest,
  assertScheduleDefinition,
  assertSetConcurrencyLimitRequest,
  assertTriggerScheduleRequest,
  requireArray,
  requireId,
  requireInstant,
  resolveBounds,
} from "@belay/contract";
import {
  type CallerExecutor,
  type EnqueuedThrough,
  type SqliteQueryExecutor,
  callerConnection,
  checkCallerTransaction,
  connectionExecutor,
  runInCallerTransaction,
} from "./caller-transaction.js";
import { type Connection, Statements, asStoreError, mainFileOf, openConnection } from "./connection.js";
import { type Io, SqlTexts, onStatements } from "./io.js";
import { assertSchema, migrate } from "./migrate.js";
import { Mutex } from "./mutex.js";
import { listAuditRecords } from "./sql/audit.js";
import { claim } from "./sql/claim.js";
import { enqueue } from "./sql/enqueue.js";
import { expireLeases } from "./sql/expire-leases.js";
import { heartbeat } from "./sql/heartbeat.js";
import {
  claimObserverDeliveries,
  getObserver,
  listObserverDeadLetters,
  listObservers,
  registerObserver,
  removeObserver,
  reportObserverDeliveries,
} from "./sql/observers.js";
import { cancelJob, changeQueue, listQueueSettings, requeueJob } from "./sql/operator.js";
import { purgeTerminal } from "./sql/purge-terminal.js";
import { countJobs, facetTags, getDependencies, getJob, getJobHistory, getJobOutput, listJobs } from "./sql/reads.js";
import { release } from "./sql/release.js";
import { reportOutcomes } from "./sql/report-outcomes.js";
import { getSchedule, listSchedules, mintDue, removeSchedule, triggerSchedule, upsertSchedule } from "./sql/schedules.js";
import { suggestTags } from "./sql/suggest-tags.js";
import { enqueueWorkflow, getWorkflow, listWorkflows } from "./sql/workflows.js";
import { type ResolvedSqliteStoreConfig, type SqliteStoreConfig, resolveSqliteStoreConfig } from "./sqlite-store-config.js";
import { type Tables, tablesFor } from "./tables.js";
import { type IoContext, type OpContext, type Steps, TransactionRunner } from "./transaction.js";

function requireLimit(value: unknown, field: string): void {
  if (value !== undefined && (typeof value !== "number" || !Number.isSafeInteger(value) || value < 1)) {
    throw new InvalidInputError(field, "must be an integer ≥ 1");
  }
}

/**
 * The Storage Contract on SQLite through better-sqlite3 12: the embedded store. Any number of
 * processes on one host may share the file, each a full node — claims, concurrency limits and
 * lease expiry stay correct across them, because every write is one `BEGIN IMMEDIATE`
 * transaction under the file's single write lock. Never put the file on a network filesystem.
 *
 * Call `migrate()` once before anything else (any process may; concurrent calls are safe): an
 * operation on a file without the schema throws `SchemaNotMigratedError`.
 *
 * @example
 * ```ts
 * import { SqliteStore } from "@belay/sqlite";
 *
 * const store = new SqliteStore({ path: "./belay.db" });
 * await store.migrate();
 * await store.enqueue({
 *   jobs: [{ id: "welcome-42", jobName: "email.welcome", queue: "mail", payload: '{"userId":42}', dueAt: Date.now() }],
 *   now: Date.now(),
 * });
 * ```
 */
export class SqliteStore implements JobStore {
  readonly capabilities: StoreCapabilities;
  /** The database file, as given. */
  readonly path: string;
  readonly #config: ResolvedSqliteStoreConfig;
  readonly #bounds: Readonly<Bounds>;
  readonly #tables: Tables;
  readonly #db: Connection;
  readonly #q: Statements;
  readonly #runner: TransactionRunner;
  readonly #mutex = new Mutex();
  readonly #listeners = new Set<HintListener>();
  readonly #texts: SqlTexts;
  readonly #callerExecutors = new WeakMap<Connection, CallerExecutor>();
  #hook: StepHook | null = null;
  #ownFileCache: string | null | undefined;
  #schemaChecked = false;
  #closed = false;

  constructor(config: SqliteStoreConfig) {
    this.#config = resolveSqliteStoreConfig(config);
    this.#bounds = resolveBounds(config.bounds);
    this.path = this.#config.path;
    this.#tables = tablesFor(this.#config.tablePrefix);
    this.#db = openConnection(this.#config);
    this.#q = new Statements(this.#db, this.#tables);
    this.#texts = new SqlTexts(this.#tables);
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

  /**
   * Test hook: installs (or, with `null`, removes) a function called at each internal step of
   * every write, inside its transaction. Throw from it to prove the write leaves nothing behind;
   * return a promise to park the write — holding the file's write lock — until it settles.
   */
  setStepHook(hook: StepHook | null): void {
    this.#hook = hook;
  }

  async migrate(): Promise<MigrateResult> {
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
    this.#listeners.clear();
    await this.#mutex.run(() => {
      if (this.#db.open) this.#db.close();
    });
  }

  /**
   * Wake-up hints: `listener(queue)` is called after this store's own commits that made a job of
   * `queue` due now (enqueue, mint, trigger, release, requeue, a retry or released dependency
   * due now). In-process only and lossy; other processes find the work by polling.
   */
  subscribeHints(listener: HintListener): () => void {
    this.#assertOpen();
    this.#listeners.add(listener);
    return () => void this.#listeners.delete(listener);
  }

  // ---- enqueue -------------------------------------------------------------------------------

  /**
   * With `tx` — your own better-sqlite3 `Database` on the same file, with a transaction open —
   * the jobs are written on that connection inside your transaction (under a savepoint, so a
   * rejected call leaves it intact) and exist only if it commits. No hints are sent for them.
   */
  async enqueue(request: EnqueueRequest): Promise<readonly EnqueueResult[]> {
    requireArray(request?.jobs, "jobs");
    requireInstant(request.now, "now");
    const body = (ctx: IoContext) => enqueue(ctx, request.jobs, request.now);
    if (request.tx !== undefined) return (await this.#inCallerConnection(request.tx, "enqueue", body, keepEnqueue)).result;
    return this.#write("enqueue", (ctx) => onStatements(ctx.q, body(ctx)));
  }

  async enqueueWorkflow(request: EnqueueWorkflowRequest): Promise<EnqueueWorkflowResult> {
    requireWorkflow(request);
    const body = (ctx: IoContext) => enqueueWorkflow(ctx, request.workflow, request.now);
    if (request.tx !== undefined) return (await this.#inCallerConnection(request.tx, "enqueueWorkflow", body, keepWorkflow)).result;
    return this.#write("enqueueWorkflow", (ctx) => onStatements(ctx.q, body(ctx)));
  }

  /**
   * Enqueues inside a transaction you hold open on the store's file through a driver of your own
   * (Kysely, or any async SQLite driver): `executor` runs the store's statements on that
   * transaction's connection. The same SQL as `enqueue`, under a savepoint, so a rejected call
   * leaves your transaction intact; the jobs exist only if your transaction commits.
   *
   * Throws `InvalidTransactionError` unless `executor` is inside an open transaction on this
   * store's file. Calls on one transaction must not overlap (await each before the next).
   * Wake-up hints wait for you: call `afterCommit()` of the result once your transaction has
   * committed.
   *
   * @example
   * ```ts
   * const { result, afterCommit } = await store.enqueueThrough(
   *   { query: async (sql, values) => (await trx.executeQuery(CompiledQuery.raw(sql, [...values]))).rows },
   *   { jobs: [job], now: Date.now() },
   * );
   * ```
   */
  async enqueueThrough(
    executor: SqliteQueryExecutor,
    request: Omit<EnqueueRequest, "tx">,
  ): Promise<EnqueuedThrough<readonly EnqueueResult[]>> {
    requireArray(request?.jobs, "jobs");
    requireInstant(request.now, "now");
    return this.#through(executor, "enqueue", (ctx) => enqueue(ctx, request.jobs, request.now), keepEnqueue);
  }

  /** {@link enqueueThrough} for a workflow: the workflow and all its members, atomically. */
  async enqueueWorkflowThrough(
    executor: SqliteQueryExecutor,
    request: Omit<EnqueueWorkflowRequest, "tx">,
  ): Promise<EnqueuedThrough<EnqueueWorkflowResult>> {
    requireWorkflow(request);
    return this.#through(executor, "enqueueWorkflow", (ctx) => enqueueWorkflow(ctx, request.workflow, request.now), keepWorkflow);
  }

  // ---- execution -----------------------------------------------------------------------------

  async claim(request: ClaimRequest): Promise<ClaimResult> {
    assertClaimRequest(request, this.#bounds);
    return this.#write("claim", (ctx) => claim(ctx, request));
  }

  async reportOutcomes(request: ReportOutcomesRequest): Promise<readonly OutcomeResult[]> {
    assertReportOutcomesRequest(request, this.#bounds);
    return this.#write("reportOutcomes", (ctx) => reportOutcomes(ctx, request.reports, request.now));
  }

  async heartbeat(request: HeartbeatRequest): Promise<readonly HeartbeatResult[]> {
    assertHeartbeatRequest(request, this.#bounds);
    return this.#write("heartbeat", (ctx) => heartbeat(ctx, request));
  }

  async release(request: ReleaseRequest): Promise<readonly ReleaseResult[]> {
    assertReleaseRequest(request, this.#bounds);
    return this.#write("release", (ctx) => release(ctx, request));
  }

  async expireLeases(request: ExpireLeasesRequest): Promise<ExpireLeasesResult> {
    assertExpireLeasesRequest(request, this.#bounds);
    return { expired: await this.#write("expireLeases", (ctx) => expireLeases(ctx, request)) };
  }

  // ---- schedules -----------------------------------------------------------------------------

  async upsertSchedule(request: UpsertScheduleRequest): Promise<UpsertScheduleResult> {
    assertScheduleDefinition(request?.schedule, this.#bounds);
    requireInstant(request.now, "now");
    return this.#write("upsertSchedule", (ctx) => upsertSchedule(ctx, request.schedule, request.now));
  }

  async removeSchedule(request: { readonly scheduleId: string }): Promise<RemoveScheduleResult> {
    requireId(request?.scheduleId, "scheduleId", this.#bounds);
    return this.#write("removeSchedule", (ctx) => removeSchedule(ctx, request.scheduleId));
  }

  async listSchedules(): Promise<readonly ScheduleRecord[]> {
    return this.#read((q) => listSchedules(q));
  }

  async getSchedule(scheduleId: string): Promise<ScheduleWithPayload | null> {
    if (typeof scheduleId !== "string") return null;
    return this.#read((q) => getSchedule(q, scheduleId));
  }

  async mintDue(request: MintDueRequest): Promise<readonly MintResult[]> {
    assertMintDueRequest(request, this.#bounds);
    return this.#write("mintDue", (ctx) => mintDue(ctx, request.decisions, request.now));
  }

  async triggerSchedule(request: TriggerScheduleRequest): Promise<TriggerScheduleResult> {
    assertTriggerScheduleRequest(request, this.#bounds);
    return this.#write("triggerSchedule", (ctx) => triggerSchedule(ctx, request));
  }

  // ---- operator actions ----------------------------------------------------------------------

  async cancelJob(request: JobActionRequest): Promise<CancelResult> {
    assertJobActionRequest(request, this.#bounds);
    return this.#write("cancelJob", (ctx) => cancelJob(ctx, request));
  }

  async requeueJob(request: JobActionRequest): Promise<RequeueResult> {
    assertJobActionRequest(request, this.#bounds);
    return this.#write("requeueJob", (ctx) => requeueJob(ctx, request));
  }

  async pauseQueue(request: QueueActionRequest): Promise<QueueActionResult> {
    assertQueueActionRequest(request, this.#bounds);
    const audit = { actor: request.actor, action: "pauseQueue" as const, detail: "paused", at: request.now };
    return this.#write("pauseQueue", (ctx) => changeQueue(ctx, request.queue, { paused: true }, audit));
  }

  async resumeQueue(request: QueueActionRequest): Promise<QueueActionResult> {
    assertQueueActionRequest(request, this.#bounds);
    const audit = { actor: request.actor, action: "resumeQueue" as const, detail: "resumed", at: request.now };
    return this.#write("resumeQueue", (ctx) => changeQueue(ctx, request.queue, { paused: false }, audit));
  }

  async setConcurrencyLimit(request: SetConcurrencyLimitRequest): Promise<QueueActionResult> {
    assertSetConcurrencyLimitRequest(request, this.#bounds);
    const detail = request.limit === null ? "limit=none" : `limit=${request.limit}`;
    const audit = { actor: request.actor, action: "setConcurrencyLimit" as const, detail, at: request.now };
    return this.#write("setConcurrencyLimit", (ctx) => changeQueue(ctx, request.queue, { concurrencyLimit: request.limit }, audit));
  }

  async listAuditRecords(request: ListAuditRequest = {}): Promise<AuditPage> {
    assertListAuditRequest(request);
    return this.#read((q) => listAuditRecords(q, this.#bounds, request));
  }

  // ---- monitoring reads ----------------------------------------------------------------------

  async getJob(jobId: string): Promise<JobRecord | null> {
    if (typeof jobId !== "string") return null;
    return this.#read((q) => getJob(q, jobId));
  }

  async getJobOutput(jobId: string): Promise<string | null> {
    if (typeof jobId !== "string") return null;
    return this.#read((q) => getJobOutput(q, jobId));
  }

  async getJobHistory(jobId: string): Promise<readonly TransitionRecord[]> {
    if (typeof jobId !== "string") return [];
    return this.#read((q) => getJobHistory(q, jobId));
  }

  async listJobs(request: ListJobsRequest = {}): Promise<JobPage> {
    assertListJobsRequest(request, this.#bounds);
    return this.#read((q) => listJobs(q, this.#bounds, request));
  }

  async countJobs(): Promise<readonly JobCount[]> {
    return this.#read((q) => countJobs(q));
  }

  async listQueueSettings(): Promise<readonly QueueSettings[]> {
    return this.#read((q) => listQueueSettings(q));
  }

  async getDependencies(jobId: string): Promise<DependencyEdges | null> {
    if (typeof jobId !== "string") return null;
    return this.#read((q) => getDependencies(q, jobId), true);
  }

  async facetTags(request: FacetRequest): Promise<readonly FacetValue[]> {
    if (typeof request?.key !== "string") throw new InvalidInputError("key", "must be a string");
    if (request.scope !== undefined) assertJobFilter(request.scope, "scope", this.#bounds);
    requireLimit(request.max, "max");
    return this.#read((q) => facetTags(q, request));
  }

  async suggestTags(request: SuggestTagsRequest): Promise<TagSuggestionPage> {
    if (typeof request?.prefix !== "string") throw new InvalidInputError("prefix", "must be a string");
    if (request.key !== undefined && typeof request.key !== "string") throw new InvalidInputError("key", "must be a string");
    requireLimit(request.max, "max");
    return this.#read((q) => suggestTags(q, this.#bounds, request), true);
  }

  // ---- workflows -----------------------------------------------------------------------------

  async getWorkflow(workflowId: string): Promise<WorkflowRecord | null> {
    if (typeof workflowId !== "string") return null;
    return this.#read((q) => getWorkflow(q, workflowId), true);
  }

  async listWorkflows(request: ListWorkflowsRequest = {}): Promise<WorkflowPage> {
    requireLimit(request.limit, "limit");
    return this.#read((q) => listWorkflows(q, this.#bounds, request), true);
  }

  // ---- retention -----------------------------------------------------------------------------

  async purgeTerminal(request: PurgeTerminalRequest): Promise<PurgeTerminalResult> {
    assertPurgeTerminalRequest(request);
    return { purged: await this.#write("purgeTerminal", (ctx) => purgeTerminal(ctx, request)) };
  }

  // ---- observers -----------------------------------------------------------------------------

  async registerObserver(request: RegisterObserverRequest): Promise<RegisterObserverResult> {
    assertRegisterObserverRequest(request, this.#bounds);
    return this.#write("registerObserver", (ctx) => registerObserver(ctx, request));
  }

  async removeObserver(request: { readonly observerId: string }): Promise<{ readonly status: "removed" | "notFound" }> {
    requireId(request?.observerId, "observerId", this.#bounds);
    return this.#write("removeObserver", (ctx) => removeObserver(ctx, request.observerId));
  }

  async claimObserverDeliveries(request: ClaimObserverDeliveriesRequest): Promise<ClaimObserverDeliveriesResult> {
    assertClaimObserverDeliveriesRequest(request, this.#bounds);
    return this.#write("claimObserverDeliveries", (ctx) => claimObserverDeliveries(ctx, request));
  }

  async reportObserverDeliveries(request: ReportObserverDeliveriesRequest): Promise<ReportObserverDeliveriesResult> {
    assertReportObserverDeliveriesRequest(request, this.#bounds);
    return this.#write("reportObserverDeliveries", (ctx) => reportObserverDeliveries(ctx, request));
  }

  async getObserver(observerId: string): Promise<ObserverStatus | null> {
    if (typeof observerId !== "string") return null;
    return this.#read((q) => getObserver(q, observerId), true);
  }

  async listObservers(): Promise<readonly ObserverStatus[]> {
    return this.#read((q) => listObservers(q), true);
  }

  async listObserverDeadLetters(observerId: string): Promise<readonly ObserverDeadLetter[]> {
    if (typeof observerId !== "string") return [];
    return this.#read((q) => listObserverDeadLetters(q, observerId));
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

  #context(q: Statements, hinted: Set<string> | null): OpContext {
    return { q, bounds: this.#bounds, history: this.#config.historyPolicy, hinted };
  }

  /** Runs a write as one transaction under the store's lock, then sends the hints it noted. */
  async #write<T>(operation: string, body: (ctx: OpContext) => Steps<T>): Promise<T> {
    this.#assertOpen();
    return this.#mutex.run(async () => {
      this.#assertConnected();
      this.#assertSchema();
      const ctx = this.#context(this.#q, new Set());
      const result = await this.#runner.write(operation, this.#hook, () => body(ctx));
      this.#announce(ctx.hinted!);
      return result;
    });
  }

  /** Tells the hint listeners about `queues`; call only after the work committed. */
  #announce(queues: Iterable<string>): void {
    for (const queue of queues) {
      for (const listener of [...this.#listeners]) {
        try {
          listener(queue);
        } catch {
          // A listener's failure is its own; hints are advisory and the write has committed.
        }
      }
    }
  }

  /** Runs a read under the store's lock; `snapshot` wraps several statements in one read transaction. */
  async #read<T>(body: (q: Statements) => T, snapshot = false): Promise<T> {
    this.#assertOpen();
    return this.#mutex.run(() => {
      this.#assertConnected();
      this.#assertSchema();
      if (snapshot) return this.#runner.read(() => body(this.#q));
      try {
        return body(this.#q);
      } catch (error) {
        throw asStoreError(error);
      }
    });
  }

  #ownFile(): string | null {
    if (this.#ownFileCache === undefined) this.#ownFileCache = mainFileOf(this.#db);
    return this.#ownFileCache;
  }

  /**
   * Runs an enqueue on the caller's better-sqlite3 connection inside the caller's transaction:
   * the same path as {@link enqueueThrough}, with an executor that answers synchronously.
   * Nothing of the store's own connection is involved, so it needs neither the lock nor a BEGIN.
   */
  async #inCallerConnection<T>(
    tx: unknown,
    operation: string,
    body: (ctx: IoContext) => Io<T>,
    keep: (result: T) => boolean,
  ): Promise<EnqueuedThrough<T>> {
    this.#assertOpen();
    const db = callerConnection(tx, this.#db, this.#ownFile());
    let executor = this.#callerExecutors.get(db);
    if (executor === undefined) {
      executor = connectionExecutor(db);
      this.#callerExecutors.set(db, executor);
    }
    return this.#inCallerTransaction(executor, operation, body, keep);
  }

  /** Checks `executor` is inside an open transaction on this store's file, then runs the enqueue there. */
  async #through<T>(
    executor: SqliteQueryExecutor,
    operation: string,
    body: (ctx: IoContext) => Io<T>,
    keep: (result: T) => boolean,
  ): Promise<EnqueuedThrough<T>> {
    this.#assertOpen();
    if (typeof executor?.query !== "function") {
      throw new InvalidTransactionError("expected an executor with query(sql, values) running in your transaction");
    }
    await checkCallerTransaction(executor, this.#ownFile());
    return this.#inCallerTransaction(executor, operation, body, keep);
  }

  async #inCallerTransaction<T>(
    executor: CallerExecutor,
    operation: string,
    body: (ctx: IoContext) => Io<T>,
    keep: (result: T) => boolean,
  ): Promise<EnqueuedThrough<T>> {
    this.#assertSchema();
    const ctx: IoContext = { bounds: this.#bounds, history: this.#config.historyPolicy, hinted: new Set() };
    const result = await runInCallerTransaction(executor, this.#texts, body(ctx), keep, (step) => this.#hook?.({ operation, step }));
    return { result, afterCommit: () => this.#announce(ctx.hinted!) };
  }
}

const keepEnqueue = (results: readonly EnqueueResult[]): boolean => !results.some((r) => r.status === "rejected");
const keepWorkflow = (result: EnqueueWorkflowResult): boolean => result.status === "created";

function requireWorkflow(request: Omit<EnqueueWorkflowRequest, "tx">): void {
  if (typeof request?.workflow !== "object" || request.workflow === null) throw new InvalidInputError("workflow", "must be an object");
  requireInstant(request.now, "now");
}
