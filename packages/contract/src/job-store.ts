/**
 * # The Belay Storage Contract
 *
 * Everything a store must do, in one interface. The Core and the shell above it call only
 * these operations; the conformance suite (`@belay/conformance`) proves a store honours them.
 *
 * ## Glossary
 * - **job** — one unit of work: an id, a job name, a JSON payload, a queue and a due time.
 * - **job name** — the stable wire name of a job type; chosen by the developer, never derived
 *   from a function name.
 * - **queue** — every job is in exactly one; workers serve queues in a dispatch order.
 * - **attempt** — rises by one when a job is claimed (only then); reset by an operator requeue.
 * - **lease** — a claimed job belongs to one worker until its lease expires (`leaseExpiresAt`),
 *   renewed by heartbeats. A lease is dead at exactly its expiry instant.
 * - **fence** — (worker id, attempt, live lease). Every write a worker makes about a job applies
 *   only if the job is still leased by that worker at that attempt and the lease is live at
 *   `now`; otherwise it is `stale` and changes nothing. Check and write are one atomic step.
 * - **outcome** — what an execution ended in: succeeded, failed (retry or dead-letter),
 *   cancelled, or unroutable (quarantine).
 * - **transition** — one entry of a job's history: the state it entered, when, at which attempt.
 * - **schedule / tick / cursor** — a cron schedule mints one job per tick; its cursor is the
 *   instant it has been planned up to, moved only by compare-and-set.
 * - **observer** — application code told about transitions, at least once, by walking the
 *   transition log with a cursor under a delivery lease.
 * - **workflow** — a named group of jobs joined by parent edges, enqueued atomically; its status
 *   is derived from its members.
 * - **worker / pump / worker group** — a pump is one claim→run→report loop with its own worker
 *   id; a worker group is a pool of slots serving some queues with one or more pumps.
 * - **maintainer** — the one worker of a cluster that mints schedules, sweeps expired leases and
 *   purges, elected by the store's maintainer lease (taken, renewed, taken over once dead).
 *
 * ## Rules every operation follows
 * 1. **Time comes from the caller.** Each time-dependent operation takes `now`; a store never
 *    reads its own or the database's clock to decide anything.
 * 2. **All or nothing.** Each operation's rows (job, edges, tags, transitions, audit, latches,
 *    output) commit together or not at all, whatever fails in between.
 * 3. **Durable before acknowledged.** When a write resolves, it survives a process kill.
 * 4. **Compare-and-set, never read-then-write,** for every fenced mutation and cursor move.
 * 5. **Bad input is refused loudly:** a rejection result or a typed error naming the field or the
 *    bound (limit and actual size); nothing half-written; never silent truncation (failure
 *    detail excepted). Batch and page sizes clamp to their bounds.
 * 6. **Absent or stale targets are results, not errors** (`notFound`, `stale`).
 * 7. **Retriable conflicts** (serialization failure, deadlock, busy, lost connection, timeout)
 *    throw `TransientStoreError` with nothing committed.
 * 8. **Time-ordered scans use indexes** in bounded batches: due claims, lease expiry, schedule
 *    minting, retention.
 */
import type { Bounds } from "./bounds.js";
import type { StepPoint } from "./errors.js";
import type { EnqueueRequest, EnqueueResult } from "./enqueue.js";
import type { EnqueueThroughRequest, EnqueueWorkflowThroughRequest, EnqueuedThrough, QueryExecutor } from "./through.js";
import type {
  ClaimRequest, ClaimResult, ExpireLeasesRequest, ExpireLeasesResult, HeartbeatRequest, HeartbeatResult, OutcomeResult,
  ReleaseRequest, ReleaseResult, ReportOutcomesRequest,
} from "./execution.js";
import type { HistoryPolicy, JobRecord, TransitionRecord } from "./job.js";
import type {
  DependencyEdges, FacetRequest, FacetValue, JobCount, JobPage, ListJobsRequest, SuggestTagsRequest, TagSuggestionPage,
} from "./monitoring.js";
import type {
  ClaimObserverDeliveriesRequest, ClaimObserverDeliveriesResult, ObserverDeadLetter, ObserverStatus, RegisterObserverRequest,
  RegisterObserverResult, ReportObserverDeliveriesRequest, ReportObserverDeliveriesResult,
} from "./observers.js";
import type {
  AuditPage, CancelResult, JobActionRequest, ListAuditRequest, QueueActionRequest, QueueActionResult, QueueSettings,
  RequeueResult, SetConcurrencyLimitRequest,
} from "./operator.js";
import type {
  AcquireMaintainerLeaseRequest, AcquireMaintainerLeaseResult, ReleaseMaintainerLeaseRequest, ReleaseMaintainerLeaseResult,
} from "./maintainer.js";
import type { PurgeTerminalRequest, PurgeTerminalResult } from "./retention.js";
import type {
  MintDueRequest, MintResult, RemoveScheduleResult, ScheduleRecord, ScheduleWithPayload, TriggerScheduleRequest,
  TriggerScheduleResult, UpsertScheduleRequest, UpsertScheduleResult,
} from "./schedules.js";
import type { EnqueueWorkflowRequest, EnqueueWorkflowResult, ListWorkflowsRequest, WorkflowPage, WorkflowRecord } from "./workflows.js";

/**
 * What a store can do beyond the mandatory contract, and the limits it enforces. Each optional
 * capability has a flag here and methods on {@link JobStore}; a store without the capability
 * either lacks those methods or has them throw (`TransactionNotSupportedError` for a `tx`,
 * `CapabilityNotSupportedError` otherwise) — it never ignores the request.
 */
export interface StoreCapabilities {
  /** A short name for messages and metrics, e.g. `memory`, `sqlite`, `postgres`. */
  readonly name: string;
  /** `enqueue`/`enqueueWorkflow` accept `tx`. Without it, a `tx` throws `TransactionNotSupportedError`. */
  readonly transactionalEnqueue: boolean;
  /** `enqueueThrough`/`enqueueWorkflowThrough` run inside a transaction held by another driver. */
  readonly enqueueThrough: boolean;
  /** `subscribeHints` is implemented. */
  readonly wakeUpHints: boolean;
  /** `setStepHook` is implemented: the test hook the atomicity clauses of the conformance suite use. */
  readonly stepHook: boolean;
  readonly bounds: Readonly<Bounds>;
  /**
   * How much history this store records. Configuration, not schema: stores with different
   * policies (or bounds) may be opened on the same data one after another, without a migration;
   * each records under its own policy, and history already recorded stays readable.
   */
  readonly historyPolicy: HistoryPolicy;
}

/** A lossy "something became due on queue Q" signal. See {@link JobStore.subscribeHints}. */
export type HintListener = (queue: string) => void;

/**
 * A test hook a store calls at each named internal step of a multi-record operation (between
 * two writes of the same transaction). Throwing (e.g. `InjectedFault`) must roll the whole
 * operation back; returning a promise parks the operation, holding whatever it holds, until the
 * promise settles.
 */
export type StepHook = (point: StepPoint) => void | Promise<void>;

/** Result of `migrate()`. */
export interface MigrateResult {
  readonly fromVersion: number;
  readonly toVersion: number;
}

/**
 * The Storage Contract. See the glossary and rules above; each method says what it guarantees.
 * Every method checks its request first and throws `InvalidInputError` (or a bound error) naming
 * the field for a malformed one (not an array, `now` not an integer, …), writing nothing. The
 * checks are the contract's own (`checkedJobStore`): a store implements the operations and gets
 * the same checks, in the same order, as every other store.
 */
export interface JobStore {
  /** What this store can do and the bounds it enforces. Fixed for the store's lifetime. */
  readonly capabilities: StoreCapabilities;

  /**
   * Creates or upgrades the schema to the version this store knows. Concurrent callers serialize
   * on a database lock and re-check the version, so the schema is created once: exactly one of
   * them reports `fromVersion` 0 on a fresh database, the others the version it created. Throws
   * `SchemaVersionError` when the database is at a newer version than the store knows. Before the
   * schema exists every other operation throws `SchemaNotMigratedError`, writing nothing; against
   * a newer schema that requires a newer store, `SchemaVersionError`.
   */
  migrate(): Promise<MigrateResult>;

  /** Releases connections and listeners. Later calls throw `StoreClosedError`. */
  close(): Promise<void>;

  // ---- enqueue -------------------------------------------------------------------------------

  /**
   * Enqueues jobs, all or nothing. Per job, in input order: `created` (state `scheduled`;
   * `awaitingParents` while a parent is live; `cancelled` at once when an `onSuccess` parent
   * already ended other than succeeded), `duplicate` (the id exists: the existing job is returned
   * unchanged, never overwritten — also for a repeat inside one call), or `rejected` (bounds,
   * malformed fields, unknown parent — then nothing is written and the others read `notWritten`).
   * A job's row, edges, tags and first transition commit together.
   */
  enqueue(request: EnqueueRequest): Promise<readonly EnqueueResult[]>;

  /**
   * Enqueues a workflow and all its members atomically. Members may come in any order; every
   * parent must be a member (containment). Workflow ids are idempotent like job ids.
   *
   * A faulty workflow is answered with the first fault in a fixed order: the workflow's own
   * fields (id, name, member count); an existing workflow id (`duplicate`); then the members in
   * input order, each by its own fields, then an id repeating an earlier member's, then an id
   * another job holds (`BELAY_JOB_EXISTS`); then containment, members in input order; then a
   * cycle. Concurrent calls answer as some serial order would: of two calls with one workflow id
   * one is `created` and the other `duplicate`; of two workflows sharing a member id one is
   * `created` and the other `rejected` with `BELAY_JOB_EXISTS` — never an error.
   */
  enqueueWorkflow(request: EnqueueWorkflowRequest): Promise<EnqueueWorkflowResult>;

  // ---- execution -----------------------------------------------------------------------------

  /**
   * Claims up to `max` (clamped to `bounds.claimBatch`) due jobs: queues in the given order,
   * oldest due first within a queue (ties: enqueue order), paused queues skipped, each queue's
   * concurrency limit honoured (usage = its leased jobs). Each claimed job becomes `leased` by
   * `workerId`, attempt + 1, lease to `now + leaseMs`, one transition. Concurrent claimers never
   * receive the same job, and together never lease more of a queue than its limit. The result
   * lists the jobs in that same order: queue by queue as requested, within a queue oldest due
   * first, ties in enqueue order (`seq`).
   */
  claim(request: ClaimRequest): Promise<ClaimResult>;

  /**
   * Applies a batch of fenced outcomes; each row applies or is `stale` on its own, and the batch
   * is one transaction. `succeeded` stores the output; `failed` reschedules at `retryAt` or
   * dead-letters when it is `null`; `cancelled` cancels; `unroutable` quarantines. A job with a
   * pending cancel request that would be rescheduled is cancelled instead. Terminal jobs resolve
   * their children's latches (and `onSuccess` cancellation cascades, to grandchildren and
   * beyond) in the same transaction. Added tags ride the same fence. A batch is answered row by
   * row whatever its size: `bounds.claimBatch` clamps claims, never a report (nor a heartbeat or
   * a release), so no outcome is ever dropped. Parents ending at the same time as children are
   * enqueued, or as other parents of the same children end, leave every child as some serial
   * order would — never waiting on parents that have all ended — and never deadlock.
   */
  reportOutcomes(request: ReportOutcomesRequest): Promise<readonly OutcomeResult[]>;

  /**
   * Renews each fenced lease to `now + leaseMs` and reports whether cancellation was requested;
   * a lease that is no longer the caller's (or has expired at `now`) is `lost`.
   */
  heartbeat(request: HeartbeatRequest): Promise<readonly HeartbeatResult[]>;

  /**
   * Fenced graceful release: each job goes back to `scheduled`, due `now`, without counting the
   * attempt against the retry ceiling (`releases` + 1). For a worker that stops before its
   * handlers finish, so a deploy neither burns attempts nor waits for lease expiry.
   */
  release(request: ReleaseRequest): Promise<readonly ReleaseResult[]>;

  /**
   * Disposes of up to `max` leases with expiry ≤ `now` (oldest first, in `queues` if given): an
   * expiry counts as an attempt, so the job is rescheduled after the retry delay, dead-lettered
   * at the ceiling, or cancelled if cancellation was requested — under the job's own retry policy
   * when it has one, else `request.retry` (`leaseExpiryDisposition`). Each lease is disposed of
   * exactly once even with concurrent sweepers. Reads a lease-expiry index, never a full scan.
   */
  expireLeases(request: ExpireLeasesRequest): Promise<ExpireLeasesResult>;

  // ---- schedules -----------------------------------------------------------------------------

  /** Creates a schedule (cursor = `now`) or redefines one, keeping its cursor and skipped ticks. */
  upsertSchedule(request: UpsertScheduleRequest): Promise<UpsertScheduleResult>;

  /** Removes a schedule; nothing is minted for it afterwards. Its minted jobs stay. */
  removeSchedule(request: { readonly scheduleId: string }): Promise<RemoveScheduleResult>;

  /** Every schedule (without payloads), by id. */
  listSchedules(): Promise<readonly ScheduleRecord[]>;

  /** One schedule with its payload, or `null`. */
  getSchedule(scheduleId: string): Promise<ScheduleWithPayload | null>;

  /**
   * Applies the Core's mint decisions. Per decision, atomically: compare-and-set the cursor
   * (mismatch → `stale`, nothing applied), record skipped ticks (newest `bounds.skippedTicksKept`
   * kept), and insert one job per tick with id `scheduledJobId(scheduleId, tick)`, due at the
   * tick; a tick whose job already exists is not minted again.
   */
  mintDue(request: MintDueRequest): Promise<readonly MintResult[]>;

  /** Mints one extra instance due `now`, leaving the cursor alone; audited. */
  triggerSchedule(request: TriggerScheduleRequest): Promise<TriggerScheduleResult>;

  // ---- operator actions (each appends an audit record with its effect) ---------------------

  /**
   * Cancels a live job: a scheduled or awaiting job at once (its `onSuccess` children cascade);
   * a leased job cooperatively — the request rides the next heartbeat answer, and a retryable
   * failure or a lease expiry then ends the job cancelled instead of rescheduled. Terminal jobs
   * are left alone (`notCancellable`).
   */
  cancelJob(request: JobActionRequest): Promise<CancelResult>;
  /**
   * Puts a dead-lettered or quarantined job back to `scheduled`, due `now`, attempt reset to 0
   * (its children re-gated). Other states are left alone and say so.
   */
  requeueJob(request: JobActionRequest): Promise<RequeueResult>;
  /** Claims skip a paused queue; leased jobs of it are left alone. */
  pauseQueue(request: QueueActionRequest): Promise<QueueActionResult>;
  /** Lets claims take the queue's due jobs again. */
  resumeQueue(request: QueueActionRequest): Promise<QueueActionResult>;
  /**
   * Sets (or, with `null`, removes) the queue's cluster-wide concurrency limit: claims never
   * lease more of its jobs at once. Lowering it below the current usage revokes nothing.
   */
  setConcurrencyLimit(request: SetConcurrencyLimitRequest): Promise<QueueActionResult>;
  /** The audit trail of operator actions, filtered by target, with keyset paging. */
  listAuditRecords(request?: ListAuditRequest): Promise<AuditPage>;

  // ---- monitoring reads (committed effects only) ------------------------------------------

  /** The job with its payload, or `null` when the store holds no job with this id. */
  getJob(jobId: string): Promise<JobRecord | null>;
  /** The output a succeeded job returned, as JSON text; `null` when none or unknown. */
  getJobOutput(jobId: string): Promise<string | null>;
  /** The job's transitions, oldest first; empty for an unknown job or with history off. */
  getJobHistory(jobId: string): Promise<readonly TransitionRecord[]>;
  /** Filtered listing with keyset paging in either direction. */
  listJobs(request?: ListJobsRequest): Promise<JobPage>;
  /** Jobs per (queue, state). */
  countJobs(): Promise<readonly JobCount[]>;
  /** Every queue with stored settings. */
  listQueueSettings(): Promise<readonly QueueSettings[]>;
  /** A job's parents and children with their states; `null` for an unknown job. */
  getDependencies(jobId: string): Promise<DependencyEdges | null>;
  /** Distinct-job counts per value of one tag key (`""` = labels) within a scope. */
  facetTags(request: FacetRequest): Promise<readonly FacetValue[]>;
  /**
   * Prefix completion over every tag in the store: without `key`, labels then keys; with a key,
   * that key's values. The empty key is the labels' key: `key: ""` offers labels only (never keys
   * nor keyed values), as `value` suggestions of the key `""`.
   */
  suggestTags(request: SuggestTagsRequest): Promise<TagSuggestionPage>;

  // ---- workflows -----------------------------------------------------------------------------

  /** The workflow with its members' states and derived status, or `null`. */
  getWorkflow(workflowId: string): Promise<WorkflowRecord | null>;
  /**
   * Oldest first: in enqueue order (store-assigned, as `listJobs`'s `seq`). `createdAt` is the
   * enqueuing caller's `now` and does not reorder the list. Each record carries the derived
   * status and member counts, as `getWorkflow` does.
   */
  listWorkflows(request?: ListWorkflowsRequest): Promise<WorkflowPage>;

  // ---- retention -----------------------------------------------------------------------------

  /** Deletes up to `max` terminal jobs of one class that ended before `before`; see the result type. */
  purgeTerminal(request: PurgeTerminalRequest): Promise<PurgeTerminalResult>;

  // ---- the maintainer lease -------------------------------------------------------------------

  /**
   * Takes or renews the store's one maintainer lease for `holder`, to `now + leaseMs`, when it is
   * free, dead at `now`, or already `holder`'s (`decideMaintainerLease`, the one rule); otherwise
   * answers `heldByOther` with the live holder and its expiry. Atomic: of concurrent candidates
   * for a free or dead lease exactly one is granted. A renewal runs to `now + leaseMs` exactly.
   */
  acquireMaintainerLease(request: AcquireMaintainerLeaseRequest): Promise<AcquireMaintainerLeaseResult>;

  /**
   * Frees the maintainer lease at once if `holder` holds it (a clean shutdown, so a standby takes
   * over on its next try instead of after expiry); `notHeld` and nothing changed otherwise.
   */
  releaseMaintainerLease(request: ReleaseMaintainerLeaseRequest): Promise<ReleaseMaintainerLeaseResult>;

  // ---- observers -----------------------------------------------------------------------------

  /**
   * Registers an observer (or redefines its subscription, keeping its cursor). A new observer
   * starts at the end of the transition log unless `startAt` says `beginning`.
   */
  registerObserver(request: RegisterObserverRequest): Promise<RegisterObserverResult>;
  /** Removes an observer with its cursor, pending deliveries and dead letters. */
  removeObserver(request: { readonly observerId: string }): Promise<{ readonly status: "removed" | "notFound" }>;
  /** Takes (or renews) the observer's delivery lease and hands out the next transitions. */
  claimObserverDeliveries(request: ClaimObserverDeliveriesRequest): Promise<ClaimObserverDeliveriesResult>;
  /**
   * Records delivery outcomes under the lease fence and advances the cursor over the contiguous
   * prefix that is resolved or not subscribed. A stale deliverer changes nothing.
   */
  reportObserverDeliveries(request: ReportObserverDeliveriesRequest): Promise<ReportObserverDeliveriesResult>;
  /** One observer's cursor, lease, lag and dead-letter count, or `null`. */
  getObserver(observerId: string): Promise<ObserverStatus | null>;
  /** Every observer, by id. */
  listObservers(): Promise<readonly ObserverStatus[]>;
  /** The transitions an observer gave up on, oldest first; empty for an unknown observer. */
  listObserverDeadLetters(observerId: string): Promise<readonly ObserverDeadLetter[]>;

  // ---- optional capabilities (see StoreCapabilities) ------------------------------------------

  /**
   * Subscribes to wake-up hints (only when `capabilities.wakeUpHints`). Hints are lossy and only
   * make a worker poll sooner: the system behaves the same, minus latency, if every hint is
   * dropped, duplicated or delayed. Returns the unsubscribe function: once it is called the
   * listener is never called again (calling it twice is harmless). A listener that throws fails
   * no write and keeps no other listener from hearing.
   */
  subscribeHints?(listener: HintListener): () => void;

  /**
   * `enqueue` inside a transaction held open by another driver (only when
   * `capabilities.enqueueThrough`): `executor` runs the store's statements on that transaction's
   * connection, under a savepoint, so a rejected call leaves the transaction usable. The jobs
   * exist if and only if the transaction commits; `afterCommit()` of the result sends the hints.
   */
  enqueueThrough?(executor: QueryExecutor, request: EnqueueThroughRequest): Promise<EnqueuedThrough<readonly EnqueueResult[]>>;

  /** `enqueueWorkflow` inside a caller's transaction; see {@link enqueueThrough}. */
  enqueueWorkflowThrough?(executor: QueryExecutor, request: EnqueueWorkflowThroughRequest): Promise<EnqueuedThrough<EnqueueWorkflowResult>>;

  /**
   * Test hook (only when `capabilities.stepHook`): installs, or with `null` removes, a function
   * the store calls at each named internal step of every write, inside its transaction. See
   * {@link StepHook}. Never install one in production.
   */
  setStepHook?(hook: StepHook | null): void;
}
