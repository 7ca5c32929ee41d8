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
} from "@belay/contract";
import { CallerTransactionCheck, checkedCaller } from "./caller-transaction.js";
import type { StoreContext } from "./context.js";
import { type MssqlPool, OwnedPool } from "./driver.js";
import { JOB_SURFACE, checkSchema, migrateSurface } from "./migrate.js";
import { Executor } from "./session.js";
import { type ResolvedSqlServerStoreConfig, type SqlServerStoreConfig, resolveSqlServerStoreConfig } from "./sqlserver-store-config.js";
import { listAuditRecords } from "./sql/audit.js";
import { claim } from "./sql/claim.js";
import { enqueue, enqueueThrough } from "./sql/enqueue.js";
import { expireLeases, heartbeat, release } from "./sql/leases.js";
import * as observers from "./sql/observers.js";
import * as operator from "./sql/operator.js";
import { reportOutcomes } from "./sql/outcomes.js";
import * as reads from "./sql/reads.js";
import { purgeTerminal } from "./sql/retention.js";
import * as schedules from "./sql/schedules.js";
import { facetTags, suggestTags } from "./sql/tags.js";
import * as workflows from "./sql/workflows.js";

/**
 * A pool to run statements on: the caller's (connected on first use if it is not yet) or one the
 * store owns. Shared by the job and promise stores.
 */
export function poolSource(config: { readonly pool?: MssqlPool; readonly connectionString?: string; readonly maxConnections?: number }): {
  readonly get: () => Promise<MssqlPool>;
  readonly close: () => Promise<void>;
} {
  if (config.pool !== undefined) {
    const pool = config.pool;
    let connecting: Promise<unknown> | null = null;
    return {
      get: async () => {
        if (pool.connected === false) {
          connecting ??= pool.connect().finally(() => (connecting = null));
          await connecting;
        }
        return pool;
      },
      close: async () => undefined,
    };
  }
  const owned = new OwnedPool(config.connectionString!, config.maxConnections ?? 10);
  return { get: () => owned.open(), close: () => owned.close() };
}

/**
 * The Storage Contract's operations on an `mssql` pool, behind `SqlServerStore`'s checked front
 * (which has checked every request's shape before it arrives here). Each runs one transaction (or,
 * for reads, autocommit statements) and delegates to its function in `sql/`; this class owns what
 * lives across operations: the pool, the schema check and the step hook.
 */
export class SqlServerOperations implements JobStoreOperations {
  readonly capabilities: StoreCapabilities;
  readonly #config: ResolvedSqlServerStoreConfig;
  readonly #pool: ReturnType<typeof poolSource>;
  /** Runs schema checks, migrations and caller checks: never through the step hook, which sees only operations. */
  readonly #meta: Executor;
  readonly #ctx: StoreContext;
  #hook: StepHook | null = null;
  #ready: Promise<void> | null = null;
  #closed = false;

  constructor(config: SqlServerStoreConfig) {
    this.#config = resolveSqlServerStoreConfig(config);
    this.#pool = poolSource(config);
    const { schema, schemaName, bounds, historyPolicy } = this.#config;
    this.#meta = new Executor(this.#pool.get, schema, () => null);
    const check = new CallerTransactionCheck(this.#meta, schemaName);
    this.#ctx = {
      executor: new Executor(this.#pool.get, schema, () => this.#hook),
      schemaName,
      bounds,
      history: historyPolicy !== "off",
      detail: historyPolicy === "transitionsAndFailureDetail",
      caller: (executor, operation) => checkedCaller(executor, check, operation),
    };
    this.capabilities = Object.freeze({
      name: "sqlserver",
      transactionalEnqueue: true,
      enqueueThrough: true,
      // No wake-up hints on SQL Server: the poll interval is the latency (DESIGN §5).
      wakeUpHints: false,
      stepHook: true,
      bounds,
      historyPolicy,
    });
  }

  get schemaName(): string {
    return this.#config.schemaName;
  }

  setStepHook(hook: StepHook | null): void {
    this.#hook = hook;
  }

  async migrate(): Promise<MigrateResult> {
    this.#assertOpen();
    const result = await migrateSurface(this.#meta, JOB_SURFACE, this.#config.schemaName, {
      requireReadCommittedSnapshot: this.#config.requireReadCommittedSnapshot,
    });
    this.#ready = Promise.resolve();
    return result;
  }

  /** Migrates only up to `version` (how the upgrade tests build a database as an older release left it). */
  async migrateTo(version: number): Promise<MigrateResult> {
    this.#assertOpen();
    return migrateSurface(this.#meta, JOB_SURFACE, this.#config.schemaName, { upTo: version, requireReadCommittedSnapshot: this.#config.requireReadCommittedSnapshot });
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#pool.close();
  }

  enqueue(request: EnqueueRequest): Promise<readonly EnqueueResult[]> {
    return this.#op((ctx) => enqueue(ctx, request));
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

  getWorkflow(workflowId: string): Promise<WorkflowRecord | null> {
    return this.#op((ctx) => workflows.getWorkflow(ctx, workflowId));
  }

  listWorkflows(request: ListWorkflowsRequest): Promise<WorkflowPage> {
    return this.#op((ctx) => workflows.listWorkflows(ctx, request));
  }

  purgeTerminal(request: PurgeTerminalRequest): Promise<PurgeTerminalResult> {
    return this.#op((ctx) => purgeTerminal(ctx, request));
  }

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

  async #op<T>(operation: (ctx: StoreContext) => Promise<T>): Promise<T> {
    await this.#open();
    return operation(this.#ctx);
  }

  #assertOpen(): void {
    if (this.#closed) throw new StoreClosedError();
  }

  async #open(): Promise<void> {
    this.#assertOpen();
    this.#ready ??= checkSchema(this.#meta, this.#config.schemaName).catch((error: unknown) => {
      this.#ready = null;
      throw error;
    });
    await this.#ready;
  }
}
