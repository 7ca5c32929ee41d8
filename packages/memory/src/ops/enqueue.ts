import {
  type EnqueuePlan,
  type EnqueueResult,
  type Instant,
  type JobState,
  type NewJob,
  type NormalizedNewJob,
  isTerminalState,
  planEnqueue,
} from "@belay/contract";
import { insertJob } from "../jobs.js";
import type { MemoryState } from "../state.js";
import type { UndoLog } from "../undo-log.js";

/**
 * Plans a call against the memory store's jobs (see `planEnqueue` in the contract): each job's own
 * fields, then whether its id exists (a duplicate), then whether its parents exist.
 */
export function planMemoryEnqueue(state: MemoryState, jobs: readonly NewJob[]): EnqueuePlan[] {
  return planEnqueue(jobs, state.bounds, (id) => state.jobs.has(id));
}

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
      return { state: "cancelled", parentsRemaining: 0, terminalCause: `parent ${parent.id} ${parent.state}` };
    }
  }
  return live > 0
    ? { state: "awaitingParents", parentsRemaining: live, terminalCause: null }
    : { state: "scheduled", parentsRemaining: 0, terminalCause: null };
}

/** Writes a planned call whose jobs all passed; returns the per-job results. */
export async function writeEnqueue(
  state: MemoryState,
  undo: UndoLog,
  planned: readonly EnqueuePlan[],
  now: Instant,
  origin: { scheduleId: string | null; workflowId: string | null } = { scheduleId: null, workflowId: null },
): Promise<EnqueueResult[]> {
  const results: EnqueueResult[] = [];
  for (const [i, plan] of planned.entries()) {
    if (plan.kind === "rejected") throw new Error("writeEnqueue called with a rejected plan");
    if (plan.kind === "duplicate") {
      results.push({ id: plan.id, status: "duplicate", state: state.jobs.get(plan.id)!.state });
      continue;
    }
    const initial = initialStateOf(state, plan.job);
    const row = insertJob(state, undo, plan.job, initial, now, origin);
    results.push({ id: row.id, status: "created", state: initial.state as "scheduled", seq: row.seq });
    await undo.step(`job ${i} inserted`);
  }
  return results;
}
