import {
  type EnqueueResult,
  type Instant,
  type JobState,
  type NewJob,
  type NormalizedNewJob,
  type Rejection,
  boundRejection,
  isTerminalState,
  validateNewJob,
} from "@belay/contract";
import { insertJob } from "../jobs.js";
import type { MemoryState } from "../state.js";
import type { UndoLog } from "../undo-log.js";

type Planned =
  | { kind: "create"; job: NormalizedNewJob }
  | { kind: "duplicate"; id: string }
  | { kind: "rejected"; id: string; rejection: Rejection };

/**
 * Checks a whole enqueue call before anything is written: each job's own fields, then whether
 * its id exists (a duplicate), then whether its parents exist (in the store, or earlier in the
 * call).
 */
export function planEnqueue(state: MemoryState, jobs: readonly NewJob[]): Planned[] {
  if (jobs.length > state.bounds.enqueueBatch) {
    const rejection = boundRejection("BELAY_BATCH_TOO_LARGE", "jobs", state.bounds.enqueueBatch, jobs.length);
    return jobs.map((job) => ({ kind: "rejected", id: String(job?.id), rejection }));
  }
  const earlier = new Set<string>();
  return jobs.map((raw): Planned => {
    const checked = validateNewJob(raw, state.bounds);
    if (!checked.ok) return { kind: "rejected", id: typeof raw?.id === "string" ? raw.id : "", rejection: checked.rejection };
    const { job } = checked;
    if (state.jobs.has(job.id) || earlier.has(job.id)) return { kind: "duplicate", id: job.id };
    for (const parentId of job.parentIds) {
      if (!state.jobs.has(parentId) && !earlier.has(parentId)) {
        return {
          kind: "rejected",
          id: job.id,
          rejection: {
            code: "BELAY_UNKNOWN_PARENT",
            field: "parentIds",
            parentId,
            message: `parent ${parentId} does not exist`,
          },
        };
      }
    }
    earlier.add(job.id);
    return { kind: "create", job };
  });
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
  planned: readonly Planned[],
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

/** Results for a call with at least one rejected job: nothing is written. */
export function rejectedResults(planned: readonly Planned[]): EnqueueResult[] {
  return planned.map((plan) =>
    plan.kind === "rejected"
      ? { id: plan.id, status: "rejected", rejection: plan.rejection }
      : { id: plan.kind === "create" ? plan.job.id : plan.id, status: "notWritten" },
  );
}
