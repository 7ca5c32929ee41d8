import {
  type AcquireMaintainerLeaseRequest, type AcquireMaintainerLeaseResult, type AuditPage, type CancelResult,
  type ClaimObserverDeliveriesRequest, type ClaimObserverDeliveriesResult, type ClaimRequest, type ClaimResult,
  type DependencyEdges, type EnqueueRequest, type EnqueueResult, type EnqueueWorkflowRequest, type EnqueueWorkflowResult,
  type ExpireLeasesRequest, type ExpireLeasesResult, type FacetRequest, type FacetValue, type HeartbeatRequest,
  type HeartbeatResult, type HintListener, type Instant, type JobActionRequest, type JobCount, type JobPage, type JobRecord,
  type JobStoreOperations, type ListAuditRequest, type ListJobsRequest, type ListWorkflowsRequest, type MigrateResult,
  type MintDueRequest, type MintResult, type ObserverDeadLetter, type ObserverStatus, type OutcomeResult,
  type PurgeTerminalRequest, type PurgeTerminalResult, type QueueActionRequest, type QueueActionResult, type QueueSettings,
  type RegisterObserverRequest, type RegisterObserverResult, type ReleaseMaintainerLeaseRequest,
  type ReleaseMaintainerLeaseResult, type ReleaseRequest, type ReleaseResult, type RemoveScheduleResult,
  type ReportObserverDeliveriesRequest, type ReportObserverDeliveriesResult, type ReportOutcomesRequest, type RequeueResult,
  type ScheduleRecord, type ScheduleWithPayload, type SetConcurrencyLimitRequest, type StepHook, type StoreCapabilities,
  type SuggestTagsRequest, type TagSuggestionPage, type TransitionRecord, type TriggerScheduleRequest,
  type TriggerScheduleResult, type UpsertScheduleRequest, type UpsertScheduleResult, type WorkflowPage, type WorkflowRecord,
} from "@belay/contract";
import type { LoggedTransition } from "./memory-store.js";
import type { ResolvedMemoryStoreOptions } from "./memory-store-config.js";
import type { MemoryTransaction } from "./memory-transaction.js";
import { listAuditRecords } from "./ops/audit.js";
import { claim } from "./ops/claim.js";
import { enqueue } from "./ops/enqueue.js";
import { expireLeases, heartbeat, release } from "./ops/leases.js";
import { acquireMaintainerLease, releaseMaintainerLease } from "./ops/maintainer.js";
import {
  claimObserverDeliveries, getObserver, listObserverDeadLetters, listObservers, registerObserver, removeObserver,
  reportObserverDeliveries,
} from "./ops/observers.js";
import { cancelJob, listQueueSettings, pauseQueue, requeueJob, resumeQueue, setConcurrencyLimit } from "./ops/operator.js";
import { reportOutcomes } from "./ops/outcomes.js";
import { countJobs, getDependencies, getJob, getJobHistory, getJobOutput, listJobs } from "./ops/reads.js";
import { compactLog, purgeTerminal } from "./ops/retention.js";
import { getSchedule, listSchedules, mintDue, removeSchedule, triggerSchedule, upsertSchedule } from "./ops/schedules.js";
import { facetTags, suggestTags } from "./ops/tags.js";
import { enqueueWorkflow, getWorkflow, listWorkflows } from "./ops/workflows.js";
import { MemoryState } from "./state.js";
import { TransactionRunner, type Write } from "./transaction-runner.js";

/**
 * The memory store's operations behind the checked front: each one is a read or a write of the
 * {@link TransactionRunner} around one call into `ops/`. Requests arrive checked, so nothing
 * here validates what the front already has.
 */
export class MemoryOperations implements JobStoreOperations {
  readonly capabilities: StoreCapabilities;
  readonly #state: MemoryState;
  readonly #runner: TransactionRunner;

  constructor(options: ResolvedMemoryStoreOptions) {
    this.#state = new MemoryState(options.bounds, options.historyPolicy);
    this.#runner = new TransactionRunner(this.#state);
    this.capabilities = Object.freeze({
      name: "memory",
      transactionalEnqueue: true,
      enqueueThrough: false,
      stepHook: true,
      wakeUpHints: options.wakeUpHints,
      bounds: options.bounds,
      historyPolicy: options.historyPolicy,
    });
  }

  async migrate(): Promise<MigrateResult> {
    this.#runner.assertOpen();
    return { fromVersion: 1, toVersion: 1 };
  }

  async close(): Promise<void> {
    this.#runner.close();
  }

  enqueue(request: EnqueueRequest): Promise<readonly EnqueueResult[]> {
    const write: Write<EnqueueResult[]> = (undo) => enqueue(this.#state, undo, request);
    if (request.tx === undefined) return this.#runner.write("enqueue", write);
    return this.#runner.inTransaction(request.tx, write, (results) => !results.some((r) => r.status === "rejected"));
  }

  enqueueWorkflow(request: EnqueueWorkflowRequest): Promise<EnqueueWorkflowResult> {
    const write: Write<EnqueueWorkflowResult> = (undo) => enqueueWorkflow(this.#state, undo, request);
    if (request.tx === undefined) return this.#runner.write("enqueueWorkflow", write);
    return this.#runner.inTransaction(request.tx, write, (result) => result.status === "created");
  }

  claim(request: ClaimRequest): Promise<ClaimResult> {
    return this.#runner.write("claim", (undo) => claim(this.#state, undo, request));
  }

  reportOutcomes(request: ReportOutcomesRequest): Promise<readonly OutcomeResult[]> {
    return this.#runner.write("reportOutcomes", (undo) => reportOutcomes(this.#state, undo, request));
  }

  heartbeat(request: HeartbeatRequest): Promise<readonly HeartbeatResult[]> {
    return this.#runner.write("heartbeat", (undo) => heartbeat(this.#state, undo, request));
  }

  release(request: ReleaseRequest): Promise<readonly ReleaseResult[]> {
    return this.#runner.write("release", (undo) => release(this.#state, undo, request));
  }

  expireLeases(request: ExpireLeasesRequest): Promise<ExpireLeasesResult> {
    return this.#runner.write("expireLeases", (undo) => expireLeases(this.#state, undo, request));
  }

  upsertSchedule(request: UpsertScheduleRequest): Promise<UpsertScheduleResult> {
    return this.#runner.write("upsertSchedule", (undo) => upsertSchedule(this.#state, undo, request));
  }

  removeSchedule(request: { readonly scheduleId: string }): Promise<RemoveScheduleResult> {
    return this.#runner.write("removeSchedule", (undo) => removeSchedule(this.#state, undo, request));
  }

  listSchedules(): Promise<readonly ScheduleRecord[]> {
    return this.#runner.read(() => listSchedules(this.#state));
  }

  getSchedule(scheduleId: string): Promise<ScheduleWithPayload | null> {
    return this.#runner.read(() => getSchedule(this.#state, scheduleId));
  }

  mintDue(request: MintDueRequest): Promise<readonly MintResult[]> {
    return this.#runner.write("mintDue", (undo) => mintDue(this.#state, undo, request));
  }

  triggerSchedule(request: TriggerScheduleRequest): Promise<TriggerScheduleResult> {
    return this.#runner.write("triggerSchedule", (undo) => triggerSchedule(this.#state, undo, request));
  }

  cancelJob(request: JobActionRequest): Promise<CancelResult> {
    return this.#runner.write("cancelJob", (undo) => cancelJob(this.#state, undo, request));
  }

  requeueJob(request: JobActionRequest): Promise<RequeueResult> {
    return this.#runner.write("requeueJob", (undo) => requeueJob(this.#state, undo, request));
  }

  pauseQueue(request: QueueActionRequest): Promise<QueueActionResult> {
    return this.#runner.write("pauseQueue", (undo) => pauseQueue(this.#state, undo, request));
  }

  resumeQueue(request: QueueActionRequest): Promise<QueueActionResult> {
    return this.#runner.write("resumeQueue", (undo) => resumeQueue(this.#state, undo, request));
  }

  setConcurrencyLimit(request: SetConcurrencyLimitRequest): Promise<QueueActionResult> {
    return this.#runner.write("setConcurrencyLimit", (undo) => setConcurrencyLimit(this.#state, undo, request));
  }

  listAuditRecords(request: ListAuditRequest): Promise<AuditPage> {
    return this.#runner.read(() => listAuditRecords(this.#state, request));
  }

  getJob(jobId: string): Promise<JobRecord | null> {
    return this.#runner.read(() => getJob(this.#state, jobId));
  }

  getJobOutput(jobId: string): Promise<string | null> {
    return this.#runner.read(() => getJobOutput(this.#state, jobId));
  }

  getJobHistory(jobId: string): Promise<readonly TransitionRecord[]> {
    return this.#runner.read(() => getJobHistory(this.#state, jobId));
  }

  listJobs(request: ListJobsRequest): Promise<JobPage> {
    return this.#runner.read(() => listJobs(this.#state, request));
  }

  countJobs(): Promise<readonly JobCount[]> {
    return this.#runner.read(() => countJobs(this.#state));
  }

  listQueueSettings(): Promise<readonly QueueSettings[]> {
    return this.#runner.read(() => listQueueSettings(this.#state));
  }

  getDependencies(jobId: string): Promise<DependencyEdges | null> {
    return this.#runner.read(() => getDependencies(this.#state, jobId));
  }

  facetTags(request: FacetRequest): Promise<readonly FacetValue[]> {
    return this.#runner.read(() => facetTags(this.#state, request));
  }

  suggestTags(request: SuggestTagsRequest): Promise<TagSuggestionPage> {
    return this.#runner.read(() => suggestTags(this.#state, request));
  }

  getWorkflow(workflowId: string): Promise<WorkflowRecord | null> {
    return this.#runner.read(() => getWorkflow(this.#state, workflowId));
  }

  listWorkflows(request: ListWorkflowsRequest): Promise<WorkflowPage> {
    return this.#runner.read(() => listWorkflows(this.#state, request));
  }

  async purgeTerminal(request: PurgeTerminalRequest): Promise<PurgeTerminalResult> {
    const result = await this.#runner.write("purgeTerminal", (undo) => purgeTerminal(this.#state, undo, request));
    if (result.purged > 0) await this.#runner.read(() => compactLog(this.#state));
    return result;
  }

  acquireMaintainerLease(request: AcquireMaintainerLeaseRequest): Promise<AcquireMaintainerLeaseResult> {
    return this.#runner.write("acquireMaintainerLease", (undo) => acquireMaintainerLease(this.#state, undo, request));
  }

  releaseMaintainerLease(request: ReleaseMaintainerLeaseRequest): Promise<ReleaseMaintainerLeaseResult> {
    return this.#runner.write("releaseMaintainerLease", (undo) => releaseMaintainerLease(this.#state, undo, request));
  }

  registerObserver(request: RegisterObserverRequest): Promise<RegisterObserverResult> {
    return this.#runner.write("registerObserver", (undo) => registerObserver(this.#state, undo, request));
  }

  removeObserver(request: { readonly observerId: string }): Promise<{ readonly status: "removed" | "notFound" }> {
    return this.#runner.write("removeObserver", (undo) => removeObserver(this.#state, undo, request));
  }

  claimObserverDeliveries(request: ClaimObserverDeliveriesRequest): Promise<ClaimObserverDeliveriesResult> {
    return this.#runner.write("claimObserverDeliveries", (undo) => claimObserverDeliveries(this.#state, undo, request));
  }

  reportObserverDeliveries(request: ReportObserverDeliveriesRequest): Promise<ReportObserverDeliveriesResult> {
    return this.#runner.write("reportObserverDeliveries", (undo) => reportObserverDeliveries(this.#state, undo, request));
  }

  getObserver(observerId: string): Promise<ObserverStatus | null> {
    return this.#runner.read(() => getObserver(this.#state, observerId));
  }

  listObservers(): Promise<readonly ObserverStatus[]> {
    return this.#runner.read(() => listObservers(this.#state));
  }

  listObserverDeadLetters(observerId: string): Promise<readonly ObserverDeadLetter[]> {
    return this.#runner.read(() => listObserverDeadLetters(this.#state, observerId));
  }

  // ---- capabilities and extras (see MemoryStore) ---------------------------------------------

  subscribeHints(listener: HintListener): () => void {
    return this.#runner.subscribeHints(listener);
  }

  setStepHook(hook: StepHook | null): void {
    this.#runner.setStepHook(hook);
  }

  beginTransaction(): MemoryTransaction {
    return this.#runner.beginTransaction();
  }

  transitionsAfter(position: number): Promise<readonly LoggedTransition[]> {
    return this.#runner.read(() => {
      const { log } = this.#state;
      // The log is in position order (compaction only removes entries): find the first one after.
      let lo = 0;
      let hi = log.length;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if (log[mid]!.position <= position) lo = mid + 1;
        else hi = mid;
      }
      return log.slice(lo).map(({ dropped: _dropped, ...entry }) => entry);
    });
  }

  nextActivityAt(): Promise<Instant | null> {
    return this.#runner.read(() => {
      let next: Instant | null = null;
      for (const indexes of [this.#state.due, this.#state.leases]) {
        for (const index of indexes.values()) {
          const first = index.first();
          if (first !== undefined && (next === null || first.at < next)) next = first.at;
        }
      }
      return next;
    });
  }
}
