import {
  type ClaimedJob,
  type Instant,
  type JobRecord,
  type JobState,
  type JobSummary,
  type NormalizedNewJob,
  type Tag,
  isTerminalState,
  truncateUtf8,
} from "@belay/contract";
import type { IndexEntry, SortedIndex } from "./sorted-index.js";
import { type JobRow, type LogEntry, type MemoryState, retentionClassOf } from "./state.js";
import type { UndoLog } from "./undo-log.js";

// Every change of a job's state goes through `moveJob`, which keeps the indexes, counters and
// the transition log in step with the row. Nothing else writes `state`.

/** The index a job in `row.state` belongs to, with its entry; `null` for awaiting parents. */
function indexOf(state: MemoryState, row: JobRow): { index: SortedIndex; entry: IndexEntry } | null {
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

function bumpCount(state: MemoryState, undo: UndoLog, row: JobRow, delta: number): void {
  const key = `${row.queue}\u0000${row.state}`;
  const next = (state.counts.get(key) ?? 0) + delta;
  if (next === 0) undo.mapDelete(state.counts, key);
  else undo.mapSet(state.counts, key, next);
}

function bumpLive(state: MemoryState, undo: UndoLog, scheduleId: string, delta: number): void {
  const next = (state.liveInstances.get(scheduleId) ?? 0) + delta;
  if (next === 0) undo.mapDelete(state.liveInstances, scheduleId);
  else undo.mapSet(state.liveInstances, scheduleId, next);
}

function bumpTag(state: MemoryState, undo: UndoLog, tag: Tag, delta: number): void {
  const key = `${tag.key}\u0000${tag.value}`;
  const next = (state.tagJobs.get(key) ?? 0) + delta;
  if (next === 0) undo.mapDelete(state.tagJobs, key);
  else undo.mapSet(state.tagJobs, key, next);
}

/** Appends one transition for `row` (in its current state) unless history is off. */
export function recordTransition(
  state: MemoryState,
  undo: UndoLog,
  row: JobRow,
  now: Instant,
  failureDetail: string | null,
): void {
  if (state.historyPolicy === "off") return;
  const detail =
    state.historyPolicy === "transitionsAndFailureDetail" && failureDetail !== null
      ? truncateUtf8(failureDetail, state.bounds.failureDetailBytes)
      : null;
  const position = state.sequences.position + 1;
  undo.patch(state.sequences, { position });
  const entry: LogEntry = {
    position,
    jobId: row.id,
    ordinal: row.transitionCount + 1,
    at: now,
    state: row.state,
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

/** Inserts a new job in its initial state, with its edges, tags, counters and first transition. */
export function insertJob(
  state: MemoryState,
  undo: UndoLog,
  job: NormalizedNewJob,
  initial: { state: JobState; parentsRemaining: number; terminalCause: string | null },
  now: Instant,
  origin: { scheduleId: string | null; workflowId: string | null },
): JobRow {
  const seq = state.sequences.job + 1;
  undo.patch(state.sequences, { job: seq });
  const terminal = isTerminalState(initial.state);
  const row: JobRow = {
    id: job.id,
    seq,
    jobName: job.jobName,
    queue: job.queue,
    payload: job.payload,
    state: initial.state,
    dueAt: job.dueAt,
    attempt: 0,
    releases: 0,
    leaseOwner: null,
    leaseExpiresAt: null,
    cancelRequested: false,
    cancelRequestedBy: null,
    enqueuedAt: now,
    terminalAt: terminal ? now : null,
    terminalCause: terminal ? initial.terminalCause : null,
    parentIds: job.parentIds,
    dependencyMode: job.dependencyMode,
    parentsRemaining: initial.parentsRemaining,
    children: [],
    tags: job.tags,
    traceContext: job.traceContext,
    scheduleId: origin.scheduleId,
    workflowId: origin.workflowId,
    output: null,
    transitions: [],
    transitionCount: 0,
  };
  undo.mapSet(state.jobs, row.id, row);
  undo.indexInsert(state.bySeq, { at: 0, seq, id: row.id });
  const placed = indexOf(state, row);
  if (placed) undo.indexInsert(placed.index, placed.entry);
  bumpCount(state, undo, row, 1);
  if (row.scheduleId !== null && !terminal) bumpLive(state, undo, row.scheduleId, 1);
  for (const tag of row.tags) bumpTag(state, undo, tag, 1);
  for (const parentId of row.parentIds) {
    const parent = state.jobs.get(parentId)!;
    undo.patch(parent, { children: [...parent.children, row.id] });
  }
  recordTransition(state, undo, row, now, null);
  if (row.state === "scheduled" && row.dueAt <= now) state.dueQueues.add(row.queue);
  return row;
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
 * when it leaves `leased`, stamps or clears the terminal time, and records the transition.
 */
export function moveJob(
  state: MemoryState,
  undo: UndoLog,
  row: JobRow,
  to: JobState,
  changes: MoveChanges,
  now: Instant,
  failureDetail: string | null = null,
): void {
  const before = indexOf(state, row);
  if (before) undo.indexRemove(before.index, before.entry);
  bumpCount(state, undo, row, -1);
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
  const after = indexOf(state, row);
  if (after) undo.indexInsert(after.index, after.entry);
  bumpCount(state, undo, row, 1);
  if (row.scheduleId !== null && wasTerminal !== toTerminal) {
    bumpLive(state, undo, row.scheduleId, toTerminal ? -1 : 1);
  }
  recordTransition(state, undo, row, now, failureDetail);
  if (to === "scheduled" && row.dueAt <= now) state.dueQueues.add(row.queue);
}

/** Renews a leased job's expiry, re-indexing it. */
export function renewLease(state: MemoryState, undo: UndoLog, row: JobRow, leaseExpiresAt: Instant): void {
  const index = state.indexFor(state.leases, row.queue);
  undo.indexRemove(index, { at: row.leaseExpiresAt!, seq: row.seq, id: row.id });
  undo.patch(row, { leaseExpiresAt });
  undo.indexInsert(index, { at: leaseExpiresAt, seq: row.seq, id: row.id });
}

/** Adds tags to a job (already validated and de-duplicated against themselves). */
export function addTags(state: MemoryState, undo: UndoLog, row: JobRow, tags: readonly Tag[]): void {
  const fresh = tags.filter((t) => !row.tags.some((o) => o.key === t.key && o.value === t.value));
  if (fresh.length === 0) return;
  undo.patch(row, { tags: [...row.tags, ...fresh] });
  for (const tag of fresh) bumpTag(state, undo, tag, 1);
}

/** The tags `row` would carry with `tags` added (for checking the per-job bound first). */
export function unionTagCount(row: JobRow, tags: readonly Tag[]): number {
  return row.tags.length + tags.filter((t) => !row.tags.some((o) => o.key === t.key && o.value === t.value)).length;
}

/**
 * Resolves the latches of the children of jobs that just became terminal: an `onSuccess` child
 * of a parent that did not succeed is cancelled (and its own children resolved in turn, to any
 * depth); otherwise the child's latch drops by one and it is scheduled when it reaches zero.
 */
export function resolveChildren(
  state: MemoryState,
  undo: UndoLog,
  terminalParents: readonly JobRow[],
  now: Instant,
): void {
  const work = [...terminalParents];
  while (work.length > 0) {
    const parent = work.shift()!;
    for (const childId of parent.children) {
      const child = state.jobs.get(childId);
      if (child === undefined || child.state !== "awaitingParents") continue;
      if (child.dependencyMode === "onSuccess" && parent.state !== "succeeded") {
        moveJob(state, undo, child, "cancelled", { terminalCause: `parent ${parent.id} ${parent.state}` }, now);
        work.push(child);
        continue;
      }
      const remaining = child.parentsRemaining - 1;
      undo.patch(child, { parentsRemaining: remaining });
      if (remaining === 0) moveJob(state, undo, child, "scheduled", { dueAt: Math.max(child.dueAt, now) }, now);
    }
  }
}

/** Deletes a terminal job with its tags, transitions and edges (retention). */
export function deleteJob(state: MemoryState, undo: UndoLog, row: JobRow): void {
  const placed = indexOf(state, row);
  if (placed) undo.indexRemove(placed.index, placed.entry);
  undo.indexRemove(state.bySeq, { at: 0, seq: row.seq, id: row.id });
  bumpCount(state, undo, row, -1);
  for (const tag of row.tags) bumpTag(state, undo, tag, -1);
  for (const entry of row.transitions) undo.patch(entry, { dropped: true });
  for (const parentId of row.parentIds) {
    const parent = state.jobs.get(parentId);
    if (parent) undo.patch(parent, { children: parent.children.filter((c) => c !== row.id) });
  }
  undo.mapDelete(state.jobs, row.id);
}

/** Whether `row` is leased by `workerId` at `attempt` with a lease still alive at `now`. */
export function holdsLease(row: JobRow | undefined, workerId: string, attempt: number, now: Instant): row is JobRow {
  return (
    row !== undefined &&
    row.state === "leased" &&
    row.leaseOwner === workerId &&
    row.attempt === attempt &&
    row.leaseExpiresAt !== null &&
    row.leaseExpiresAt > now
  );
}

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
  };
}

export function toRecord(row: JobRow): JobRecord {
  return { ...toSummary(row), payload: row.payload };
}

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
  };
}
