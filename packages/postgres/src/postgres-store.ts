import {
  type AuditPage,
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
  validateNewJob,
} from "@belay/contract";
import { CallerTransactionCheck, type EnqueuedThrough } from "./caller-transaction.js";
import { type CheckedJob, EnqueueCoalescer } from "./enqueue-coalescer.js";
import type { StoreContext } from "./context.js";
import { HintPublisher, HintSubscription, hintChannel } from "./hints.js";
import { checkSchema, migrateSchema } from "./migrate.js";
import type { PostgresPool } from "./pool.js";
import { OwnedPool, type PostgresStoreConfig, type ResolvedPostgresStoreConfig, resolvePostgresStoreConfig } from "./postgres-store-config.js";
import { type CheckedExecutor, Executor, type PostgresQueryExecutor, SqlCache, clientExecutor } from "./session.js";
import { claim } from "./sql/claim.js";
import { enqueue } from "./sql/enqueue.js";
import { expireLeases, heartbeat, release } from "./sql/leases.js";
import { listAuditRecords } from "./sql/audit.js";
import { cancelJob, changeQueue, listQueueSettings, requeueJob } from "./sql/operator.js";
import {
  claimObserverDeliveries,
  listObserverDeadLetters,
  observerStatuses,
  registerObserver,
  removeObserver,
  reportObserverDeliveries,
} from "./sql/observers.js";
import { reportOutcomes } from "./sql/outcomes.js";
import { countJobs, getDependencies, getJob, getJobHistory, getJobOutput, listJobs } from "./sql/reads.js";
import { purgeTerminal } from "./sql/retention.js";
import { getSchedule, listSchedules, mintDue, removeSchedule, triggerSchedule, upsertSchedule } from "./sql/schedules.js";
import { facetTags, suggestTags } from "./sql/tags.js";
import { enqueueWorkflow, getWorkflow, listWorkflows } from "./sql/workflows.js";

/**
 * The Belay store on PostgreSQL. Any number of worker processes on any number of hosts share
 * one database: claims take due jobs with `FOR UPDATE SKIP LOCKED`, every worker write is
 * fenced in the statement that makes it, and each operation commits all its rows together.
 * Enqueue, claim, outcome and heartbeat batches are one statement each (prepared, fed by
 * arrays). `enqueue({ tx })` runs inside your own `pg` transaction.
 *
 * @example
 * ```ts
 * import pg from "pg";
 * import { PostgresStore } from "@belay/postgres";
 *
 * const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL });
 * const store = new PostgresStore({ pool });
 * await store.migrate();
 * await store.enqueue({
 *   jobs: [{ id: "j1", jobName: "email.send", queue: "default", payload: "{}", dueAt: Date.now() }],
 *   now: Date.now(),
 * });
 * ```
 */
export class PostgresStore implements JobStore {
  readonly capabilities: StoreCapabilities;
  readonly #config: ResolvedPostgresStoreConfig;
  readonly #pool: PostgresPool;
  readonly #ownsPool: boolean;
  readonly #executor: Executor;
  /** Runs schema checks and migrations: never through the test hook, which sees only operations. */
  readonly #metaExecutor: Executor;
  readonly #ctx: StoreContext;
  readonly #publisher: HintPublisher | null;
  readonly #subscription: HintSubscription | null;
  readonly #limitedQueues = new Set<string>();
  readonly #callerCheck: CallerTransactionCheck;
  readonly #coalescer: EnqueueCoalescer;
  readonly #accepted = new Set<Promise<readonly EnqueueResult[]>>();
  #hook: StepHook | null = null;
  #ready: Promise<void> | null = null;
  #closed = false;

  constructor(config: PostgresStoreConfig) {
    this.#config = resolvePostgresStoreConfig(config);
    const bounds = resolveBounds(config.bounds);
    this.#ownsPool = config.pool === undefined;
    this.#pool = config.pool ?? new OwnedPool(config.connectionString!, config.maxConnections ?? 10);
    this.#executor = new Executor(this.#pool, () => this.#hook);
    this.#metaExecutor = new Executor(this.#pool, () => null);
    this.#callerCheck = new CallerTransactionCheck(this.#metaExecutor, this.#config.schema, this.#config.schemaName);
    const channel = this.#config.hints ? hintChannel(this.#config.schemaName) : null;
    this.#subscription = channel === null ? null : new HintSubscription(config.listenClient ?? (() => this.#pool.connect()), channel);
    const listening = this.#subscription;
    this.#publisher = channel === null ? null : new HintPublisher(this.#pool, channel, () => listening?.client ?? null);
    const { historyPolicy } = this.#config;
    this.#ctx = {
      executor: this.#executor,
      sql: new SqlCache(this.#config.schema),
      bounds,
      history: historyPolicy !== "off",
      detail: historyPolicy === "transitionsAndFailureDetail",
      channel,
      hint: (queues) => {
        this.#subscription?.deliver(queues);
        this.#publisher?.publish(queues);
      },
    };
    this.#coalescer = new EnqueueCoalescer((r, checked) => enqueue(this.#ctx, r, undefined, checked), config.enqueueConcurrency ?? 2, bounds.enqueueBatch);
    if (this.#subscription !== null) {
      const subscription = this.#subscription;
      this.subscribeHints = (listener: HintListener) => subscription.subscribe(listener);
    }
    this.capabilities = Object.freeze({
      name: "postgres",
      transactionalEnqueue: true,
      enqueueThrough: true,
      stepHook: true,
      wakeUpHints: this.#config.hints,
      bounds,
      historyPolicy,
    });
  }

  /** The schema this store works in. */
  get schema(): string {
    return this.#config.schemaName;
  }

  /**
   * Wake-up hints (present when `hints` is on): one LISTEN connection per store, reconnecting
   * on its own. Returns the unsubscribe function.
   */
  subscribeHints?: (listener: HintListener) => () => void;

  /** Whether the LISTEN connection is open right now (for health checks and tests). */
  get listening(): boolean {
    return this.#subscription?.connected ?? false;
  }

  /**
   * Test hook: called at each named step between two statements of an operation, inside its
   * transaction (every operation runs in one while a hook is installed). Throwing rolls the
   * whole operation back; returning a promise parks it, holding its transaction and locks.
   */
  setStepHook(hook: StepHook | null): void {
    this.#hook = hook;
  }

  async migrate(): Promise<MigrateResult> {
    this.#assertOpen();
    const result = await migrateSchema(this.#metaExecutor, this.#config.schema, this.#config.schemaName);
    this.#ready = Promise.resolve();
    return result;
  }

  /** Waits for hints in flight, closes the LISTEN connection and, if the store made its pool, ends it. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    // Enqueue calls already accepted finish first (some may be waiting to share a statement).
    await Promise.allSettled([...this.#accepted]);
    await this.#coalescer.idle();
    await this.#publisher?.drain();
    await this.#subscription?.close();
    if (this.#ownsPool) await this.#pool.end();
  }

  // ---- enqueue -------------------------------------------------------------------------------

  /**
   * With `tx` — your `pg` client, on which you ran `BEGIN` — the jobs are written inside your
   * transaction (under a savepoint, so a rejected call leaves it intact) and exist only if it
   * commits; their hints ride it as `NOTIFY`. Refused with `InvalidTransactionError` when the
   * client has no open transaction or is not on this store's database and schema.
   */
  async enqueue(request: EnqueueRequest): Promise<readonly EnqueueResult[]> {
    requireArray(request?.jobs, "jobs");
    requireInstant(request.now, "now");
    this.#assertOpen();
    // Tracked from here: close() lets every accepted call finish before it ends the pool.
    const call = this.#enqueue(request);
    this.#accepted.add(call);
    try {
      return await call;
    } finally {
      this.#accepted.delete(call);
    }
  }

  async #enqueue(request: EnqueueRequest): Promise<readonly EnqueueResult[]> {
    await this.#open();
    if (request.tx !== undefined) return enqueue(this.#ctx, request, await this.#caller(clientExecutor(request.tx), "enqueue"));
    const shared = this.#hook === null ? this.#shareable(request.jobs) : null;
    if (shared !== null) return this.#coalescer.enqueue(request, shared);
    return enqueue(this.#ctx, request);
  }

  async enqueueWorkflow(request: EnqueueWorkflowRequest): Promise<EnqueueWorkflowResult> {
    requireWorkflow(request);
    await this.#open();
    if (request.tx === undefined) return enqueueWorkflow(this.#ctx, request);
    return enqueueWorkflow(this.#ctx, request, await this.#caller(clientExecutor(request.tx), "enqueueWorkflow"));
  }

  /**
   * Enqueues inside a transaction you hold open on the store's database through a driver of your
   * own (Kysely, or anything that runs SQL with `$n` parameters): `executor` runs the store's
   * statements on that transaction's connection. The same SQL as `enqueue({ tx })`, under a
   * savepoint, so a rejected call leaves your transaction intact; the jobs exist only if your
   * transaction commits, and their wake-up hints ride it as `NOTIFY` (heard at its commit, never
   * before, never after a rollback).
   *
   * Throws `InvalidTransactionError` unless `executor` is inside an open transaction on this
   * store's server, database and schema. Calls on one transaction must not overlap.
   *
   * @example
   * ```ts
   * const { result } = await store.enqueueThrough(
   *   { query: async (sql, values) => (await trx.executeQuery(CompiledQuery.raw(sql, [...values]))).rows },
   *   { jobs: [job], now: Date.now() },
   * );
   * ```
   */
  async enqueueThrough(
    executor: PostgresQueryExecutor,
    request: Omit<EnqueueRequest, "tx">,
  ): Promise<EnqueuedThrough<readonly EnqueueResult[]>> {
    requireArray(request?.jobs, "jobs");
    requireInstant(request.now, "now");
    await this.#open();
    return { result: await enqueue(this.#ctx, request, await this.#caller(executor, "enqueue")), afterCommit: noHintsLeft };
  }

  /** {@link enqueueThrough} for a workflow: the workflow and all its members, atomically. */
  async enqueueWorkflowThrough(
    executor: PostgresQueryExecutor,
    request: Omit<EnqueueWorkflowRequest, "tx">,
  ): Promise<EnqueuedThrough<EnqueueWorkflowResult>> {
    requireWorkflow(request);
    await this.#open();
    return {
      result: await enqueueWorkflow(this.#ctx, request, await this.#caller(executor, "enqueueWorkflow")),
      afterCommit: noHintsLeft,
    };
  }

  // ---- execution -----------------------------------------------------------------------------

  async claim(request: ClaimRequest): Promise<ClaimResult> {
    assertClaimRequest(request, this.#ctx.bounds);
    await this.#open();
    return claim(this.#ctx, request, this.#config.schemaName, this.#limitedQueues);
  }

  async reportOutcomes(request: ReportOutcomesRequest): Promise<readonly OutcomeResult[]> {
    assertReportOutcomesRequest(request, this.#ctx.bounds);
    await this.#open();
    return reportOutcomes(this.#ctx, request);
  }

  async heartbeat(request: HeartbeatRequest): Promise<readonly HeartbeatResult[]> {
    assertHeartbeatRequest(request, this.#ctx.bounds);
    await this.#open();
    return heartbeat(this.#ctx, request);
  }

  async release(request: ReleaseRequest): Promise<readonly ReleaseResult[]> {
    assertReleaseRequest(request, this.#ctx.bounds);
    await this.#open();
    return release(this.#ctx, request);
  }

  async expireLeases(request: ExpireLeasesRequest): Promise<ExpireLeasesResult> {
    assertExpireLeasesRequest(request, this.#ctx.bounds);
    await this.#open();
    return expireLeases(this.#ctx, request);
  }

  // ---- schedules -----------------------------------------------------------------------------

  async upsertSchedule(request: UpsertScheduleRequest): Promise<UpsertScheduleResult> {
    assertScheduleDefinition(request?.schedule, this.#ctx.bounds);
    requireInstant(request.now, "now");
    await this.#open();
    return upsertSchedule(this.#ctx, request);
  }

  async removeSchedule(request: { readonly scheduleId: string }): Promise<RemoveScheduleResult> {
    requireId(request?.scheduleId, "scheduleId", this.#ctx.bounds);
    await this.#open();
    return { status: await removeSchedule(this.#ctx, request.scheduleId) };
  }

  async listSchedules(): Promise<readonly ScheduleRecord[]> {
    await this.#open();
    return listSchedules(this.#ctx);
  }

  async getSchedule(scheduleId: string): Promise<ScheduleWithPayload | null> {
    await this.#open();
    return getSchedule(this.#ctx, scheduleId);
  }

  async mintDue(request: MintDueRequest): Promise<readonly MintResult[]> {
    assertMintDueRequest(request, this.#ctx.bounds);
    await this.#open();
    return mintDue(this.#ctx, request);
  }

  async triggerSchedule(request: TriggerScheduleRequest): Promise<TriggerScheduleResult> {
    assertTriggerScheduleRequest(request, this.#ctx.bounds);
    await this.#open();
    return triggerSchedule(this.#ctx, request);
  }

  // ---- operator actions ----------------------------------------------------------------------

  async cancelJob(request: JobActionRequest): Promise<CancelResult> {
    assertJobActionRequest(request, this.#ctx.bounds);
    await this.#open();
    return cancelJob(this.#ctx, request);
  }

  async requeueJob(request: JobActionRequest): Promise<RequeueResult> {
    assertJobActionRequest(request, this.#ctx.bounds);
    await this.#open();
    return requeueJob(this.#ctx, request);
  }

  async pauseQueue(request: QueueActionRequest): Promise<QueueActionResult> {
    assertQueueActionRequest(request, this.#ctx.bounds);
    await this.#open();
    await changeQueue(this.#ctx, "pauseQueue", request, { paused: true }, "paused");
    return { status: "applied" };
  }

  async resumeQueue(request: QueueActionRequest): Promise<QueueActionResult> {
    assertQueueActionRequest(request, this.#ctx.bounds);
    await this.#open();
    await changeQueue(this.#ctx, "resumeQueue", request, { paused: false }, "resumed");
    return { status: "applied" };
  }

  async setConcurrencyLimit(request: SetConcurrencyLimitRequest): Promise<QueueActionResult> {
    assertSetConcurrencyLimitRequest(request, this.#ctx.bounds);
    await this.#open();
    const detail = request.limit === null ? "limit=none" : `limit=${request.limit}`;
    await changeQueue(this.#ctx, "setConcurrencyLimit", request, { limit: request.limit }, detail);
    return { status: "applied" };
  }

  async listAuditRecords(request: ListAuditRequest = {}): Promise<AuditPage> {
    assertListAuditRequest(request);
    await this.#open();
    return listAuditRecords(this.#ctx, request);
  }

  // ---- monitoring reads ----------------------------------------------------------------------

  async getJob(jobId: string): Promise<JobRecord | null> {
    await this.#open();
    return getJob(this.#ctx, jobId);
  }

  async getJobOutput(jobId: string): Promise<string | null> {
    await this.#open();
    return getJobOutput(this.#ctx, jobId);
  }

  async getJobHistory(jobId: string): Promise<readonly TransitionRecord[]> {
    await this.#open();
    return getJobHistory(this.#ctx, jobId);
  }

  async listJobs(request: ListJobsRequest = {}): Promise<JobPage> {
    assertListJobsRequest(request, this.#ctx.bounds);
    await this.#open();
    return listJobs(this.#ctx, request);
  }

  async countJobs(): Promise<readonly JobCount[]> {
    await this.#open();
    return countJobs(this.#ctx);
  }

  async listQueueSettings(): Promise<readonly QueueSettings[]> {
    await this.#open();
    return listQueueSettings(this.#ctx);
  }

  async getDependencies(jobId: string): Promise<DependencyEdges | null> {
    await this.#open();
    return getDependencies(this.#ctx, jobId);
  }

  async facetTags(request: FacetRequest): Promise<readonly FacetValue[]> {
    if (typeof request?.key !== "string") throw new InvalidInputError("key", "must be a string");
    if (request.scope !== undefined) assertJobFilter(request.scope, "scope", this.#ctx.bounds);
    if (request.max !== undefined && (!Number.isSafeInteger(request.max) || request.max < 1)) {
      throw new InvalidInputError("max", "must be an integer ≥ 1");
    }
    await this.#open();
    return facetTags(this.#ctx, request);
  }

  async suggestTags(request: SuggestTagsRequest): Promise<TagSuggestionPage> {
    if (typeof request?.prefix !== "string") throw new InvalidInputError("prefix", "must be a string");
    if (request.key !== undefined && typeof request.key !== "string") throw new InvalidInputError("key", "must be a string");
    if (request.max !== undefined && (!Number.isSafeInteger(request.max) || request.max < 1)) {
      throw new InvalidInputError("max", "must be an integer ≥ 1");
    }
    await this.#open();
    return suggestTags(this.#ctx, request);
  }

  // ---- workflows -----------------------------------------------------------------------------

  async getWorkflow(workflowId: string): Promise<WorkflowRecord | null> {
    await this.#open();
    return getWorkflow(this.#ctx, workflowId);
  }

  async listWorkflows(request: ListWorkflowsRequest = {}): Promise<WorkflowPage> {
    if (request.limit !== undefined && (!Number.isSafeInteger(request.limit) || request.limit < 1)) {
      throw new InvalidInputError("limit", "must be an integer ≥ 1");
    }
    await this.#open();
    return listWorkflows(this.#ctx, request);
  }

  // ---- retention -----------------------------------------------------------------------------

  async purgeTerminal(request: PurgeTerminalRequest): Promise<PurgeTerminalResult> {
    assertPurgeTerminalRequest(request);
    await this.#open();
    return { purged: await purgeTerminal(this.#ctx, request) };
  }

  // ---- observers -----------------------------------------------------------------------------

  async registerObserver(request: RegisterObserverRequest): Promise<RegisterObserverResult> {
    assertRegisterObserverRequest(request, this.#ctx.bounds);
    await this.#open();
    return registerObserver(this.#ctx, request);
  }

  async removeObserver(request: { readonly observerId: string }): Promise<{ readonly status: "removed" | "notFound" }> {
    requireId(request?.observerId, "observerId", this.#ctx.bounds);
    await this.#open();
    return { status: await removeObserver(this.#ctx, request.observerId) };
  }

  async claimObserverDeliveries(request: ClaimObserverDeliveriesRequest): Promise<ClaimObserverDeliveriesResult> {
    assertClaimObserverDeliveriesRequest(request, this.#ctx.bounds);
    await this.#open();
    return claimObserverDeliveries(this.#ctx, request);
  }

  async reportObserverDeliveries(request: ReportObserverDeliveriesRequest): Promise<ReportObserverDeliveriesResult> {
    assertReportObserverDeliveriesRequest(request, this.#ctx.bounds);
    await this.#open();
    return reportObserverDeliveries(this.#ctx, request);
  }

  async getObserver(observerId: string): Promise<ObserverStatus | null> {
    await this.#open();
    return (await observerStatuses(this.#ctx, observerId))[0] ?? null;
  }

  async listObservers(): Promise<readonly ObserverStatus[]> {
    await this.#open();
    return observerStatuses(this.#ctx, null);
  }

  async listObserverDeadLetters(observerId: string): Promise<readonly ObserverDeadLetter[]> {
    await this.#open();
    return listObserverDeadLetters(this.#ctx, observerId);
  }

  // ---- internals -----------------------------------------------------------------------------

  #assertOpen(): void {
    if (this.#closed) throw new StoreClosedError();
  }

  /**
   * The field checks of a call that may share its statement with others, or `null`: only a small
   * call (a large one amortizes its commit by itself) whose jobs are all valid and parentless.
   */
  #shareable(jobs: EnqueueRequest["jobs"]): CheckedJob[] | null {
    if (jobs.length === 0 || jobs.length > SHARED_CALL_MAX_JOBS) return null;
    const checked: CheckedJob[] = [];
    for (const job of jobs) {
      const result = validateNewJob(job, this.#ctx.bounds);
      if (!result.ok || result.job.parentIds.length > 0) return null;
      checked.push(result);
    }
    return checked;
  }


  /** `caller`, with the check that it reaches this store's database and schema. */
  async #caller(caller: PostgresQueryExecutor, operation: string): Promise<CheckedExecutor> {
    if (typeof caller?.query !== "function") {
      throw new InvalidTransactionError("expected an executor with query(sql, values) running in your transaction");
    }
    // Checked right after the call's savepoint (see Executor#runInCallerTransaction).
    return { query: (sql, values) => caller.query(sql, values), verify: () => this.#callerCheck.check(caller, operation) };
  }

  /** Refuses a closed store and, once per store, a schema it cannot run against. */
  async #open(): Promise<void> {
    this.#assertOpen();
    this.#ready ??= checkSchema(this.#metaExecutor, this.#config.schema, this.#config.schemaName).catch((error: unknown) => {
      this.#ready = null;
      throw error;
    });
    await this.#ready;
  }
}

const noHintsLeft = (): void => undefined;

/** Calls of more jobs than this run their own statement (see `enqueueConcurrency`). */
const SHARED_CALL_MAX_JOBS = 16;

function requireWorkflow(request: Omit<EnqueueWorkflowRequest, "tx">): void {
  if (typeof request?.workflow !== "object" || request.workflow === null) throw new InvalidInputError("workflow", "must be an object");
  requireInstant(request.now, "now");
}
