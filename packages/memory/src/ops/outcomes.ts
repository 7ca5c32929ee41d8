import {
  type Instant, type OutcomeReport, type OutcomeResult, type Rejection, type ReportOutcomesRequest, type Tag, boundRejection, normalizeTags,
  outcomeCause, outcomeDisposition, utf8ByteLength,
} from "@belay/contract";
import type { JobRow, MemoryState } from "../state.js";
import type { UndoLog } from "../undo-log.js";
import { resolveChildren } from "./children.js";
import { type MoveChanges, moveJob } from "./jobs.js";
import { holdsLease } from "./leases.js";
import { addTags, unionTagCount } from "./tags.js";

/**
 * Checks one report against the fence and the bounds that reject a single row (the front has
 * checked its shape): the result when it cannot apply, or the normalized tags it adds.
 */
function check(
  state: MemoryState,
  report: OutcomeReport,
  row: JobRow | undefined,
  now: Instant,
): { refused: OutcomeResult } | { row: JobRow; tags: readonly Tag[] } {
  const { jobId, attempt, outcome } = report;
  const refuse = (result: OutcomeResult) => ({ refused: result });
  const reject = (rejection: Rejection) => refuse({ jobId, attempt, status: "rejected", rejection });
  if (!holdsLease(row, report.workerId, attempt, now)) return refuse({ jobId, attempt, status: "stale" });
  if (outcome.type === "succeeded" && outcome.output != null) {
    const bytes = utf8ByteLength(outcome.output);
    if (bytes > state.bounds.outputBytes) return reject(boundRejection("BELAY_OUTPUT_TOO_LARGE", "output", state.bounds.outputBytes, bytes));
  }
  const tags = normalizeTags(report.addTags ?? [], "addTags", state.bounds);
  if (!tags.ok) return reject(tags.rejection);
  const total = unionTagCount(row, tags.tags);
  if (total > state.bounds.tagsPerJob) return reject(boundRejection("BELAY_TOO_MANY_TAGS", "addTags", state.bounds.tagsPerJob, total));
  return { row, tags: tags.tags };
}

/** See `JobStore.reportOutcomes`; each job's fate is the contract's `outcomeDisposition`. */
export async function reportOutcomes(state: MemoryState, undo: UndoLog, request: ReportOutcomesRequest): Promise<OutcomeResult[]> {
  const { now } = request;
  const results: OutcomeResult[] = [];
  for (const report of request.reports) {
    const checked = check(state, report, state.jobs.get(report.jobId), now);
    if ("refused" in checked) {
      results.push(checked.refused);
      continue;
    }
    const { row } = checked;
    const { outcome } = report;
    addTags(state, undo, row, checked.tags);
    const disposition = outcomeDisposition(row, outcome);
    // Only a failure carries detail into the history, whatever it becomes.
    const failureDetail = outcome.type === "failed" ? (outcome.failureDetail ?? null) : null;
    const changes: MoveChanges =
      disposition.state === "scheduled" ? { dueAt: disposition.dueAt } : { terminalCause: disposition.terminalCause };
    if (outcome.type === "succeeded") changes.output = outcome.output ?? null;
    const cause = outcomeCause(outcome.type, disposition.state);
    moveJob(state, undo, row, disposition.state, changes, now, { cause, workerId: report.workerId, failureDetail });
    await undo.step(`outcome of ${row.id} applied`);
    if (disposition.state !== "scheduled") {
      resolveChildren(state, undo, [row], now);
      await undo.step(`children of ${row.id} resolved`);
    }
    results.push({ jobId: row.id, attempt: report.attempt, status: "applied", state: disposition.state });
  }
  return results;
}
