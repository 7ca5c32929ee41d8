import {
  type ClaimRequest,
  type ClaimResult,
  type ClaimedJob,
  type ExpireLeasesRequest,
  type ExpiredLease,
  type HeartbeatRequest,
  type HeartbeatResult,
  type Instant,
  type JobState,
  type OutcomeReport,
  type OutcomeResult,
  type ReleaseRequest,
  type ReleaseResult,
  type Tag,
  boundRejection,
  clampToBound,
  countedAttempts,
  isInstant,
  normalizeTags,
  retryDelayMs,
  utf8ByteLength,
} from "@belay/contract";
import { addTags, holdsLease, moveJob, renewLease, resolveChildren, toClaimed, unionTagCount } from "../jobs.js";
import type { IndexEntry } from "../sorted-index.js";
import type { JobRow, MemoryState } from "../state.js";
import type { UndoLog } from "../undo-log.js";

/** See `JobStore.claim`. */
export async function claim(state: MemoryState, undo: UndoLog, request: ClaimRequest): Promise<ClaimResult> {
  const { workerId, leaseMs, now } = request;
  const max = clampToBound(request.max, state.bounds.claimBatch);
  const queues = [...new Set(request.queues)];
  const claimed: ClaimedJob[] = [];
  let nextDueAt: Instant | null = null;
  for (const queue of queues) {
    const settings = state.queues.get(queue);
    await undo.step(`queue ${queue} settings read`);
    if (settings?.paused) continue;
    const due = state.due.get(queue);
    if (due === undefined) continue;
    let free = settings?.concurrencyLimit == null ? Infinity : settings.concurrencyLimit - (state.leases.get(queue)?.size ?? 0);
    while (claimed.length < max && free > 0) {
      const first = due.first();
      if (first === undefined || first.at > now) break;
      const row = state.jobs.get(first.id)!;
      moveJob(state, undo, row, "leased", { attempt: row.attempt + 1, leaseOwner: workerId, leaseExpiresAt: now + leaseMs }, now);
      claimed.push(toClaimed(row));
      free--;
      await undo.step(`job ${row.id} claimed`);
    }
    const next = due.first();
    if (next !== undefined) nextDueAt = nextDueAt === null ? next.at : Math.min(nextDueAt, next.at);
  }
  if (nextDueAt !== null && nextDueAt < now) nextDueAt = now;
  return { jobs: claimed, nextDueAt };
}

/**
 * Checks one report against the fence and its own bounds: the result when it cannot apply, or the
 * normalized tags it adds.
 */
function check(
  state: MemoryState,
  report: OutcomeReport,
  row: JobRow | undefined,
  now: Instant,
): { refused: OutcomeResult } | { row: JobRow; tags: readonly Tag[] } {
  const { jobId, outcome } = report;
  const refuse = (result: OutcomeResult) => ({ refused: result });
  if (!holdsLease(row, report.workerId, report.attempt, now)) return refuse({ jobId, status: "stale" });
  if (outcome.type === "succeeded" && outcome.output != null) {
    const bytes = utf8ByteLength(outcome.output);
    if (bytes > state.bounds.outputBytes) {
      return refuse({
        jobId,
        status: "rejected",
        rejection: boundRejection("BELAY_OUTPUT_TOO_LARGE", "output", state.bounds.outputBytes, bytes),
      });
    }
  }
  if (outcome.type === "failed" && outcome.retryAt !== null && !isInstant(outcome.retryAt)) {
    return refuse({
      jobId,
      status: "rejected",
      rejection: { code: "BELAY_INVALID_INPUT", field: "outcome.retryAt", message: "must be an instant or null" },
    });
  }
  const tags = normalizeTags(report.addTags ?? [], "addTags", state.bounds);
  if (!tags.ok) return refuse({ jobId, status: "rejected", rejection: tags.rejection });
  const total = unionTagCount(row, tags.tags);
  if (total > state.bounds.tagsPerJob) {
    return refuse({
      jobId,
      status: "rejected",
      rejection: boundRejection("BELAY_TOO_MANY_TAGS", "addTags", state.bounds.tagsPerJob, total),
    });
  }
  return { row, tags: tags.tags };
}

/** See `JobStore.reportOutcomes`. */
export async function reportOutcomes(
  state: MemoryState,
  undo: UndoLog,
  reports: readonly OutcomeReport[],
  now: Instant,
): Promise<OutcomeResult[]> {
  const results: OutcomeResult[] = [];
  for (const report of reports) {
    const checked = check(state, report, state.jobs.get(report.jobId), now);
    if ("refused" in checked) {
      results.push(checked.refused);
      continue;
    }
    const { row } = checked;
    addTags(state, undo, row, checked.tags);
    const { outcome } = report;
    const cancelCause = row.cancelRequested ? `cancelled by ${row.cancelRequestedBy ?? "operator"}` : null;
    let to: JobState;
    switch (outcome.type) {
      case "succeeded":
        to = "succeeded";
        moveJob(state, undo, row, to, { output: outcome.output ?? null, terminalCause: "succeeded" }, now);
        break;
      case "failed":
        if (outcome.retryAt === null) {
          to = "deadLettered";
          moveJob(state, undo, row, to, { terminalCause: `failed at attempt ${countedAttempts(row)}` }, now, outcome.failureDetail ?? null);
        } else if (cancelCause !== null) {
          to = "cancelled";
          moveJob(state, undo, row, to, { terminalCause: cancelCause }, now, outcome.failureDetail ?? null);
        } else {
          to = "scheduled";
          moveJob(state, undo, row, to, { dueAt: outcome.retryAt }, now, outcome.failureDetail ?? null);
        }
        break;
      case "cancelled":
        to = "cancelled";
        moveJob(state, undo, row, to, { terminalCause: cancelCause ?? "cancelled by handler" }, now);
        break;
      case "unroutable":
        to = "quarantined";
        moveJob(state, undo, row, to, { terminalCause: `unroutable: ${outcome.reason}` }, now);
        break;
    }
    await undo.step(`outcome of ${row.id} applied`);
    if (to !== "scheduled") {
      resolveChildren(state, undo, [row], now);
      await undo.step(`children of ${row.id} resolved`);
    }
    results.push({ jobId: row.id, status: "applied", state: to });
  }
  return results;
}

/** See `JobStore.heartbeat`. */
export async function heartbeat(state: MemoryState, undo: UndoLog, request: HeartbeatRequest): Promise<HeartbeatResult[]> {
  const { workerId, leaseMs, now } = request;
  const results: HeartbeatResult[] = [];
  for (const { jobId, attempt } of request.leases) {
    const row = state.jobs.get(jobId);
    if (!holdsLease(row, workerId, attempt, now)) {
      results.push({ jobId, status: "lost" });
      continue;
    }
    const leaseExpiresAt = now + leaseMs;
    renewLease(state, undo, row, leaseExpiresAt);
    results.push({ jobId, status: "renewed", leaseExpiresAt, cancelRequested: row.cancelRequested });
    await undo.step(`lease of ${jobId} renewed`);
  }
  return results;
}

/** See `JobStore.release`. */
export async function release(state: MemoryState, undo: UndoLog, request: ReleaseRequest): Promise<ReleaseResult[]> {
  const { workerId, now } = request;
  const results: ReleaseResult[] = [];
  for (const { jobId, attempt } of request.leases) {
    const row = state.jobs.get(jobId);
    if (!holdsLease(row, workerId, attempt, now)) {
      results.push({ jobId, status: "stale" });
      continue;
    }
    moveJob(state, undo, row, "scheduled", { dueAt: now, releases: row.releases + 1 }, now);
    results.push({ jobId, status: "released" });
    await undo.step(`job ${jobId} released`);
  }
  return results;
}

/** See `JobStore.expireLeases`. */
export async function expireLeases(
  state: MemoryState,
  undo: UndoLog,
  request: ExpireLeasesRequest,
): Promise<ExpiredLease[]> {
  const { now, retry } = request;
  const max = clampToBound(request.max, state.bounds.claimBatch);
  const queues = request.queues ?? [...state.leases.keys()];
  // Merge the earliest expired leases of each served queue, oldest first.
  const candidates: IndexEntry[] = [];
  for (const queue of new Set(queues)) {
    const index = state.leases.get(queue);
    if (index === undefined) continue;
    let taken = 0;
    for (const entry of index.upTo(now)) {
      candidates.push(entry);
      if (++taken >= max) break;
    }
  }
  candidates.sort((a, b) => a.at - b.at || a.seq - b.seq);
  const expired: ExpiredLease[] = [];
  const terminal: JobRow[] = [];
  for (const entry of candidates.slice(0, max)) {
    const row = state.jobs.get(entry.id)!;
    const counted = countedAttempts(row);
    if (row.cancelRequested) {
      moveJob(state, undo, row, "cancelled", { terminalCause: `cancelled by ${row.cancelRequestedBy ?? "operator"} (lease expired)` }, now);
      terminal.push(row);
    } else if (counted >= retry.maxAttempts) {
      moveJob(state, undo, row, "deadLettered", { terminalCause: `lease expired at attempt ceiling ${retry.maxAttempts}` }, now);
      terminal.push(row);
    } else {
      moveJob(state, undo, row, "scheduled", { dueAt: now + retryDelayMs(retry, counted) }, now);
    }
    expired.push({ jobId: row.id, state: row.state });
    await undo.step(`lease of ${row.id} expired`);
  }
  resolveChildren(state, undo, terminal, now);
  return expired;
}
