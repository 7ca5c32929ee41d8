import {
  type Instant,
  type JobState,
  type OutcomeReport,
  type OutcomeResult,
  type Tag,
  boundRejection,
  isInstant,
  normalizeTags,
  utf8ByteLength,
} from "@belay/contract";
import { runNow } from "../io.js";
import { S, type Tables } from "../tables.js";
import type { OpContext, Steps } from "../transaction.js";
import { type MovedJob, insertTags, moveToScheduled, moveToTerminal, resolveChildren, tagsOf } from "./jobs.js";

const LEASE_OF = (t: Tables) => `SELECT seq, state, attempt, releases, lease_owner, lease_expires_at, cancel_requested_by
  FROM ${t.jobs} WHERE id = ?`;

const STORE_OUTPUT = (t: Tables) => `INSERT INTO ${t.outputs} (job_seq, output) VALUES (?, ?)
  ON CONFLICT (job_seq) DO UPDATE SET output = excluded.output`;

/** The fenced job as the report's checks need it. */
export interface LeaseRow {
  readonly seq: number;
  readonly state: number;
  readonly attempt: number;
  readonly releases: number;
  readonly lease_owner: string | null;
  readonly lease_expires_at: number | null;
  readonly cancel_requested_by: string | null;
}

/**
 * The job `jobId` if `workerId` holds its lease at `attempt` and the lease is alive at `now`.
 * Read under the write lock, so nothing can change between this check and the write after it.
 */
export function heldLease(ctx: OpContext, jobId: string, workerId: string, attempt: number, now: Instant): LeaseRow | null {
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

/** Checks one report's own bounds; the refusal, or the tags it adds that the job lacks. */
function check(ctx: OpContext, report: OutcomeReport, row: LeaseRow): { refused: OutcomeResult } | { fresh: Tag[]; existing: number } {
  const { jobId, outcome } = report;
  const reject = (rejection: Extract<OutcomeResult, { status: "rejected" }>["rejection"]) => ({
    refused: { jobId, status: "rejected" as const, rejection },
  });
  if (outcome.type === "succeeded" && outcome.output != null) {
    const bytes = utf8ByteLength(outcome.output);
    if (bytes > ctx.bounds.outputBytes) {
      return reject(boundRejection("BELAY_OUTPUT_TOO_LARGE", "output", ctx.bounds.outputBytes, bytes));
    }
  }
  if (outcome.type === "failed" && outcome.retryAt !== null && !isInstant(outcome.retryAt)) {
    return reject({ code: "BELAY_INVALID_INPUT", field: "outcome.retryAt", message: "must be an instant or null" });
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

/** Applies one checked outcome; returns the job as it now stands. */
function apply(ctx: OpContext, report: OutcomeReport, row: LeaseRow, now: Instant): MovedJob {
  const { outcome } = report;
  const cancelCause = row.cancel_requested_by !== null ? `cancelled by ${row.cancel_requested_by}` : null;
  switch (outcome.type) {
    case "succeeded": {
      const moved = moveToTerminal(ctx, row.seq, "succeeded", "succeeded", now);
      if (outcome.output != null) ctx.q.get(STORE_OUTPUT).run(row.seq, outcome.output);
      return moved;
    }
    case "failed": {
      const detail = outcome.failureDetail ?? null;
      if (outcome.retryAt === null) {
        return moveToTerminal(ctx, row.seq, "deadLettered", `failed at attempt ${row.attempt - row.releases}`, now, detail);
      }
      if (cancelCause !== null) return moveToTerminal(ctx, row.seq, "cancelled", cancelCause, now, detail);
      return moveToScheduled(ctx, row.seq, { dueAt: outcome.retryAt, attempt: row.attempt, releases: row.releases }, now, detail);
    }
    case "cancelled":
      return moveToTerminal(ctx, row.seq, "cancelled", cancelCause ?? "cancelled by handler", now);
    case "unroutable":
      return moveToTerminal(ctx, row.seq, "quarantined", `unroutable: ${outcome.reason}`, now);
  }
}

const STATE_NAMES: Record<number, JobState> = {
  [S.scheduled]: "scheduled",
  [S.succeeded]: "succeeded",
  [S.cancelled]: "cancelled",
  [S.deadLettered]: "deadLettered",
  [S.quarantined]: "quarantined",
};

/**
 * See `JobStore.reportOutcomes`: every row fenced on its own, the batch one transaction; a
 * terminal outcome resolves its children's latches (cascading) in the same transaction.
 */
export function* reportOutcomes(ctx: OpContext, reports: readonly OutcomeReport[], now: Instant): Steps<OutcomeResult[]> {
  const results: OutcomeResult[] = [];
  for (const report of reports) {
    const row = heldLease(ctx, report.jobId, report.workerId, report.attempt, now);
    if (row === null) {
      results.push({ jobId: report.jobId, status: "stale" });
      continue;
    }
    const checked = check(ctx, report, row);
    if ("refused" in checked) {
      results.push(checked.refused);
      continue;
    }
    runNow(ctx.q, insertTags(row.seq, checked.existing, checked.fresh));
    const moved = apply(ctx, report, row, now);
    yield `outcome of ${report.jobId} applied`;
    if (moved.state !== S.scheduled) {
      resolveChildren(ctx, [moved], now);
      yield `children of ${report.jobId} resolved`;
    }
    results.push({ jobId: report.jobId, status: "applied", state: STATE_NAMES[moved.state]! });
  }
  return results;
}
