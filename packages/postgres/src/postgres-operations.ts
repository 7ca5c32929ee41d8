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
  type EnqueueThroughRequest,
  type EnqueueWorkflowRequest,
  type EnqueueWorkflowResult,
  type EnqueueWorkflowThroughRequest,
  type EnqueuedThrough,
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
  type JobStoreOperations,
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
  type QueryExecutor,
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
  StoreClosedError,
  resolveBounds,
  validateNewJob,
} from "@belay/contract";
import { CallerTransactionCheck, checkedCaller } from "./caller-transaction.js";
import type { StoreContext } from "./context.js";
import { type CheckedJob, EnqueueCoalescer } from "./enqueue-coalescer.js";
import { HintPublisher, HintSubscription, hintChannel } from "./hints.js";
import { checkSchema, migrateSchema } from "./migrate.js";
import type { PostgresPool } from "./pool.js";
import { OwnedPool, type PostgresStoreConfig, type ResolvedPostgresStoreConfig, resolvePostgresStoreConfig } from "./postgres-store-config.js";
import { Executor, SqlCache } from "./session.js";
import { listAuditRecords } from "./sql/audit.js";
import { claim } from "./sql/claim.js";
import { enqueue, enqueueChecked, enqueueThrough } from "./sql/enqueue.js";
import { expireLeases, heartbeat, release } from "./sql/leases.js";
import * as observers from "./sql/observers.js";
import * as operator from "./sql/operator.js";
import { reportOutcomes } from "./sql/outcomes.js";
import * as reads from "./sql/reads.js";
import { purgeTerminal } from "./sql/retention.js";
import * as schedules from "./sql/schedules.js";
import { facetTags, suggestTags } from "./sql/tags.js";
import * as workflows from "./sql/workflows.js";

/** Calls of more jobs than this run their own statement (see `enqueueConcurrency`). */
const SHARED_CALL_MAX_JOBS = 16;

/**
 * The Storage Contract's operations on a PostgreSQL pool, behind `PostgresStore`'s checked front
 * (which has checked every request's shape before it arrives here). Each borrows a connection
 * for one statement or one transaction and delegates to its function in `sql/`; this class owns
 * what lives across operations: the pool, the wake-up hints, the enqueue coalescer, the schema
 * check and the step hook.
 */
export class PostgresOperations implements JobStoreOperations {
  readonly capabilities: StoreCapabilities;
  readonly #config: ResolvedPostgresStoreConfig;
  readonly #pool: PostgresPool;
  readonly #ownsPool: boolean;
  /** Runs schema checks, migrations and caller checks: never through the step hook, which sees only operations. */
  readonly #metaExecutor: Executor;
  readonly #ctx: StoreContext;
  readonly #publisher: HintPublisher | null;
  readonly #subscription: HintSubscription | null;
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
    this.#metaExecutor = new Executor(this.#pool, () => null);
    const callerCheck = new CallerTransactionCheck(this.#metaExecutor, this.#config.schema, this.#config.schemaName);
    const channel = this.#config.hints ? hintChannel(this.#config.schemaName) : null;
    this.#subscription = channel === null ? null : new HintSubscription(config.listenClient ?? (() => this.#pool.connect()), channel);
    const listening = this.#subscription;
    this.#publisher = channel === null ? null : new HintPublisher(this.#pool, channel, () => listening?.client ?? null);
    const { historyPolicy, schemaName } = this.#config;
    this.#ctx = {
      executor: new Executor(this.#pool, () => this.#hook),
      sql: new SqlCache(this.#config.schema),
      schemaName,
      bounds,
      history: historyPolicy !== "off",
      detail: historyPolicy === "transitionsAndFailureDetail",
      channel,
      limitedQueues: new Set(),
      hint: (queues) => {
        this.#subscription?.deliver(queues);
        this.#publisher?.publish(queues);
      },
      caller: (executor, operation) => checkedCaller(executor, callerCheck, operation),
    };
    const ctx = this.#ctx;
    this.#coalescer = new EnqueueCoalescer(
      (request, checked) => (checked === undefined ? enqueue(ctx, request) : enqueueChecked(ctx, request, checked)),
      config.enqueueConcurrency ?? 2,
      bounds.enqueueBatch,
    );
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
  get schemaName(): string {
    return this.#config.schemaName;
  }

  /** Whether the LISTEN connection is open right now. */
  get listening(): boolean {
    return this.#subscription?.connected ?? false;
  }

  /** See `PostgresStore#subscribeHints`: one LISTEN connection per store, reconnecting on its own. */
  subscribeHints(listener: HintListener): () => void {
    // The front calls this only with `capabilities.wakeUpHints`, which is when a subscription exists.
    return this.#subscription!.subscribe(listener);
  }

  /**
   * See `JobStore.setStepHook`: called at each named step between two statements of an
   * operation, inside its transaction (every operation runs in one while a hook is installed).
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

  async enqueue(request: EnqueueRequest): Promise<readonly EnqueueResult[]> {
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
    const shared = request.tx === undefined && this.#hook === null ? this.#shareable(request.jobs) : null;
    if (shared !== null) return this.#coalescer.enqueue(request, shared);
    return enqueue(this.#ctx, request);
  }

  enqueueWorkflow(request: EnqueueWorkflowRequest): Promise<EnqueueWorkflowResult> {
    return this.#op((ctx) => workflows.enqueueWorkflow(ctx, request));
  }

  enqueueThrough(executor: QueryExecutor, request: EnqueueThroughRequest): Promise<EnqueuedThrough<readonly EnqueueResult[]>> {
    return this.#op((ctx) => enqueueThrough(ctx, executor, request));
  }

  enqueueWorkflowThrough(executor: QueryExecutor, request: EnqueueWorkflowThroughRequest): Promise<EnqueuedThrough<EnqueueWorkflowResult>> {
    return this.#op((ctx) => workflows.enqueueWorkflowThrough(ctx, executor, request));
  }

  // ---- execution -----------------------------------------------------------------------------

  claim(request: ClaimRequest): Promise<ClaimResult> {
    return this.#op((ctx) => claim(ctx, request));
  }

  reportOutcomes(request: ReportOutcomesRequest): Promise<readonly OutcomeResult[]> {
    return this.#op((ctx) => reportOutcomes(ctx, request));
  }

  heartbeat(request: HeartbeatRequest): Promise<readonly HeartbeatResult[]> {
    return this.#op((ctx) => heartbeat(ctx, request));
  }

  release(request: ReleaseRequest): Promise<readonly ReleaseResult[]> {
    return this.#op((ctx) => release(ctx, request));
  }

  expireLeases(request: ExpireLeasesRequest): Promise<ExpireLeasesResult> {
    return this.#op((ctx) => expireLeases(ctx, request));
  }

  // ---- schedules -----------------------------------------------------------------------------

  upsertSchedule(request: UpsertScheduleRequest): Promise<UpsertScheduleResult> {
    return this.#op((ctx) => schedules.upsertSchedule(ctx, request));
  }

  removeSchedule(request: { readonly scheduleId: string }): Promise<RemoveScheduleResult> {
    return this.#op((ctx) => schedules.removeSchedule(ctx, request));
  }

  listSchedules(): Promise<readonly ScheduleRecord[]> {
    return this.#op(schedules.listSchedules);
  }

  getSchedule(scheduleId: string): Promise<ScheduleWithPayload | null> {
    return this.#op((ctx) => schedules.getSchedule(ctx, scheduleId));
  }

  mintDue(request: MintDueRequest): Promise<readonly MintResult[]> {
    return this.#op((ctx) => schedules.mintDue(ctx, request));
  }

  triggerSchedule(request: TriggerScheduleRequest): Promise<TriggerScheduleResult> {
    return this.#op((ctx) => schedules.triggerSchedule(ctx, request));
  }

  // ---- operator actions ----------------------------------------------------------------------

  cancelJob(request: JobActionRequest): Promise<CancelResult> {
    return this.#op((ctx) => operator.cancelJob(ctx, request));
  }

  requeueJob(request: JobActionRequest): Promise<RequeueResult> {
    return this.#op((ctx) => operator.requeueJob(ctx, request));
  }

  pauseQueue(request: QueueActionRequest): Promise<QueueActionResult> {
    return this.#op((ctx) => operator.pauseQueue(ctx, request));
  }

  resumeQueue(request: QueueActionRequest): Promise<QueueActionResult> {
    return this.#op((ctx) => operator.resumeQueue(ctx, request));
  }

  setConcurrencyLimit(request: SetConcurrencyLimitRequest): Promise<QueueActionResult> {
    return this.#op((ctx) => operator.setConcurrencyLimit(ctx, request));
  }

  listAuditRecords(request: ListAuditRequest): Promise<AuditPage> {
    return this.#op((ctx) => listAuditRecords(ctx, request));
  }

  // ---- monitoring reads ----------------------------------------------------------------------

  getJob(jobId: string): Promise<JobRecord | null> {
    return this.#op((ctx) => reads.getJob(ctx, jobId));
  }

  getJobOutput(jobId: string): Promise<string | null> {
    return this.#op((ctx) => reads.getJobOutput(ctx, jobId));
  }

  getJobHistory(jobId: string): Promise<readonly TransitionRecord[]> {
    return this.#op((ctx) => reads.getJobHistory(ctx, jobId));
  }

  listJobs(request: ListJobsRequest): Promise<JobPage> {
    return this.#op((ctx) => reads.listJobs(ctx, request));
  }

  countJobs(): Promise<readonly JobCount[]> {
    return this.#op(reads.countJobs);
  }

  listQueueSettings(): Promise<readonly QueueSettings[]> {
    return this.#op(operator.listQueueSettings);
  }

  getDependencies(jobId: string): Promise<DependencyEdges | null> {
    return this.#op((ctx) => reads.getDependencies(ctx, jobId));
  }

  facetTags(request: FacetRequest): Promise<readonly FacetValue[]> {
    return this.#op((ctx) => facetTags(ctx, request));
  }

  suggestTags(request: SuggestTagsRequest): Promise<TagSuggestionPage> {
    return this.#op((ctx) => suggestTags(ctx, request));
  }

  // ---- workflows -----------------------------------------------------------------------------

  getWorkflow(workflowId: string): Promise<WorkflowRecord | null> {
    return this.#op((ctx) => workflows.getWorkflow(ctx, workflowId));
  }

  listWorkflows(request: ListWorkflowsRequest): Promise<WorkflowPage> {
    return this.#op((ctx) => workflows.listWorkflows(ctx, request));
  }

  // ---- retention -----------------------------------------------------------------------------

  purgeTerminal(request: PurgeTerminalRequest): Promise<PurgeTerminalResult> {
    return this.#op((ctx) => purgeTerminal(ctx, request));
  }

  // ---- observers -----------------------------------------------------------------------------

  registerObserver(request: RegisterObserverRequest): Promise<RegisterObserverResult> {
    return this.#op((ctx) => observers.registerObserver(ctx, request));
  }

  removeObserver(request: { readonly observerId: string }): Promise<{ readonly status: "removed" | "notFound" }> {
    return this.#op((ctx) => observers.removeObserver(ctx, request));
  }

  claimObserverDeliveries(request: ClaimObserverDeliveriesRequest): Promise<ClaimObserverDeliveriesResult> {
    return this.#op((ctx) => observers.claimObserverDeliveries(ctx, request));
  }

  reportObserverDeliveries(request: ReportObserverDeliveriesRequest): Promise<ReportObserverDeliveriesResult> {
    return this.#op((ctx) => observers.reportObserverDeliveries(ctx, request));
  }

  getObserver(observerId: string): Promise<ObserverStatus | null> {
    return this.#op((ctx) => observers.getObserver(ctx, observerId));
  }

  listObservers(): Promise<readonly ObserverStatus[]> {
    return this.#op(observers.listObservers);
  }

  listObserverDeadLetters(observerId: string): Promise<readonly ObserverDeadLetter[]> {
    return this.#op((ctx) => observers.listObserverDeadLetters(ctx, observerId));
  }

  // ---- internals -----------------------------------------------------------------------------

  /** Runs one operation once the store is open and its schema checked. */
  async #op<T>(operation: (ctx: StoreContext) => Promise<T>): Promise<T> {
    await this.#open();
    return operation(this.#ctx);
  }

  #assertOpen(): void {
    if (this.#closed) throw new StoreClosedError();
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

  /**
   * The field checks of a call that may share its statement with others, or `null`: only a small
   * call (a large one amortizes its commit by itself) whose jobs are all valid and parentless.
   * They are the enqueue's own checks, run here once and handed on to the shared statement.
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
}
