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
  type HistoryPolicy,
  type Instant,
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
  compareCodePoints,
  requireArray,
  requireId,
  requireInstant,
  refusedEnqueue,
  resolveBounds,
} from "@belay/contract";
import { toRecord } from "./jobs.js";
import { MemoryTransaction } from "./memory-transaction.js";
import { Mutex } from "./mutex.js";
import { planMemoryEnqueue, writeEnqueue } from "./ops/enqueue.js";
import { claim, expireLeases, heartbeat, release, reportOutcomes } from "./ops/execution.js";
import {
  countJobs,
  facetTags,
  getDependencies,
  listJobs,
  suggestTags,
} from "./ops/monitoring.js";
import {
  claimObserverDeliveries,
  observerStatus,
  registerObserver,
  reportObserverDeliveries,
} from "./ops/observers.js";
import { cancelJob, changeQueue, listAuditRecords, listQueueSettings, requeueJob } from "./ops/operator.js";
import { purgeTerminal } from "./ops/retention.js";
import { mintDue, toScheduleRecord, toScheduleWithPayload, triggerSchedule, upsertSchedule } from "./ops/schedules.js";
import { listWorkflows, planWorkflow, toWorkflowRecord, writeWorkflow } from "./ops/workflows.js";
import { MemoryState } from "./state.js";
import { UndoLog } from "./undo-log.js";

/** Options of {@link MemoryStore}. */
export interface MemoryStoreOptions {
  /** Overrides of the default bounds. */
  readonly bounds?: Partial<Bounds>;
  /** Default `transitionsAndFailureDetail`. */
  readonly historyPolicy?: HistoryPolicy;
  /**
   * Emit in-process wake-up hints after each write that made a job due (default false, as the
   * design has it for this store; the test harness turns them on so idle workers react at once).
   */
  readonly wakeUpHints?: boolean;
}

/** A write that can be replayed: what a transaction buffers until it commits. */
type Write<T> = (undo: UndoLog) => Promise<T>;

/**
 * The in-memory reference store: every operation of the Storage Contract on plain data
 * structures, deterministic (no clock, no randomness, stable iteration order), with time-ordered
 * indexes for due jobs, leases and terminal jobs so its costs do not grow with finished jobs.
 * For tests, local development and the simulator — never production: nothing survives the
 * process.
 *
 * @example
 * ```ts
 * const store = new MemoryStore();
 * await store.migrate();
 * await store.enqueue({
 *   jobs: [{ id: "j1", jobName: "email.send", queue: "default", payload: "{}", dueAt: 0 }],
 *   now: 0,
 * });
 * const { jobs } = await store.claim({ workerId: "w1", queues: ["default"], max: 10, leaseMs: 60_000, now: 0 });
 * ```
 */
export class MemoryStore implements JobStore {
  readonly capabilities: StoreCapabilities;
  readonly #state: MemoryState;
  readonly #mutex = new Mutex();
  #hook: StepHook | null = null;
  #closed = false;
  readonly #hintListeners = new Set<HintListener>();

  constructor(options: MemoryStoreOptions = {}) {
    const bounds = resolveBounds(options.bounds);
    const historyPolicy = options.historyPolicy ?? "transitionsAndFailureDetail";
    if (!["off", "transitions", "transitionsAndFailureDetail"].includes(historyPolicy)) {
      throw new InvalidInputError("historyPolicy", "must be off, transitions or transitionsAndFailureDetail");
    }
    this.#state = new MemoryState(bounds, historyPolicy);
    if (options.wakeUpHints) {
      this.subscribeHints = (listener) => {
        this.#hintListeners.add(listener);
        return () => void this.#hintListeners.delete(listener);
      };
    }
    this.capabilities = Object.freeze({
      name: "memory",
      transactionalEnqueue: true,
      enqueueThrough: false,
      stepHook: true,
      wakeUpHints: options.wakeUpHints ?? false,
      bounds,
      historyPolicy,
    });
  }

  /** Present only when constructed with `wakeUpHints: true`. */
  subscribeHints?: (listener: HintListener) => () => void;

  /**
   * Installs (or, with `null`, removes) a test hook called at each internal step of every write:
   * throw from it to prove the operation leaves nothing behind; return a promise to park the
   * operation (which holds the store's lock) until it settles.
   */
  setStepHook(hook: StepHook | null): void {
    this.#hook = hook;
  }

  /** Opens a transaction for `enqueue`/`enqueueWorkflow` (`tx`); its jobs exist once it commits. */
  beginTransaction(): MemoryTransaction {
    this.#assertOpen();
    return new MemoryTransaction(this, (writes) => this.#commit(writes));
  }

  /**
   * The earliest instant after which something will change on its own: a scheduled job falling
   * due or a lease expiring. `null` when nothing is pending. For virtual-time harnesses.
   */
  async nextActivityAt(): Promise<Instant | null> {
    return this.#read(() => {
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

  async migrate(): Promise<MigrateResult> {
    this.#assertOpen();
    return { fromVersion: 1, toVersion: 1 };
  }

  async close(): Promise<void> {
    this.#closed = true;
  }

  // ---- enqueue -------------------------------------------------------------------------------

  async enqueue(request: EnqueueRequest): Promise<readonly EnqueueResult[]> {
    requireArray(request?.jobs, "jobs");
    requireInstant(request.now, "now");
    const write: Write<EnqueueResult[]> = async (undo) => {
      const planned = planMemoryEnqueue(this.#state, request.jobs);
      if (planned.some((p) => p.kind === "rejected")) return refusedEnqueue(planned);
      return writeEnqueue(this.#state, undo, planned, request.now);
    };
    if (request.tx !== undefined) {
      return this.#inTransaction(request.tx, write, (results) => !results.some((r) => r.status === "rejected"));
    }
    return this.#write("enqueue", write);
  }

  async enqueueWorkflow(request: EnqueueWorkflowRequest): Promise<EnqueueWorkflowResult> {
    if (typeof request?.workflow !== "object" || request.workflow === null) {
      throw new InvalidInputError("workflow", "must be an object");
    }
    requireInstant(request.now, "now");
    const write: Write<EnqueueWorkflowResult> = async (undo) => {
      const plan = planWorkflow(this.#state, request.workflow);
      if (!plan.ok) return plan.result;
      return writeWorkflow(this.#state, undo, request.workflow, plan.members, request.now);
    };
    if (request.tx !== undefined) return this.#inTransaction(request.tx, write, (r) => r.status === "created");
    return this.#write("enqueueWorkflow", write);
  }

  // ---- execution -----------------------------------------------------------------------------

  async claim(request: ClaimRequest): Promise<ClaimResult> {
    assertClaimRequest(request, this.#state.bounds);
    return this.#write("claim", (undo) => claim(this.#state, undo, request));
  }

  async reportOutcomes(request: ReportOutcomesRequest): Promise<readonly OutcomeResult[]> {
    assertReportOutcomesRequest(request, this.#state.bounds);
    return this.#write("reportOutcomes", (undo) => reportOutcomes(this.#state, undo, request.reports, request.now));
  }

  async heartbeat(request: HeartbeatRequest): Promise<readonly HeartbeatResult[]> {
    assertHeartbeatRequest(request, this.#state.bounds);
    return this.#write("heartbeat", (undo) => heartbeat(this.#state, undo, request));
  }

  async release(request: ReleaseRequest): Promise<readonly ReleaseResult[]> {
    assertReleaseRequest(request, this.#state.bounds);
    return this.#write("release", (undo) => release(this.#state, undo, request));
  }

  async expireLeases(request: ExpireLeasesRequest): Promise<ExpireLeasesResult> {
    assertExpireLeasesRequest(request, this.#state.bounds);
    return this.#write("expireLeases", async (undo) => ({ expired: await expireLeases(this.#state, undo, request) }));
  }

  // ---- schedules -----------------------------------------------------------------------------

  async upsertSchedule(request: UpsertScheduleRequest): Promise<UpsertScheduleResult> {
    assertScheduleDefinition(request?.schedule, this.#state.bounds);
    requireInstant(request.now, "now");
    return this.#write("upsertSchedule", async (undo) => upsertSchedule(this.#state, undo, request.schedule, request.now));
  }

  async removeSchedule(request: { readonly scheduleId: string }): Promise<RemoveScheduleResult> {
    requireId(request?.scheduleId, "scheduleId", this.#state.bounds);
    return this.#write("removeSchedule", async (undo) => {
      if (!this.#state.schedules.has(request.scheduleId)) return { status: "notFound" };
      undo.mapDelete(this.#state.schedules, request.scheduleId);
      return { status: "removed" };
    });
  }

  async listSchedules(): Promise<readonly ScheduleRecord[]> {
    return this.#read(() =>
      [...this.#state.schedules.values()]
        .sort((a, b) => compareCodePoints(a.id, b.id))
        .map((row) => toScheduleRecord(this.#state, row)),
    );
  }

  async getSchedule(scheduleId: string): Promise<ScheduleWithPayload | null> {
    return this.#read(() => {
      const row = this.#state.schedules.get(scheduleId);
      return row ? toScheduleWithPayload(this.#state, row) : null;
    });
  }

  async mintDue(request: MintDueRequest): Promise<readonly MintResult[]> {
    assertMintDueRequest(request, this.#state.bounds);
    return this.#write("mintDue", (undo) => mintDue(this.#state, undo, request.decisions, request.now));
  }

  async triggerSchedule(request: TriggerScheduleRequest): Promise<TriggerScheduleResult> {
    assertTriggerScheduleRequest(request, this.#state.bounds);
    return this.#write("triggerSchedule", (undo) => triggerSchedule(this.#state, undo, request));
  }

  // ---- operator actions ----------------------------------------------------------------------

  async cancelJob(request: JobActionRequest): Promise<CancelResult> {
    assertJobActionRequest(request, this.#state.bounds);
    return this.#write("cancelJob", (undo) => cancelJob(this.#state, undo, request));
  }

  async requeueJob(request: JobActionRequest): Promise<RequeueResult> {
    assertJobActionRequest(request, this.#state.bounds);
    return this.#write("requeueJob", (undo) => requeueJob(this.#state, undo, request));
  }

  async pauseQueue(request: QueueActionRequest): Promise<QueueActionResult> {
    assertQueueActionRequest(request, this.#state.bounds);
    return this.#queueAction("pauseQueue", request, { paused: true }, "paused");
  }

  async resumeQueue(request: QueueActionRequest): Promise<QueueActionResult> {
    assertQueueActionRequest(request, this.#state.bounds);
    return this.#queueAction("resumeQueue", request, { paused: false }, "resumed");
  }

  async setConcurrencyLimit(request: SetConcurrencyLimitRequest): Promise<QueueActionResult> {
    assertSetConcurrencyLimitRequest(request, this.#state.bounds);
    const detail = request.limit === null ? "limit=none" : `limit=${request.limit}`;
    return this.#queueAction("setConcurrencyLimit", request, { concurrencyLimit: request.limit }, detail);
  }

  async listAuditRecords(request: ListAuditRequest = {}): Promise<AuditPage> {
    assertListAuditRequest(request);
    return this.#read(() => listAuditRecords(this.#state, request));
  }

  // ---- monitoring reads ----------------------------------------------------------------------

  async getJob(jobId: string): Promise<JobRecord | null> {
    return this.#read(() => {
      const row = this.#state.jobs.get(jobId);
      return row ? toRecord(row) : null;
    });
  }

  async getJobOutput(jobId: string): Promise<string | null> {
    return this.#read(() => this.#state.jobs.get(jobId)?.output ?? null);
  }

  async getJobHistory(jobId: string): Promise<readonly TransitionRecord[]> {
    return this.#read(() =>
      (this.#state.jobs.get(jobId)?.transitions ?? []).map((e) => ({
        jobId: e.jobId,
        ordinal: e.ordinal,
        position: e.position,
        at: e.at,
        state: e.state,
        attempt: e.attempt,
        failureDetail: e.failureDetail,
      })),
    );
  }

  async listJobs(request: ListJobsRequest = {}): Promise<JobPage> {
    assertListJobsRequest(request, this.#state.bounds);
    return this.#read(() => listJobs(this.#state, request));
  }

  async countJobs(): Promise<readonly JobCount[]> {
    return this.#read(() => countJobs(this.#state));
  }

  async listQueueSettings(): Promise<readonly QueueSettings[]> {
    return this.#read(() => listQueueSettings(this.#state));
  }

  async getDependencies(jobId: string): Promise<DependencyEdges | null> {
    return this.#read(() => getDependencies(this.#state, jobId));
  }

  async facetTags(request: FacetRequest): Promise<readonly FacetValue[]> {
    if (typeof request?.key !== "string") throw new InvalidInputError("key", "must be a string");
    if (request.scope !== undefined) assertJobFilter(request.scope, "scope", this.#state.bounds);
    if (request.max !== undefined && (!Number.isSafeInteger(request.max) || request.max < 1)) {
      throw new InvalidInputError("max", "must be an integer ≥ 1");
    }
    return this.#read(() => facetTags(this.#state, request));
  }

  async suggestTags(request: SuggestTagsRequest): Promise<TagSuggestionPage> {
    if (typeof request?.prefix !== "string") throw new InvalidInputError("prefix", "must be a string");
    if (request.key !== undefined && typeof request.key !== "string") throw new InvalidInputError("key", "must be a string");
    if (request.max !== undefined && (!Number.isSafeInteger(request.max) || request.max < 1)) {
      throw new InvalidInputError("max", "must be an integer ≥ 1");
    }
    return this.#read(() => suggestTags(this.#state, request));
  }

  // ---- workflows -----------------------------------------------------------------------------

  async getWorkflow(workflowId: string): Promise<WorkflowRecord | null> {
    return this.#read(() => {
      const row = this.#state.workflows.get(workflowId);
      return row ? toWorkflowRecord(this.#state, row) : null;
    });
  }

  async listWorkflows(request: ListWorkflowsRequest = {}): Promise<WorkflowPage> {
    if (request.limit !== undefined && (!Number.isSafeInteger(request.limit) || request.limit < 1)) {
      throw new InvalidInputError("limit", "must be an integer ≥ 1");
    }
    return this.#read(() => listWorkflows(this.#state, request));
  }

  // ---- retention -----------------------------------------------------------------------------

  async purgeTerminal(request: PurgeTerminalRequest): Promise<PurgeTerminalResult> {
    assertPurgeTerminalRequest(request);
    const purged = await this.#write("purgeTerminal", (undo) => purgeTerminal(this.#state, undo, request));
    if (purged > 0) await this.#read(() => this.#compactLog());
    return { purged };
  }

  // ---- observers -----------------------------------------------------------------------------

  async registerObserver(request: RegisterObserverRequest): Promise<RegisterObserverResult> {
    assertRegisterObserverRequest(request, this.#state.bounds);
    return this.#write("registerObserver", async (undo) => registerObserver(this.#state, undo, request));
  }

  async removeObserver(request: { readonly observerId: string }): Promise<{ readonly status: "removed" | "notFound" }> {
    requireId(request?.observerId, "observerId", this.#state.bounds);
    return this.#write("removeObserver", async (undo) => {
      if (!this.#state.observers.has(request.observerId)) return { status: "notFound" };
      undo.mapDelete(this.#state.observers, request.observerId);
      return { status: "removed" };
    });
  }

  async claimObserverDeliveries(request: ClaimObserverDeliveriesRequest): Promise<ClaimObserverDeliveriesResult> {
    assertClaimObserverDeliveriesRequest(request, this.#state.bounds);
    return this.#write("claimObserverDeliveries", async (undo) => claimObserverDeliveries(this.#state, undo, request));
  }

  async reportObserverDeliveries(request: ReportObserverDeliveriesRequest): Promise<ReportObserverDeliveriesResult> {
    assertReportObserverDeliveriesRequest(request, this.#state.bounds);
    return this.#write("reportObserverDeliveries", (undo) => reportObserverDeliveries(this.#state, undo, request));
  }

  async getObserver(observerId: string): Promise<ObserverStatus | null> {
    return this.#read(() => {
      const row = this.#state.observers.get(observerId);
      return row ? observerStatus(this.#state, row) : null;
    });
  }

  async listObservers(): Promise<readonly ObserverStatus[]> {
    return this.#read(() =>
      [...this.#state.observers.entries()]
        .sort(([a], [b]) => compareCodePoints(a, b))
        .map(([, row]) => observerStatus(this.#state, row)),
    );
  }

  async listObserverDeadLetters(observerId: string): Promise<readonly ObserverDeadLetter[]> {
    return this.#read(() => [...(this.#state.observers.get(observerId)?.deadLetters ?? [])]);
  }

  // ---- internals -----------------------------------------------------------------------------

  #assertOpen(): void {
    if (this.#closed) throw new StoreClosedError();
  }

  /** Runs a write under the lock; anything it throws undoes all its mutations. */
  async #write<T>(operation: string, body: Write<T>): Promise<T> {
    this.#assertOpen();
    return this.#mutex.run(async () => {
      const undo = new UndoLog(operation, this.#hook);
      try {
        const result = await body(undo);
        await undo.step("commit");
        this.#emitHints();
        return result;
      } catch (error) {
        undo.rollback();
        this.#state.dueQueues.clear();
        throw error;
      }
    });
  }

  /** Tells hint listeners about queues the committed write made due (lossy by contract). */
  #emitHints(): void {
    const queues = [...this.#state.dueQueues];
    this.#state.dueQueues.clear();
    for (const queue of queues) {
      for (const listener of this.#hintListeners) {
        try {
          listener(queue);
        } catch {
          // A failing listener must not fail the committed write.
        }
      }
    }
  }

  async #read<T>(body: () => T): Promise<T> {
    this.#assertOpen();
    return this.#mutex.run(body);
  }

  async #queueAction(
    operation: "pauseQueue" | "resumeQueue" | "setConcurrencyLimit",
    request: QueueActionRequest,
    changes: { paused?: boolean; concurrencyLimit?: number | null },
    detail: string,
  ): Promise<QueueActionResult> {
    await this.#write(operation, (undo) =>
      changeQueue(this.#state, undo, request.queue, changes, {
        actor: request.actor,
        action: operation,
        detail,
        at: request.now,
      }),
    );
    return { status: "applied" };
  }

  /**
   * Runs a transactional write against the current state plus the transaction's earlier writes,
   * to compute its results, then undoes it all: a transaction's jobs stay invisible until commit,
   * which replays them for real.
   */
  async #inTransaction<T>(tx: unknown, write: Write<T>, keep: (result: T) => boolean): Promise<T> {
    const transaction = MemoryTransaction.assertUsable(tx, this);
    return this.#mutex.run(async () => {
      const undo = new UndoLog("transaction", null);
      try {
        for (const earlier of transaction.writes) await earlier(undo);
        const result = await write(undo);
        if (keep(result)) transaction.writes.push(write);
        return result;
      } finally {
        undo.rollback();
        this.#state.dueQueues.clear();
      }
    });
  }

  async #commit(writes: readonly Write<unknown>[]): Promise<void> {
    await this.#write("commit", async (undo) => {
      for (const write of writes) {
        const result = await write(undo);
        const rejected = Array.isArray(result)
          ? result.some((r: EnqueueResult) => r.status === "rejected")
          : (result as EnqueueWorkflowResult).status === "rejected";
        if (rejected) MemoryTransaction.conflict(result);
      }
    });
  }

  /** Drops log entries no reader can reach any more (capped away or purged). */
  #compactLog(): void {
    const { log } = this.#state;
    const kept = log.filter((e) => !e.dropped);
    if (kept.length === log.length) return;
    log.length = 0;
    for (const entry of kept) log.push(entry);
  }
}
