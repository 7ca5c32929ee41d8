import { type Instant, type JobState, type NormalizedNewJob, isTerminalState, terminalCauseText } from "@belay/contract";
import type { JobRow, MemoryState } from "../state.js";
import type { UndoLog } from "../undo-log.js";
import { moveJob } from "./jobs.js";

// A child waits on a latch: the number of its parents not yet terminal. Each parent that ends
// drops it by one; an `onSuccess` child of a parent that ended other than succeeded is cancelled
// instead, and its own children are resolved in turn.

/** The state a new job starts in, given its parents' current states. */
export function initialStateOf(
  state: MemoryState,
  job: NormalizedNewJob,
): { state: JobState; parentsRemaining: number; terminalCause: string | null } {
  let live = 0;
  for (const parentId of job.parentIds) {
    const parent = state.jobs.get(parentId)!;
    if (!isTerminalState(parent.state)) live++;
    else if (job.dependencyMode === "onSuccess" && parent.state !== "succeeded") {
      return { state: "cancelled", parentsRemaining: 0, terminalCause: parentEnded(parent) };
    }
  }
  return live > 0
    ? { state: "awaitingParents", parentsRemaining: live, terminalCause: null }
    : { state: "scheduled", parentsRemaining: 0, terminalCause: null };
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
        moveJob(state, undo, child, "cancelled", { terminalCause: parentEnded(parent) }, now, { cause: "parentFailed" });
        work.push(child);
        continue;
      }
      const remaining = child.parentsRemaining - 1;
      undo.patch(child, { parentsRemaining: remaining });
      if (remaining === 0) {
        moveJob(state, undo, child, "scheduled", { dueAt: Math.max(child.dueAt, now) }, now, { cause: "parentsResolved" });
      }
    }
  }
}

/**
 * Re-gates the children of a job that is live again (an operator requeue): children still
 * waiting for their parents wait for it again, so its next terminal state resolves their latch
 * exactly once more (never twice for one gating).
 */
export function regateChildren(state: MemoryState, undo: UndoLog, parent: JobRow): void {
  for (const childId of parent.children) {
    const child = state.jobs.get(childId);
    if (child?.state === "awaitingParents") undo.patch(child, { parentsRemaining: child.parentsRemaining + 1 });
  }
}

function parentEnded(parent: JobRow): string {
  return terminalCauseText("parentEnded", { parentId: parent.id, parentState: parent.state });
}
