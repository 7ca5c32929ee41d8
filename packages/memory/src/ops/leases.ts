import {
  type ExpireLeasesRequest, type ExpireLeasesResult, type ExpiredLease, type HeartbeatRequest, type HeartbeatResult,
  type Instant, type ReleaseRequest, type ReleaseResult, clampToBound, leaseExpiryDisposition,
} from "@belay/contract";
import type { IndexEntry } from "../sorted-index.js";
import type { JobRow, MemoryState } from "../state.js";
import type { UndoLog } from "../undo-log.js";
import { resolveChildren } from "./children.js";
import { moveJob } from "./jobs.js";

/** Whether `row` is leased by `workerId` at `attempt` with a lease still alive at `now` (the fence). */
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

/**
 * Each lease of `request` in input order: `apply` to the job when the worker still holds it at
 * `now` (the fence), `lost` answered for it otherwise.
 */
async function eachHeldLease<R>(
  state: MemoryState,
  request: HeartbeatRequest | ReleaseRequest,
  lost: (jobId: string) => R,
  apply: (row: JobRow) => Promise<R>,
): Promise<R[]> {
  const results: R[] = [];
  for (const { jobId, attempt } of request.leases) {
    const row = state.jobs.get(jobId);
    results.push(holdsLease(row, request.workerId, attempt, request.now) ? await apply(row) : lost(jobId));
  }
  return results;
}

/** See `JobStore.heartbeat`. */
export function heartbeat(state: MemoryState, undo: UndoLog, request: HeartbeatRequest): Promise<HeartbeatResult[]> {
  const { leaseMs, now } = request;
  return eachHeldLease<HeartbeatResult>(state, request, (jobId) => ({ jobId, status: "lost" }), async (row) => {
    const leaseExpiresAt = now + leaseMs;
    const index = state.indexFor(state.leases, row.queue);
    undo.indexRemove(index, { at: row.leaseExpiresAt!, seq: row.seq, id: row.id });
    undo.patch(row, { leaseExpiresAt });
    undo.indexInsert(index, { at: leaseExpiresAt, seq: row.seq, id: row.id });
    const result: HeartbeatResult = { jobId: row.id, status: "renewed", leaseExpiresAt, cancelRequested: row.cancelRequested };
    await undo.step(`lease of ${row.id} renewed`);
    return result;
  });
}

/** See `JobStore.release`. */
export function release(state: MemoryState, undo: UndoLog, request: ReleaseRequest): Promise<ReleaseResult[]> {
  const { workerId, now } = request;
  return eachHeldLease<ReleaseResult>(state, request, (jobId) => ({ jobId, status: "stale" }), async (row) => {
    moveJob(state, undo, row, "scheduled", { dueAt: now, releases: row.releases + 1 }, now, { cause: "released", workerId });
    await undo.step(`job ${row.id} released`);
    return { jobId: row.id, status: "released" };
  });
}

/** See `JobStore.expireLeases`; each lease's fate is the contract's `leaseExpiryDisposition`. */
export async function expireLeases(state: MemoryState, undo: UndoLog, request: ExpireLeasesRequest): Promise<ExpireLeasesResult> {
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
    // The job's own policy (`row.retry`) wins over the sweeper's inside the contract's rule.
    const disposition = leaseExpiryDisposition(row, retry, now);
    const why = { cause: "leaseExpired", workerId: row.leaseOwner } as const;
    if (disposition.state === "scheduled") {
      moveJob(state, undo, row, "scheduled", { dueAt: disposition.dueAt }, now, why);
    } else {
      moveJob(state, undo, row, disposition.state, { terminalCause: disposition.terminalCause }, now, why);
      terminal.push(row);
    }
    expired.push({ jobId: row.id, state: row.state });
    await undo.step(`lease of ${row.id} expired`);
  }
  resolveChildren(state, undo, terminal, now);
  return { expired };
}
