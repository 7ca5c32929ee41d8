import {
  type DependencyEdges, type JobCount, type JobPage, type JobRecord, type JobState, type JobSummary, type ListJobsRequest,
  type TransitionRecord, JOB_STATE_CODES, clampToBound, compareCodePoints, decodeSeqCursor, encodeSeqCursor, isTerminalState,
} from "@belay/contract";
import type { JobRow, MemoryState } from "../state.js";
import { matchesFilter, namedJobs } from "./filters.js";
import { toRecord, toSummary } from "./jobs.js";

/** See `JobStore.getJob`. */
export function getJob(state: MemoryState, jobId: string): JobRecord | null {
  const row = state.jobs.get(jobId);
  return row ? toRecord(row) : null;
}

/** See `JobStore.getJobOutput`. */
export function getJobOutput(state: MemoryState, jobId: string): string | null {
  return state.jobs.get(jobId)?.output ?? null;
}

/** See `JobStore.getJobHistory`. */
export function getJobHistory(state: MemoryState, jobId: string): TransitionRecord[] {
  return (state.jobs.get(jobId)?.transitions ?? []).map((e) => ({
    jobId: e.jobId,
    ordinal: e.ordinal,
    position: e.position,
    at: e.at,
    state: e.state,
    cause: e.cause,
    workerId: e.workerId,
    attempt: e.attempt,
    failureDetail: e.failureDetail,
  }));
}

/** See `JobStore.listJobs`. */
export function listJobs(state: MemoryState, request: ListJobsRequest): JobPage {
  const limit = clampToBound(request.limit ?? state.bounds.monitorPage, state.bounds.monitorPage);
  const descending = request.order === "newestFirst";
  const afterSeq = request.after === undefined ? undefined : decodeSeqCursor(request.after);
  const jobs: JobSummary[] = [];
  let more = false;
  for (const row of candidates(state, request, afterSeq, descending)) {
    if (!matchesFilter(row, request)) continue;
    if (jobs.length === limit) {
      more = true;
      break;
    }
    jobs.push(toSummary(row));
  }
  const last = jobs.at(-1);
  return { jobs, nextCursor: more && last ? encodeSeqCursor(last.seq) : null };
}

/**
 * The jobs a listing walks, in its order, strictly after the cursor's `seq`: the jobs `ids`
 * names, else every job (the `bySeq` index).
 */
function* candidates(
  state: MemoryState,
  request: ListJobsRequest,
  afterSeq: number | undefined,
  descending: boolean,
): IterableIterator<JobRow> {
  const named = namedJobs(state, request);
  if (named === undefined) {
    const from = afterSeq === undefined ? undefined : { at: 0, seq: afterSeq };
    for (const entry of state.bySeq.after(from, descending)) yield state.jobs.get(entry.id)!;
    return;
  }
  if (descending) named.reverse();
  for (const row of named) {
    if (afterSeq === undefined || (descending ? row.seq < afterSeq : row.seq > afterSeq)) yield row;
  }
}

/** See `JobStore.countJobs`. */
export function countJobs(state: MemoryState): JobCount[] {
  const counts: JobCount[] = [];
  for (const [key, count] of state.counts) {
    const [queue, jobState] = key.split("\u0000") as [string, JobState];
    counts.push({ queue, state: jobState, count });
  }
  return counts.sort(
    (a, b) => compareCodePoints(a.queue, b.queue) || JOB_STATE_CODES[a.state] - JOB_STATE_CODES[b.state],
  );
}

/** See `JobStore.getDependencies`. */
export function getDependencies(state: MemoryState, jobId: string): DependencyEdges | null {
  const row = state.jobs.get(jobId);
  if (row === undefined) return null;
  const parents = row.parentIds.flatMap((id) => {
    const parent = state.jobs.get(id);
    return parent ? [{ jobId: id, state: parent.state, gating: !isTerminalState(parent.state) }] : [];
  });
  const children = row.children.flatMap((id) => {
    const child = state.jobs.get(id);
    return child ? [{ jobId: id, state: child.state }] : [];
  });
  return { parents, children };
}
