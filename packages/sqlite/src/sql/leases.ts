import {
  type ExpireLeasesRequest, type ExpireLeasesResult, type ExpiredLease, type HeartbeatRequest, type HeartbeatResult,
  type ReleaseRequest, type ReleaseResult, clampToBound, jobStateFromCode, leaseExpiryDisposition,
} from "@belay/contract";
import { S, type Tables } from "../tables.js";
import { type OpContext, type Steps, noteDue } from "../transaction.js";
import { resolveChildren } from "./children.js";
import { type MovedJob, moveToScheduled, moveToTerminal, parseRetry, recordTransition, recorded } from "./jobs.js";

// Heartbeats and releases are each one compare-and-set statement: the fence (owner, attempt,
// live lease) is in the WHERE clause, so check and write cannot be separated.

const RENEW = (t: Tables) => `UPDATE ${t.jobs} SET lease_expires_at = ?
  WHERE id = ? AND state = ${S.leased} AND lease_owner = ? AND attempt = ? AND lease_expires_at > ?
  RETURNING cancel_requested_by IS NOT NULL AS cancel_requested`;

/** Back to scheduled, due now, the attempt not counted. */
const RELEASE = (t: Tables) => `UPDATE ${t.jobs} SET state = ${S.scheduled}, due_at = ?, releases = releases + 1,
  lease_owner = NULL, lease_expires_at = NULL, cancel_requested_by = NULL, transition_count = transition_count + ?
  WHERE id = ? AND state = ${S.leased} AND lease_owner = ? AND attempt = ? AND lease_expires_at > ?
  RETURNING seq, id, queue, state, attempt, transition_count, has_children`;

// Named as `leaseExpiryDisposition` reads them (the job's own retry policy parsed first), and
// with the lapsed lease's owner, whom the expiry's transition names.
const expiredColumns = (t: Tables) => `seq, lease_expires_at, attempt, releases, cancel_requested_by AS "cancelRequestedBy",
  lease_owner, (SELECT p.retry FROM ${t.payloads} p WHERE p.job_seq = ${t.jobs}.seq) AS retry`;

/** The oldest expired leases of one queue, from the partial index of leases per queue. */
const EXPIRED_IN_QUEUE = (t: Tables) => `SELECT ${expiredColumns(t)} FROM ${t.jobs}
  WHERE state = ${S.leased} AND queue = ? AND lease_expires_at <= ? ORDER BY lease_expires_at, seq LIMIT ?`;

/** The oldest expired leases of every queue, from the partial index of all leases by expiry. */
const EXPIRED_ANYWHERE = (t: Tables) => `SELECT ${expiredColumns(t)} FROM ${t.jobs}
  WHERE state = ${S.leased} AND lease_expires_at <= ? ORDER BY lease_expires_at, seq LIMIT ?`;

interface ExpiredRow {
  seq: number;
  lease_expires_at: number;
  attempt: number;
  releases: number;
  cancelRequestedBy: string | null;
  lease_owner: string;
  retry: string | null;
}

/** See `JobStore.heartbeat`. */
export function* heartbeat(ctx: OpContext, request: HeartbeatRequest): Steps<HeartbeatResult[]> {
  const { workerId, leaseMs, now } = request;
  const leaseExpiresAt = now + leaseMs;
  const results: HeartbeatResult[] = [];
  for (const { jobId, attempt } of request.leases) {
    const renewed = ctx.q.get(RENEW).get(leaseExpiresAt, jobId, workerId, attempt, now) as { cancel_requested: number } | undefined;
    if (renewed === undefined) {
      results.push({ jobId, status: "lost" });
      continue;
    }
    results.push({ jobId, status: "renewed", leaseExpiresAt, cancelRequested: renewed.cancel_requested === 1 });
    yield `lease of ${jobId} renewed`;
  }
  return results;
}

/** See `JobStore.release`. */
export function* release(ctx: OpContext, request: ReleaseRequest): Steps<ReleaseResult[]> {
  const { workerId, now } = request;
  const results: ReleaseResult[] = [];
  for (const { jobId, attempt } of request.leases) {
    const moved = ctx.q.get(RELEASE).get(now, recorded(ctx), jobId, workerId, attempt, now) as MovedJob | undefined;
    if (moved === undefined) {
      results.push({ jobId, status: "stale" });
      continue;
    }
    recordTransition(ctx, moved, now, { cause: "released", workerId });
    noteDue(ctx, moved.queue, now, now);
    results.push({ jobId, status: "released" });
    yield `job ${jobId} released`;
  }
  return results;
}

/**
 * See `JobStore.expireLeases`: each expired lease disposed of by the contract's
 * `leaseExpiryDisposition`, under the job's own retry policy when it has one, else `request.retry`.
 */
export function* expireLeases(ctx: OpContext, request: ExpireLeasesRequest): Steps<ExpireLeasesResult> {
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
    const next = leaseExpiryDisposition({ ...row, retry: parseRetry(row.retry) }, retry, now);
    const by = { cause: "leaseExpired" as const, workerId: row.lease_owner };
    let moved: MovedJob;
    if (next.state === "scheduled") {
      moved = moveToScheduled(ctx, row.seq, { dueAt: next.dueAt, attempt: row.attempt, releases: row.releases }, now, by);
    } else {
      moved = moveToTerminal(ctx, row.seq, next.state, next.terminalCause, now, by);
      terminal.push(moved);
    }
    expired.push({ jobId: moved.id, state: jobStateFromCode(moved.state) });
    yield `lease of ${moved.id} expired`;
  }
  resolveChildren(ctx, terminal, now);
  return { expired };
}
