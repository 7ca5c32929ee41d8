import {
  type ClaimedJob, type Instant, type JobRecord, type JobState, type JobSummary, type TransitionCause, failureDetailText,
  isTerminalState,
} from "@belay/contract";
import type { IndexEntry, SortedIndex } from "../sorted-index.js";
import { type JobRow, type LogEntry, type MemoryState, retentionClassOf } from "../state.js";
import type { UndoLog } from "../undo-log.js";

// Every change of a job's state goes through `moveJob`, which keeps the indexes, counters and
// the transition log in step with the row. Nothing else writes `state` (inserts and purges keep
// the same bookkeeping through `placementOf`, `countJob` and `countLiveInstance`).

/** The index a job in `row.state` belongs to, with its entry; `null` for awaiting parents. */
export function placementOf(state: MemoryState, row: JobRow): { index: SortedIndex; entry: IndexEntry } | null {
  switch (row.state) {
    case "scheduled":
      return { index: state.indexFor(state.due, row.queue), entry: { at: row.dueAt, seq: row.seq, id: row.id } };
    case "leased":
      return {
        index: state.indexFor(state.leases, row.queue),
        entry: { at: row.leaseExpiresAt!, seq: row.seq, id: row.id },
      };
    case "awaitingParents":
      return null;
    default:
      return {
        index: state.terminal.get(retentionClassOf(row.state)!)!,
        entry: { at: row.terminalAt!, seq: row.seq, id: row.id },
      };
  }
}

/** Adds `delta` to the count of jobs in `row`'s (queue, state). */
export function countJob(state: MemoryState, undo: UndoLog, row: JobRow, delta: number): void {
  const key = `${row.queue}\u0000${row.state}`;
  const next = (state.counts.get(key) ?? 0) + delta;
  if (next === 0) undo.mapDelete(state.counts, key);
  else undo.mapSet(state.counts, key, next);
}

/** Adds `delta` to the live (non-terminal) instances of a schedule. */
export function countLiveInstance(state: MemoryState, undo: UndoLog, scheduleId: string, delta: number): void {
  const next = (state.liveInstances.get(scheduleId) ?? 0) + delta;
  if (next === 0) undo.mapDelete(state.liveInstances, scheduleId);
  else undo.mapSet(state.liveInstances, scheduleId, next);
}

/**
 * Why a transition is written and by whom: its cause, the worker whose write it is (`null` when
 * no worker's), and a failed attempt's detail.
 */
export interface Provenance {
  readonly cause: TransitionCause;
  readonly workerId?: string | null;
  readonly failureDetail?: string | null;
}

/** Appends one transition for `row` (in its current state) unless history is off. */
export function recordTransition(state: MemoryState, undo: UndoLog, row: JobRow, now: Instant, why: Provenance): void {
  if (state.historyPolicy === "off") return;
  const failureDetail = why.failureDetail ?? null;
  const detail =
    state.historyPolicy === "transitionsAndFailureDetail" && failureDetail !== null
      ? failureDetailText(failureDetail, state.bounds.failureDetailBytes)
      : null;
  const position = state.sequences.position + 1;
  undo.patch(state.sequences, { position });
  const entry: LogEntry = {
    position,
    jobId: row.id,
    ordinal: row.transitionCount + 1,
    at: now,
    state: row.state,
    cause: why.cause,
    workerId: why.workerId ?? null,
    attempt: row.attempt,
    failureDetail: detail,
    jobName: row.jobName,
    queue: row.queue,
    dropped: false,
  };
  undo.push(state.log, entry);
  let kept = row.transitions;
  if (kept.length >= state.bounds.transitionsPerJob) {
    const excess = kept.length - state.bounds.transitionsPerJob + 1;
    for (const old of kept.slice(0, excess)) undo.patch(old, { dropped: true });
    kept = kept.slice(excess);
  }
  undo.patch(row, { transitions: [...kept, entry], transitionCount: row.transitionCount + 1 });
}

/** Fields a move may set besides the state. */
export type MoveChanges = Partial<
  Pick<
    JobRow,
    "dueAt" | "attempt" | "releases" | "leaseOwner" | "leaseExpiresAt" | "terminalCause" | "output"
  >
>;

/**
 * Moves `row` to state `to`: re-indexes it, keeps counters, clears the lease and cancel request
 * when it leaves `leased`, stamps or clears the terminal time, and records the transition with
 * `why` (a lease owner must be named there: the move clears it first).
 */
export function moveJob(
  state: MemoryState,
  undo: UndoLog,
  row: JobRow,
  to: JobState,
  changes: MoveChanges,
  now: Instant,
  why: Provenance,
): void {
  const before = placementOf(state, row);
  if (before) undo.indexRemove(before.index, before.entry);
  countJob(state, undo, row, -1);
  const wasTerminal = isTerminalState(row.state);
  const toTerminal = isTerminalState(to);
  const next: Partial<JobRow> = { ...changes, state: to };
  if (to !== "leased") {
    next.leaseOwner = null;
    next.leaseExpiresAt = null;
    next.cancelRequested = false;
    next.cancelRequestedBy = null;
  }
  if (toTerminal) {
    next.terminalAt = now;
    next.terminalCause = changes.terminalCause ?? to;
  } else {
    next.terminalAt = null;
    next.terminalCause = null;
  }
  undo.patch(row, next);
  const after = placementOf(state, row);
  if (after) undo.indexInsert(after.index, after.entry);
  countJob(state, undo, row, 1);
  if (row.scheduleId !== null && wasTerminal !== toTerminal) {
    countLiveInstance(state, undo, row.scheduleId, toTerminal ? -1 : 1);
  }
  recordTransition(state, undo, row, now, why);
  if (to === "scheduled" && row.dueAt <= now) state.dueQueues.add(row.queue);
}

/** The job as listings show it (no payload). */
export function toSummary(row: JobRow): JobSummary {
  return {
    id: row.id,
    seq: row.seq,
    jobName: row.jobName,
    queue: row.queue,
    state: row.state,
    dueAt: row.dueAt,
    attempt: row.attempt,
    releases: row.releases,
    leaseOwner: row.leaseOwner,
    leaseExpiresAt: row.leaseExpiresAt,
    cancelRequested: row.cancelRequested,
    enqueuedAt: row.enqueuedAt,
    terminalAt: row.terminalAt,
    terminalCause: row.terminalCause,
    parentIds: row.parentIds,
    dependencyMode: row.dependencyMode,
    tags: row.tags,
    traceContext: row.traceContext,
    scheduleId: row.scheduleId,
    workflowId: row.workflowId,
    retry: row.retry,
  };
}

/** The job with its payload, as `getJob` returns it. */
export function toRecord(row: JobRow): JobRecord {
  return { ...toSummary(row), payload: row.payload };
}

/** A just-leased job as `claim` hands it to the worker. */
export function toClaimed(row: JobRow): ClaimedJob {
  return {
    id: row.id,
    seq: row.seq,
    jobName: row.jobName,
    queue: row.queue,
    payload: row.payload,
    attempt: row.attempt,
    releases: row.releases,
    dueAt: row.dueAt,
    enqueuedAt: row.enqueuedAt,
    leaseExpiresAt: row.leaseExpiresAt!,
    tags: row.tags,
    parentIds: row.parentIds,
    dependencyMode: row.dependencyMode,
    traceContext: row.traceContext,
    scheduleId: row.scheduleId,
    workflowId: row.workflowId,
    retry: row.retry,
  };
}
