import type {
  AuditRecord, Bounds, CatchUpPolicy, DependencyMode, HistoryPolicy, Instant, JobState, MaintainerLease, ObserverDeadLetter,
  ObserverSubscription, RetentionClass, RetryDisposition, Tag, TransitionCause,
} from "@belay/contract";
import { SortedIndex } from "./sorted-index.js";

/** A job as the memory store holds it. Arrays are replaced, never mutated, so undo can restore them. */
export interface JobRow {
  readonly id: string;
  readonly seq: number;
  readonly jobName: string;
  readonly queue: string;
  readonly payload: string;
  state: JobState;
  dueAt: Instant;
  attempt: number;
  releases: number;
  leaseOwner: string | null;
  leaseExpiresAt: Instant | null;
  cancelRequested: boolean;
  /** Who asked for the pending cancel, for the terminal cause. */
  cancelRequestedBy: string | null;
  readonly enqueuedAt: Instant;
  terminalAt: Instant | null;
  terminalCause: string | null;
  readonly parentIds: readonly string[];
  readonly dependencyMode: DependencyMode;
  /** Parents not yet terminal (the latch). */
  parentsRemaining: number;
  /** Jobs that named this one as a parent. */
  children: readonly string[];
  tags: readonly Tag[];
  readonly traceContext: string | null;
  readonly scheduleId: string | null;
  readonly workflowId: string | null;
  /** The job's own retry policy (frozen), written at insert and never changed. */
  readonly retry: RetryDisposition | null;
  output: string | null;
  /** This job's transitions, oldest first, at most `bounds.transitionsPerJob`. */
  transitions: readonly LogEntry[];
  /** Transitions ever recorded for this job (ordinals keep counting past dropped entries). */
  transitionCount: number;
}

/** One transition in the store-wide log. `dropped` once capped away or purged with its job. */
export interface LogEntry {
  readonly position: number;
  readonly jobId: string;
  readonly ordinal: number;
  readonly at: Instant;
  readonly state: JobState;
  readonly cause: TransitionCause;
  /** The worker whose write this was (for an expiry, the lapsed lease's owner). */
  readonly workerId: string | null;
  readonly attempt: number;
  readonly failureDetail: string | null;
  readonly jobName: string;
  readonly queue: string;
  dropped: boolean;
}

export interface ScheduleRow {
  readonly id: string;
  cron: string;
  timeZone: string;
  jobName: string;
  queue: string;
  payload: string;
  tags: readonly Tag[];
  catchUp: CatchUpPolicy;
  noOverlap: boolean;
  /** The retry policy its jobs carry (frozen), replaced by each upsert. */
  retry: RetryDisposition | null;
  cursor: Instant;
  skippedTicks: readonly Instant[];
  readonly createdAt: Instant;
  updatedAt: Instant;
}

export interface QueueRow {
  readonly queue: string;
  paused: boolean;
  concurrencyLimit: number | null;
}

export interface WorkflowRow {
  readonly id: string;
  readonly name: string;
  readonly createdAt: Instant;
  readonly seq: number;
  memberIds: readonly string[];
}

/** One observer's delivery bookkeeping for one transition. */
export interface DeliveryRow {
  readonly attempts: number;
  readonly resolution: "pending" | "delivered" | "deadLettered";
  readonly nextAttemptAt: Instant | null;
}

export interface ObserverRow {
  subscription: ObserverSubscription;
  cursor: number;
  leaseOwner: string | null;
  leaseExpiresAt: Instant | null;
  readonly deliveries: Map<number, DeliveryRow>;
  readonly deadLetters: ObserverDeadLetter[];
}

/** Everything the memory store holds. Mutated only through an `UndoLog`. */
export class MemoryState {
  readonly jobs = new Map<string, JobRow>();
  /** Every job by (0, seq): the order of listings. */
  readonly bySeq = new SortedIndex();
  /** Scheduled jobs per queue by (dueAt, seq): what claims read. */
  readonly due = new Map<string, SortedIndex>();
  /** Leased jobs per queue by (leaseExpiresAt, seq): expiry sweeps and concurrency usage. */
  readonly leases = new Map<string, SortedIndex>();
  /** Terminal jobs per retention class by (terminalAt, seq): what purges read. */
  readonly terminal = new Map<RetentionClass, SortedIndex>([
    ["succeededOrCancelled", new SortedIndex()],
    ["deadLetteredOrQuarantined", new SortedIndex()],
  ]);
  /** Jobs per `${queue}\u0000${state}`. */
  readonly counts = new Map<string, number>();
  /** Jobs per `${key}\u0000${value}`, for suggestions. */
  readonly tagJobs = new Map<string, number>();
  /** Live (non-terminal) instances per schedule. */
  readonly liveInstances = new Map<string, number>();
  readonly schedules = new Map<string, ScheduleRow>();
  readonly queues = new Map<string, QueueRow>();
  readonly workflows = new Map<string, WorkflowRow>();
  readonly workflowsBySeq = new SortedIndex();
  readonly audit: AuditRecord[] = [];
  /** The store-wide transition log in position (= commit) order. */
  readonly log: LogEntry[] = [];
  readonly observers = new Map<string, ObserverRow>();
  /** Queues that got a job due by the operation's `now`: hinted after the operation commits. */
  readonly dueQueues = new Set<string>();
  /** The maintainer lease (`null`: free); patched through the undo log. */
  readonly maintainer: { lease: MaintainerLease | null } = { lease: null };
  /** Counters; patched through the undo log like everything else. */
  readonly sequences = { job: 0, position: 0, audit: 0, workflow: 0 };

  constructor(
    readonly bounds: Readonly<Bounds>,
    readonly historyPolicy: HistoryPolicy,
  ) {}

  /** The per-queue index in `map`, created on first use (an empty index is harmless to keep). */
  indexFor(map: Map<string, SortedIndex>, queue: string): SortedIndex {
    let index = map.get(queue);
    if (index === undefined) {
      index = new SortedIndex();
      map.set(queue, index);
    }
    return index;
  }
}

/** The retention class of a terminal state. */
export function retentionClassOf(state: JobState): RetentionClass | null {
  switch (state) {
    case "succeeded":
    case "cancelled":
      return "succeededOrCancelled";
    case "deadLettered":
    case "quarantined":
      return "deadLetteredOrQuarantined";
    default:
      return null;
  }
}
