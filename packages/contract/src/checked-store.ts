import type * as contract from "./index.js";
import { CapabilityNotSupportedError, TransactionNotSupportedError } from "./errors.js";
import { requireId } from "./input.js";
import type { HintListener, JobStore, MigrateResult, StepHook, StoreCapabilities } from "./job-store.js";
import {
  assertAcquireMaintainerLeaseRequest, assertClaimObserverDeliveriesRequest, assertClaimRequest, assertEnqueueRequest,
  assertEnqueueWorkflowRequest, assertExpireLeasesRequest, assertFacetRequest, assertHeartbeatRequest, assertJobActionRequest,
  assertListAuditRequest, assertListJobsRequest, assertListWorkflowsRequest, assertLookupId, assertMintDueRequest,
  assertPurgeTerminalRequest, assertQueueActionRequest, assertRegisterObserverRequest, assertReleaseMaintainerLeaseRequest,
  assertReleaseRequest, assertReportObserverDeliveriesRequest, assertReportOutcomesRequest, assertSetConcurrencyLimitRequest,
  assertSuggestTagsRequest, assertTriggerScheduleRequest, assertUpsertScheduleRequest,
} from "./requests.js";

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
  readonly #bounds: Readonly<contract.Bounds>;

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

  async enqueue(request: contract.EnqueueRequest): Promise<readonly contract.EnqueueResult[]> {
    assertEnqueueRequest(request);
    return this.operations.enqueue(request);
  }

  async enqueueWorkflow(request: contract.EnqueueWorkflowRequest): Promise<contract.EnqueueWorkflowResult> {
    assertEnqueueWorkflowRequest(request);
    return this.operations.enqueueWorkflow(request);
  }

  async enqueueThrough(executor: contract.QueryExecutor, request: contract.EnqueueThroughRequest): Promise<contract.EnqueuedThrough<readonly contract.EnqueueResult[]>> {
    const operations = this.#through();
    assertEnqueueRequest(request);
    return operations.enqueueThrough(executor, request);
  }

  async enqueueWorkflowThrough(
    executor: contract.QueryExecutor,
    request: contract.EnqueueWorkflowThroughRequest,
  ): Promise<contract.EnqueuedThrough<contract.EnqueueWorkflowResult>> {
    const operations = this.#through();
    assertEnqueueWorkflowRequest(request);
    return operations.enqueueWorkflowThrough(executor, request);
  }

  // ---- execution -----------------------------------------------------------------------------

  async claim(request: contract.ClaimRequest): Promise<contract.ClaimResult> {
    assertClaimRequest(request, this.#bounds);
    return this.operations.claim(request);
  }

  async reportOutcomes(request: contract.ReportOutcomesRequest): Promise<readonly contract.OutcomeResult[]> {
    assertReportOutcomesRequest(request, this.#bounds);
    return this.operations.reportOutcomes(request);
  }

  async heartbeat(request: contract.HeartbeatRequest): Promise<readonly contract.HeartbeatResult[]> {
    assertHeartbeatRequest(request, this.#bounds);
    return this.operations.heartbeat(request);
  }

  async release(request: contract.ReleaseRequest): Promise<readonly contract.ReleaseResult[]> {
    assertReleaseRequest(request, this.#bounds);
    return this.operations.release(request);
  }

  async expireLeases(request: contract.ExpireLeasesRequest): Promise<contract.ExpireLeasesResult> {
    assertExpireLeasesRequest(request, this.#bounds);
    return this.operations.expireLeases(request);
  }

  // ---- schedules -----------------------------------------------------------------------------

  async upsertSchedule(request: contract.UpsertScheduleRequest): Promise<contract.UpsertScheduleResult> {
    assertUpsertScheduleRequest(request, this.#bounds);
    return this.operations.upsertSchedule(request);
  }

  async removeSchedule(request: { readonly scheduleId: string }): Promise<contract.RemoveScheduleResult> {
    requireId(request?.scheduleId, "scheduleId", this.#bounds);
    return this.operations.removeSchedule(request);
  }

  listSchedules(): Promise<readonly contract.ScheduleRecord[]> {
    return this.operations.listSchedules();
  }

  async getSchedule(scheduleId: string): Promise<contract.ScheduleWithPayload | null> {
    assertLookupId(scheduleId, "scheduleId");
    return this.operations.getSchedule(scheduleId);
  }

  async mintDue(request: contract.MintDueRequest): Promise<readonly contract.MintResult[]> {
    assertMintDueRequest(request, this.#bounds);
    return this.operations.mintDue(request);
  }

  async triggerSchedule(request: contract.TriggerScheduleRequest): Promise<contract.TriggerScheduleResult> {
    assertTriggerScheduleRequest(request, this.#bounds);
    return this.operations.triggerSchedule(request);
  }

  // ---- operator actions ----------------------------------------------------------------------

  async cancelJob(request: contract.JobActionRequest): Promise<contract.CancelResult> {
    assertJobActionRequest(request, this.#bounds);
    return this.operations.cancelJob(request);
  }

  async requeueJob(request: contract.JobActionRequest): Promise<contract.RequeueResult> {
    assertJobActionRequest(request, this.#bounds);
    return this.operations.requeueJob(request);
  }

  async pauseQueue(request: contract.QueueActionRequest): Promise<contract.QueueActionResult> {
    assertQueueActionRequest(request, this.#bounds);
    return this.operations.pauseQueue(request);
  }

  async resumeQueue(request: contract.QueueActionRequest): Promise<contract.QueueActionResult> {
    assertQueueActionRequest(request, this.#bounds);
    return this.operations.resumeQueue(request);
  }

  async setConcurrencyLimit(request: contract.SetConcurrencyLimitRequest): Promise<contract.QueueActionResult> {
    assertSetConcurrencyLimitRequest(request, this.#bounds);
    return this.operations.setConcurrencyLimit(request);
  }

  async listAuditRecords(request: contract.ListAuditRequest = {}): Promise<contract.AuditPage> {
    assertListAuditRequest(request);
    return this.operations.listAuditRecords(request);
  }

  // ---- monitoring reads ----------------------------------------------------------------------

  async getJob(jobId: string): Promise<contract.JobRecord | null> {
    assertLookupId(jobId, "jobId");
    return this.operations.getJob(jobId);
  }

  async getJobOutput(jobId: string): Promise<string | null> {
    assertLookupId(jobId, "jobId");
    return this.operations.getJobOutput(jobId);
  }

  async getJobHistory(jobId: string): Promise<readonly contract.TransitionRecord[]> {
    assertLookupId(jobId, "jobId");
    return this.operations.getJobHistory(jobId);
  }

  async listJobs(request: contract.ListJobsRequest = {}): Promise<contract.JobPage> {
    assertListJobsRequest(request, this.#bounds);
    return this.operations.listJobs(request);
  }

  countJobs(): Promise<readonly contract.JobCount[]> {
    return this.operations.countJobs();
  }

  listQueueSettings(): Promise<readonly contract.QueueSettings[]> {
    return this.operations.listQueueSettings();
  }

  async getDependencies(jobId: string): Promise<contract.DependencyEdges | null> {
    assertLookupId(jobId, "jobId");
    return this.operations.getDependencies(jobId);
  }

  async facetTags(request: contract.FacetRequest): Promise<readonly contract.FacetValue[]> {
    assertFacetRequest(request, this.#bounds);
    return this.operations.facetTags(request);
  }

  async suggestTags(request: contract.SuggestTagsRequest): Promise<contract.TagSuggestionPage> {
    assertSuggestTagsRequest(request);
    return this.operations.suggestTags(request);
  }

  // ---- workflows -----------------------------------------------------------------------------

  async getWorkflow(workflowId: string): Promise<contract.WorkflowRecord | null> {
    assertLookupId(workflowId, "workflowId");
    return this.operations.getWorkflow(workflowId);
  }

  async listWorkflows(request: contract.ListWorkflowsRequest = {}): Promise<contract.WorkflowPage> {
    assertListWorkflowsRequest(request);
    return this.operations.listWorkflows(request);
  }

  // ---- retention -----------------------------------------------------------------------------

  async purgeTerminal(request: contract.PurgeTerminalRequest): Promise<contract.PurgeTerminalResult> {
    assertPurgeTerminalRequest(request);
    return this.operations.purgeTerminal(request);
  }

  // ---- the maintainer lease ---------------------------------------------------------------------

  async acquireMaintainerLease(request: contract.AcquireMaintainerLeaseRequest): Promise<contract.AcquireMaintainerLeaseResult> {
    assertAcquireMaintainerLeaseRequest(request, this.#bounds);
    return this.operations.acquireMaintainerLease(request);
  }

  async releaseMaintainerLease(request: contract.ReleaseMaintainerLeaseRequest): Promise<contract.ReleaseMaintainerLeaseResult> {
    assertReleaseMaintainerLeaseRequest(request, this.#bounds);
    return this.operations.releaseMaintainerLease(request);
  }

  // ---- observers -----------------------------------------------------------------------------

  async registerObserver(request: contract.RegisterObserverRequest): Promise<contract.RegisterObserverResult> {
    assertRegisterObserverRequest(request, this.#bounds);
    return this.operations.registerObserver(request);
  }

  async removeObserver(request: { readonly observerId: string }): Promise<{ readonly status: "removed" | "notFound" }> {
    requireId(request?.observerId, "observerId", this.#bounds);
    return this.operations.removeObserver(request);
  }

  async claimObserverDeliveries(request: contract.ClaimObserverDeliveriesRequest): Promise<contract.ClaimObserverDeliveriesResult> {
    assertClaimObserverDeliveriesRequest(request, this.#bounds);
    return this.operations.claimObserverDeliveries(request);
  }

  async reportObserverDeliveries(request: contract.ReportObserverDeliveriesRequest): Promise<contract.ReportObserverDeliveriesResult> {
    assertReportObserverDeliveriesRequest(request, this.#bounds);
    return this.operations.reportObserverDeliveries(request);
  }

  async getObserver(observerId: string): Promise<contract.ObserverStatus | null> {
    assertLookupId(observerId, "observerId");
    return this.operations.getObserver(observerId);
  }

  listObservers(): Promise<readonly contract.ObserverStatus[]> {
    return this.operations.listObservers();
  }

  async listObserverDeadLetters(observerId: string): Promise<readonly contract.ObserverDeadLetter[]> {
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
