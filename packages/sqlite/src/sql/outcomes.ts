import {
  type Instant, type JobState, type OutcomeReport, type OutcomeResult, type ReportOutcomesRequest, type Tag, boundRejection,
  normalizeTags, outcomeCause, outcomeDisposition, utf8ByteLength,
} from "@belay/contract";
import { runNow } from "../io.js";
import { S, type Tables } from "../tables.js";
import type { OpContext, Steps } from "../transaction.js";
import { resolveChildren } from "./children.js";
import { type MovedJob, moveToScheduled, moveToTerminal } from "./jobs.js";
import { insertTags, tagsOf } from "./tags.js";

// Named as `outcomeDisposition` reads them, so a row is its own argument.
const LEASE_OF = (t: Tables) => `SELECT seq, state, attempt, releases, lease_owner, lease_expires_at,
  cancel_requested_by AS "cancelRequestedBy" FROM ${t.jobs} WHERE id = ?`;

const STORE_OUTPUT = (t: Tables) => `INSERT INTO ${t.outputs} (job_seq, output) VALUES (?, ?)
  ON CONFLICT (job_seq) DO UPDATE SET output = excluded.output`;

/** The fenced job as the report's checks need it. */
interface LeaseRow {
  readonly seq: number;
  readonly state: number;
  readonly attempt: number;
  readonly releases: number;
  readonly lease_owner: string | null;
  readonly lease_expires_at: number | null;
  readonly cancelRequestedBy: string | null;
}

/**
 * The job `jobId` if `workerId` holds its lease at `attempt` and the lease is alive at `now`.
 * Read under the write lock, so nothing can change between this check and the write after it.
 */
function heldLease(ctx: OpContext, jobId: string, workerId: string, attempt: number, now: Instant): LeaseRow | null {
  const row = ctx.q.get(LEASE_OF).get(jobId) as LeaseRow | undefined;
  if (
    row === undefined ||
    row.state !== S.leased ||
    row.lease_owner !== workerId ||
    row.attempt !== attempt ||
    row.lease_expires_at === null ||
    !(row.lease_expires_at > now)
  ) {
    return null;
  }
  return row;
}

/**
 * Checks what needs the store's bounds or the job's tags (the front checked the report's shape):
 * the refusal, or the tags it adds that the job lacks.
 */
function check(ctx: OpContext, report: OutcomeReport, row: LeaseRow): { refused: OutcomeResult } | { fresh: Tag[]; existing: number } {
  const { jobId, outcome } = report;
  const reject = (rejection: Extract<OutcomeResult, { status: "rejected" }>["rejection"]) => ({
    refused: { jobId, attempt: report.attempt, status: "rejected" as const, rejection },
  });
  if (outcome.type === "succeeded" && outcome.output != null) {
    const bytes = utf8ByteLength(outcome.output);
    if (bytes > ctx.bounds.outputBytes) {
      return reject(boundRejection("BELAY_OUTPUT_TOO_LARGE", "output", ctx.bounds.outputBytes, bytes));
    }
  }
  const tags = normalizeTags(report.addTags ?? [], "addTags", ctx.bounds);
  if (!tags.ok) return reject(tags.rejection);
  if (tags.tags.length === 0) return { fresh: [], existing: 0 };
  const current = tagsOf(ctx, row.seq);
  const fresh = tags.tags.filter((t) => !current.some((o) => o.key === t.key && o.value === t.value));
  const total = current.length + fresh.length;
  if (total > ctx.bounds.tagsPerJob) return reject(boundRejection("BELAY_TOO_MANY_TAGS", "addTags", ctx.bounds.tagsPerJob, total));
  return { fresh, existing: current.length };
}

/** Applies one checked outcome by the contract's `outcomeDisposition`; returns the job as it now stands. */
function apply(ctx: OpContext, report: OutcomeReport, row: LeaseRow, now: Instant): { moved: MovedJob; state: JobState } {
  const { outcome } = report;
  const next = outcomeDisposition(row, outcome);
  const detail = outcome.type === "failed" ? (outcome.failureDetail ?? null) : null;
  const by = { cause: outcomeCause(outcome.type, next.state), workerId: report.workerId };
  if (next.state === "scheduled") {
    const fields = { dueAt: next.dueAt, attempt: row.attempt, releases: row.releases };
    return { moved: moveToScheduled(ctx, row.seq, fields, now, by, detail), state: next.state };
  }
  const moved = moveToTerminal(ctx, row.seq, next.state, next.terminalCause, now, by, detail);
  if (outcome.type === "succeeded" && outcome.output != null) ctx.q.get(STORE_OUTPUT).run(row.seq, outcome.output);
  return { moved, state: next.state };
}

/**
 * See `JobStore.reportOutcomes`: every row fenced on its own, the batch one transaction; a
 * terminal outcome resolves its children's latches (cascading) in the same transaction.
 */
export function* reportOutcomes(ctx: OpContext, request: ReportOutcomesRequest): Steps<OutcomeResult[]> {
  const { now } = request;
  const results: OutcomeResult[] = [];
  for (const report of request.reports) {
    const row = heldLease(ctx, report.jobId, report.workerId, report.attempt, now);
    if (row === null) {
      results.push({ jobId: report.jobId, attempt: report.attempt, status: "stale" });
      continue;
    }
    const checked = check(ctx, report, row);
    if ("refused" in checked) {
      results.push(checked.refused);
      continue;
    }
    runNow(ctx.q, insertTags(row.seq, checked.existing, checked.fresh));
    const { moved, state } = apply(ctx, report, row, now);
    yield `outcome of ${report.jobId} applied`;
    if (state !== "scheduled") {
      resolveChildren(ctx, [moved], now);
      yield `children of ${report.jobId} resolved`;
    }
    results.push({ jobId: report.jobId, attempt: report.attempt, status: "applied", state });
  }
  return results;
}
