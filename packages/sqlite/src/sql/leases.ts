import { type ExpireLeasesRequest, type ExpiredLease, clampToBound, jobStateFromCode, retryDelayMs } from "@belay/contract";
import { S, type Tables } from "../tables.js";
import type { OpContext, Steps } from "../transaction.js";
import { type MovedJob, moveToScheduled, moveToTerminal, resolveChildren } from "./jobs.js";

const EXPIRED_COLUMNS = "seq, lease_expires_at, attempt, releases, cancel_requested_by";

/** The oldest expired leases of one queue, from the partial index of leases per queue. */
const EXPIRED_IN_QUEUE = (t: Tables) => `SELECT ${EXPIRED_COLUMNS} FROM ${t.jobs}
  WHERE state = ${S.leased} AND queue = ? AND lease_expires_at <= ? ORDER BY lease_expires_at, seq LIMIT ?`;

/** The oldest expired leases of every queue, from the partial index of all leases by expiry. */
const EXPIRED_ANYWHERE = (t: Tables) => `SELECT ${EXPIRED_COLUMNS} FROM ${t.jobs}
  WHERE state = ${S.leased} AND lease_expires_at <= ? ORDER BY lease_expires_at, seq LIMIT ?`;

interface ExpiredRow {
  seq: number;
  lease_expires_at: number;
  attempt: number;
  releases: number;
  cancel_requested_by: string | null;
}

/** See `JobStore.expireLeases`; the request is already validated. */
export function* expireLeases(ctx: OpContext, request: ExpireLeasesRequest): Steps<ExpiredLease[]> {
  const { now, retry } = request;
  const max = clampToBound(request.max, ctx.bounds.claimBatch);
  let candidates: ExpiredRow[];
  if (request.queues === undefined) {
    candidates = ctx.q.get(EXPIRED_ANYWHERE).all(now, max) as ExpiredRow[];
  } else {
    candidates = [];
    for (const queue of new Set(request.queues)) candidates.push(...(ctx.q.get(EXPIRED_IN_QUEUE).all(queue, now, max) as ExpiredRow[]));
    candidates.sort((a, b) => a.lease_expires_at - b.lease_expires_at || a.seq - b.seq);
    candidates = candidates.slice(0, max);
  }
  const expired: ExpiredLease[] = [];
  const terminal: MovedJob[] = [];
  for (const row of candidates) {
    const counted = row.attempt - row.releases;
    let moved: MovedJob;
    if (row.cancel_requested_by !== null) {
      moved = moveToTerminal(ctx, row.seq, "cancelled", `cancelled by ${row.cancel_requested_by} (lease expired)`, now);
      terminal.push(moved);
    } else if (counted >= retry.maxAttempts) {
      moved = moveToTerminal(ctx, row.seq, "deadLettered", `lease expired at attempt ceiling ${retry.maxAttempts}`, now);
      terminal.push(moved);
    } else {
      const dueAt = now + retryDelayMs(retry, counted);
      moved = moveToScheduled(ctx, row.seq, { dueAt, attempt: row.attempt, releases: row.releases }, now);
    }
    expired.push({ jobId: moved.id, state: jobStateFromCode(moved.state) });
    yield `lease of ${moved.id} expired`;
  }
  resolveChildren(ctx, terminal, now);
  return expired;
}
