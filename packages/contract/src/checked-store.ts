import type { Bounds } from "./bounds.js";
import type { EnqueueRequest, EnqueueResult } from "./enqueue.js";
import { CapabilityNotSupportedError, TransactionNotSupportedError } from "./errors.js";
import type {
  ClaimRequest,
  ClaimResult,
  ExpireLeasesRequest,
  ExpireLeasesResult,
  HeartbeatRequest,
  HeartbeatResult,
  OutcomeResult,
  ReleaseRequest,
  ReleaseResult,
  ReportOutcomesRequest,
} from "./execution.js";
import { requireId } from "./input.js";
import type { HintListener, JobStore, MigrateResult, StepHook, StoreCapabilities } from "./job-store.js";
import type { JobRecord, TransitionRecord } from "./job.js";
import type {
  DependencyEdges,
  FacetRequest,
  FacetValue,
  JobCount,
  JobPage,
  ListJobsRequest,
  SuggestTagsRequest,
  TagSuggestionPage,
} from "./monitoring.js";
import type {
  ClaimObserverDeliveriesRequest,
  ClaimObserverDeliveriesResult,
  ObserverDeadLetter,
  ObserverStatus,
  RegisterObserverRequest,
  RegisterObserverResult,
  ReportObserverDeliveriesRequest,
  ReportObserverDeliveriesResult,
} from "./observers.js";
import type {
  AuditPage,
  CancelResult,
  JobActionRequest,
  ListAuditRequest,
  QueueActionRequest,
  QueueActionResult,
  QueueSettings,
  RequeueResult,
  SetConcurrencyLimitRequest,
} from "./operator.js";
import {
  assertClaimObserverDeliveriesRequest,
  assertClaimRequest,
  assertEnqueueRequest,
  assertEnqueueWorkflowRequest,
  assertExpireLeasesRequest,
  assertFacetRequest,
  assertHeartbeatRequest,
  assertJobActionRequest,
  assertListAuditRequest,
  assertListJobsRequest,
  assertListWorkflowsRequest,
  assertLookupId,
  assertMintDueRequest,
  assertPurgeTerminalRequest,
  assertQueueActionRequest,
  assertRegisterObserverRequest,
  assertReleaseRequest,
  assertReportObserverDeliveriesRequest,
  assertReportOutcomesRequest,
  assertSetConcurrencyLimitRequest,
  assertSuggestTagsRequest,
  assertTriggerScheduleRequest,
  assertUpsertScheduleRequest,
} from "./requests.js";
import type { PurgeTerminalRequest, PurgeTerminalResult } from "./retention.js";
import type {
  MintDueRequest,
  MintResult,
  RemoveScheduleResult,
  ScheduleRecord,
  ScheduleWithPayload,
  TriggerScheduleRequest,
  TriggerScheduleResult,
  UpsertScheduleRequest,
  UpsertScheduleResult,
} from "./schedules.js";
import type {
  EnqueueThroughRequest,
  EnqueueWorkflowThroughRequest,
  EnqueuedThrough,
  QueryExecutor,
} from "./through.js";
import type {
  EnqueueWorkflowRequest,
  EnqueueWorkflowResult,
  ListWorkflowsRequest,
  WorkflowPage,
  WorkflowRecord,
} from "./workflows.js";

/**
 * The operations a store implements behind the checked front: the same signatures as
 * {@link JobStore}, but each receives a request the front has already checked (shape, types,
 * bounds of ids and queue names, `now`), so it only validates what needs its data (duplicates,
 * unknown parents, cursors it issued). Optional-page requests arrive as `{}`, never `undefined`.
 */
export type JobStoreOperations = JobStore;

/**
 * The checked front of every store: each method runs the contract's check of its request —
 * one check per operation, the same for every store — then calls the store's own operation.
 * A store (built-in or third-party) extends it and hands its operations to the constructor:
 *
 * @example
 * ```ts
 * class MyStore extends CheckedJobStore {
 *   constructor(config: MyConfig) {
 *     super(new MyOperations(config)); // implements JobStoreOperations
 *   }
 * }
 * ```
 *
 * Optional capabilities pass through when the operations declare them (`capabilities.wakeUpHints`,
 * `enqueueThrough`, `stepHook`); otherwise their methods throw `CapabilityNotSupportedError`
 * (`TransactionNotSupportedError` for `enqueueThrough`), never ignoring the call.
 */
export class CheckedJobStore<Operations extends JobStoreOperations = JobStoreOperations> implements JobStore {
  readonly capabilities: StoreCapabilities;
  /** The unchecked operations this front guards. */
  protected readonly operations: Operations;
  readonly #bounds: Readonly<Bounds>;

  constructor(operations: Operations) {
    this.operations = operations;
    this.capabilities = operations.capabilities;
    this.#bounds = operations.capabilities.bounds;
  }

  migrate(): Promise<MigrateResult> {
    return this.operations.migrate();
  }

  close(): Promise<void> {
    return this.operations.close();
  }

  // ---- enqueue -------------------------------------------------------------------------------

  async enqueue(request: EnqueueRequest): Promise<readonly EnqueueResult[]> {
    assertEnqueueRequest(request);
    return this.operations.enqueue(request);
  }

  async enqueueWorkflow(request: EnqueueWorkflowRequest): Promise<EnqueueWorkflowResult> {
    assertEnqueueWorkflowRequest(request);
    return this.operations.enqueueWorkflow(request);
  }

  async enqueueThrough(executor: QueryExecutor, request: EnqueueThroughRequest): Promise<EnqueuedThrough<readonly EnqueueResult[]>> {
    const operations = this.#through();
    assertEnqueueRequest(request);
    return operations.enqueueThrough(executor, request);
  }

  async enqueueWorkflowThrough(
    executor: QueryExecutor,
    request: EnqueueWorkflowThroughRequest,
  ): Promise<EnqueuedThrough<EnqueueWorkflowResult>> {
    const operations = this.#through();
    assertEnqueueWorkflowRequest(request);
    return operations.enqueueWorkflowThrough(executor, request);
  }

  // ---- execution -----------------------------------------------------------------------------

  async claim(request: ClaimRequest): Promise<ClaimResult> {
    assertClaimRequest(request, this.#bounds);
    return this.operations.claim(request);
  }

  async reportOutcomes(request: ReportOutcomesRequest): Promise<readonly OutcomeResult[]> {
    assertReportOutcomesRequest(request, this.#bounds);
    return this.operations.reportOutcomes(request);
  }

  async heartbeat(request: HeartbeatRequest): Promise<readonly HeartbeatResult[]> {
    assertHeartbeatRequest(request, this.#bounds);
    return this.operations.heartbeat(request);
  }

  async release(request: ReleaseRequest): Promise<readonly ReleaseResult[]> {
    assertReleaseRequest(request, this.#bounds);
    return this.operations.release(request);
  }

  async expireLeases(request: ExpireLeasesRequest): Promise<ExpireLeasesResult> {
    assertExpireLeasesRequest(request, this.#bounds);
    return this.operations.expireLeases(request);
  }

  // ---- schedules -----------------------------------------------------------------------------

  async upsertSchedule(request: UpsertScheduleRequest): Promise<UpsertScheduleResult> {
    assertUpsertScheduleRequest(request, this.#bounds);
    return this.operations.upsertSchedule(request);
  }

  async removeSchedule(request: { readonly scheduleId: string }): Promise<RemoveScheduleResult> {
    requireId(request?.scheduleId, "scheduleId", this.#bounds);
    return this.operations.removeSchedule(request);
  }

  listSchedules(): Promise<readonly ScheduleRecord[]> {
    return this.operations.listSchedules();
  }

  async getSchedule(scheduleId: string): Promise<ScheduleWithPayload | null> {
    assertLookupId(scheduleId, "scheduleId");
    return this.operations.getSchedule(scheduleId);
  }

  async mintDue(request: MintDueRequest): Promise<readonly MintResult[]> {
    assertMintDueRequest(request, this.#bounds);
    return this.operations.mintDue(request);
  }

  async triggerSchedule(request: TriggerScheduleRequest): Promise<TriggerScheduleResult> {
    assertTriggerScheduleRequest(request, this.#bounds);
    return this.operations.triggerSchedule(request);
  }

  // ---- operator actions ----------------------------------------------------------------------

  async cancelJob(request: JobActionRequest): Promise<CancelResult> {
    assertJobActionRequest(request, this.#bounds);
    return this.operations.cancelJob(request);
  }

  async requeueJob(request: JobActionRequest): Promise<RequeueResult> {
    assertJobActionRequest(request, this.#bounds);
    return this.operations.requeueJob(request);
  }

  async pauseQueue(request: QueueActionRequest): Promise<QueueActionResult> {
    assertQueueActionRequest(request, this.#bounds);
    return this.operations.pauseQueue(request);
  }

  async resumeQueue(request: QueueActionRequest): Promise<QueueActionResult> {
    assertQueueActionRequest(request, this.#bounds);
    return this.operations.resumeQueue(request);
  }

  async setConcurrencyLimit(request: SetConcurrencyLimitRequest): Promise<QueueActionResult> {
    assertSetConcurrencyLimitRequest(request, this.#bounds);
    return this.operations.setConcurrencyLimit(request);
  }

  async listAuditRecords(request: ListAuditRequest = {}): Promise<AuditPage> {
    assertListAuditRequest(request);
    return this.operations.listAuditRecords(request);
  }

  // ---- monitoring reads ----------------------------------------------------------------------

  async getJob(jobId: string): Promise<JobRecord | null> {
    assertLookupId(jobId, "jobId");
    return this.operations.getJob(jobId);
  }

  async getJobOutput(jobId: string): Promise<string | null> {
    assertLookupId(jobId, "jobId");
    return this.operations.getJobOutput(jobId);
  }

  async getJobHistory(jobId: string): Promise<readonly TransitionRecord[]> {
    assertLookupId(jobId, "jobId");
    return this.operations.getJobHistory(jobId);
  }

  async listJobs(request: ListJobsRequest = {}): Promise<JobPage> {
    assertListJobsRequest(request, this.#bounds);
    return this.operations.listJobs(request);
  }

  countJobs(): Promise<readonly JobCount[]> {
    return this.operations.countJobs();
  }

  listQueueSettings(): Promise<readonly QueueSettings[]> {
    return this.operations.listQueueSettings();
  }

  async getDependencies(jobId: string): Promise<DependencyEdges | null> {
    assertLookupId(jobId, "jobId");
    return this.operations.getDependencies(jobId);
  }

  async facetTags(request: FacetRequest): Promise<readonly FacetValue[]> {
    assertFacetRequest(request, this.#bounds);
    return this.operations.facetTags(request);
  }

  async suggestTags(request: SuggestTagsRequest): Promise<TagSuggestionPage> {
    assertSuggestTagsRequest(request);
    return this.operations.suggestTags(request);
  }

  // ---- workflows -----------------------------------------------------------------------------

  async getWorkflow(workflowId: string): Promise<WorkflowRecord | null> {
    assertLookupId(workflowId, "workflowId");
    return this.operations.getWorkflow(workflowId);
  }

  async listWorkflows(request: ListWorkflowsRequest = {}): Promise<WorkflowPage> {
    assertListWorkflowsRequest(request);
    return this.operations.listWorkflows(request);
  }

  // ---- retention -----------------------------------------------------------------------------

  async purgeTerminal(request: PurgeTerminalRequest): Promise<PurgeTerminalResult> {
    assertPurgeTerminalRequest(request);
    return this.operations.purgeTerminal(request);
  }

  // ---- observers -----------------------------------------------------------------------------

  async registerObserver(request: RegisterObserverRequest): Promise<RegisterObserverResult> {
    assertRegisterObserverRequest(request, this.#bounds);
    return this.operations.registerObserver(request);
  }

  async removeObserver(request: { readonly observerId: string }): Promise<{ readonly status: "removed" | "notFound" }> {
    requireId(request?.observerId, "observerId", this.#bounds);
    return this.operations.removeObserver(request);
  }

  async claimObserverDeliveries(request: ClaimObserverDeliveriesRequest): Promise<ClaimObserverDeliveriesResult> {
    assertClaimObserverDeliveriesRequest(request, this.#bounds);
    return this.operations.claimObserverDeliveries(request);
  }

  async reportObserverDeliveries(request: ReportObserverDeliveriesRequest): Promise<ReportObserverDeliveriesResult> {
    assertReportObserverDeliveriesRequest(request, this.#bounds);
    return this.operations.reportObserverDeliveries(request);
  }

  async getObserver(observerId: string): Promise<ObserverStatus | null> {
    assertLookupId(observerId, "observerId");
    return this.operations.getObserver(observerId);
  }

  listObservers(): Promise<readonly ObserverStatus[]> {
    return this.operations.listObservers();
  }

  async listObserverDeadLetters(observerId: string): Promise<readonly ObserverDeadLetter[]> {
    assertLookupId(observerId, "observerId");
    return this.operations.listObserverDeadLetters(observerId);
  }

  // ---- optional capabilities -----------------------------------------------------------------

  subscribeHints(listener: HintListener): () => void {
    const { subscribeHints } = this.operations;
    if (!this.capabilities.wakeUpHints || subscribeHints === undefined) {
      throw new CapabilityNotSupportedError(this.capabilities.name, "wakeUpHints");
    }
    if (typeof listener !== "function") throw new TypeError("subscribeHints needs a listener function");
    return subscribeHints.call(this.operations, listener);
  }

  setStepHook(hook: StepHook | null): void {
    const { setStepHook } = this.operations;
    if (!this.capabilities.stepHook || setStepHook === undefined) {
      throw new CapabilityNotSupportedError(this.capabilities.name, "stepHook");
    }
    setStepHook.call(this.operations, hook);
  }

  #through(): Required<Pick<JobStoreOperations, "enqueueThrough" | "enqueueWorkflowThrough">> {
    const { enqueueThrough, enqueueWorkflowThrough } = this.operations;
    if (!this.capabilities.enqueueThrough || enqueueThrough === undefined || enqueueWorkflowThrough === undefined) {
      throw new TransactionNotSupportedError(this.capabilities.name);
    }
    return {
      enqueueThrough: enqueueThrough.bind(this.operations),
      enqueueWorkflowThrough: enqueueWorkflowThrough.bind(this.operations),
    };
  }
}

/** The checked front over `operations`, for a store that needs no class of its own. */
export function checkedJobStore(operations: JobStoreOperations): JobStore {
  return new CheckedJobStore(operations);
}
