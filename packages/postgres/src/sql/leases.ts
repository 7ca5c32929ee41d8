import {
  type ExpireLeasesRequest, type ExpireLeasesResult, type ExpiredLease, type HeartbeatRequest, type HeartbeatResult,
  type ReleaseRequest, type ReleaseResult, JOB_STATE_CODES, TRANSITION_CAUSE_CODES, clampToBound, leaseExpiryDisposition,
} from "@belay/contract";
import { DueQueues, type StoreContext } from "../context.js";
import { type EndedParent, resolveChildren } from "./children.js";
import { decodeRetry, feedCtes, transitionAssignments } from "./jobs.js";

const STATE = JOB_STATE_CODES;

/**
 * Heartbeats renew every fenced lease of one worker in one statement; the answer carries the
 * cancel request. A lease that is not the caller's, at another attempt, or dead at now is lost.
 *
 * Like an outcome batch, each lease is found by one probe of the id index and updated by
 * primary key, with the fence checked again on the row's latest version; the leased state is
 * compared with the copy read by the probe, not with a literal, so that the partial index of
 * leased jobs never qualifies and no plan walks every leased job of every queue.
 */
export const HEARTBEAT = (S: string) => `
WITH r AS (
  SELECT * FROM unnest((SELECT $1::text[]), (SELECT $2::int[])) WITH ORDINALITY AS r(job_id, attempt, ord)
),
cur AS MATERIALIZED (
  SELECT j.seq, j.state, r.attempt FROM r
  CROSS JOIN LATERAL (
    SELECT j.seq, j.state, j.lease_owner, j.attempt, j.lease_expires_at FROM ${S}.jobs j WHERE j.id = r.job_id OFFSET 0
  ) j
  WHERE j.state = ${STATE.leased} AND j.lease_owner = $3 AND j.attempt = r.attempt AND j.lease_expires_at > $4
),
renewed AS (
  UPDATE ${S}.jobs j SET lease_expires_at = $4 + $5::bigint
  FROM cur c
  WHERE j.seq = ANY(ARRAY(SELECT x.seq FROM cur x)) AND j.seq = c.seq
    AND j.state = c.state AND j.lease_owner = $3 AND j.attempt = c.attempt AND j.lease_expires_at > $4
  RETURNING j.id, j.attempt, j.cancel_requested_by IS NOT NULL AS cancel_requested
)
SELECT r.ord, n.id IS NOT NULL AS renewed, coalesce(n.cancel_requested, false) AS cancel_requested
FROM r LEFT JOIN renewed n ON n.id = r.job_id AND n.attempt = r.attempt
ORDER BY r.ord`;

/** See `JobStore.heartbeat`. */
export async function heartbeat(ctx: StoreContext, request: HeartbeatRequest): Promise<HeartbeatResult[]> {
  const { workerId, leases, leaseMs, now } = request;
  if (leases.length === 0) return [];
  return ctx.executor.run("heartbeat", "autocommit", async (session) => {
    const rows = await session.query(ctx.sql.get("heartbeat", HEARTBEAT), [
      leases.map((l) => l.jobId),
      leases.map((l) => l.attempt),
      workerId,
      now,
      leaseMs,
    ]);
    await session.step("leases renewed");
    return rows.map((row, i): HeartbeatResult => {
      const { jobId } = leases[i]!;
      return row["renewed"] === true
        ? { jobId, status: "renewed", leaseExpiresAt: now + leaseMs, cancelRequested: row["cancel_requested"] === true }
        : { jobId, status: "lost" };
    });
  });
}

/** Graceful release of fenced leases: scheduled, due now, the attempt not counted (found as heartbeats find theirs). */
export const RELEASE = (S: string) => `
WITH r AS (
  SELECT * FROM unnest((SELECT $1::text[]), (SELECT $2::int[])) WITH ORDINALITY AS r(job_id, attempt, ord)
),
cur AS MATERIALIZED (
  SELECT j.seq, j.state, r.attempt, r.ord FROM r
  CROSS JOIN LATERAL (
    SELECT j.seq, j.state, j.lease_owner, j.attempt, j.lease_expires_at FROM ${S}.jobs j WHERE j.id = r.job_id OFFSET 0
  ) j
  WHERE j.state = ${STATE.leased} AND j.lease_owner = $3 AND j.attempt = r.attempt AND j.lease_expires_at > $4
),
released AS (
  UPDATE ${S}.jobs j SET state = ${STATE.scheduled}, due_at = $4, releases = j.releases + 1, lease_owner = NULL, lease_expires_at = NULL,
         cancel_requested_by = NULL,
         ${transitionAssignments(S, {
           row: "j", cause: `${TRANSITION_CAUSE_CODES.released}`, worker: "$3",
           history: "(SELECT $5::boolean)", cap: "$6",
         })}
  FROM cur c
  WHERE j.seq = ANY(ARRAY(SELECT x.seq FROM cur x)) AND j.seq = c.seq
    AND j.state = c.state AND j.lease_owner = $3 AND j.attempt = c.attempt AND j.lease_expires_at > $4
  RETURNING j.seq, j.id, j.queue, j.state, j.attempt, j.transition_count, j.history, c.ord
),
${feedCtes(S, "released", "$4", "(SELECT $5::boolean)", "$6")}
SELECT r.ord, e.queue FROM r LEFT JOIN released e ON e.ord = r.ord ORDER BY r.ord`;

/** See `JobStore.release`. A job named twice is released by the first row; the second is stale. */
export async function release(ctx: StoreContext, request: ReleaseRequest): Promise<ReleaseResult[]> {
  const { workerId, leases, now } = request;
  if (leases.length === 0) return [];
  const seen = new Set<string>();
  const firsts = leases.filter((l) => (seen.has(l.jobId) ? false : (seen.add(l.jobId), true)));
  const due = new DueQueues(now);
  const released = await ctx.executor.run("release", "autocommit", async (session) => {
    const rows = await session.query(ctx.sql.get("release", RELEASE), [
      firsts.map((l) => l.jobId),
      firsts.map((l) => l.attempt),
      workerId,
      now,
      ctx.history,
      ctx.bounds.transitionsPerJob,
    ]);
    await session.step("jobs released");
    const done = new Set<string>();
    for (const [i, row] of rows.entries()) {
      if (row["queue"] === null) continue;
      done.add(firsts[i]!.jobId);
      due.add(row["queue"] as string, STATE.scheduled, now);
    }
    return done;
  });
  ctx.hint(due.queues);
  const answered = new Set<string>();
  return leases.map(({ jobId }) => {
    const first = !answered.has(jobId);
    answered.add(jobId);
    return { jobId, status: first && released.has(jobId) ? "released" : "stale" };
  });
}

// Lease expiry is off the hot path, so it takes a few round trips in one transaction rather
// than one statement: the candidate leases are locked, the contract's rule
// (`leaseExpiryDisposition`) decides each one in JavaScript — the same rule every store applies —
// and one statement fed by arrays writes every disposition back with its transition. Children of
// the jobs it ends are resolved in the same transaction, so the whole sweep commits or not at all.

/**
 * The expired leases of the served queues (all queues when none are named), oldest expiry first,
 * locked FOR UPDATE SKIP LOCKED: a concurrent sweeper skips them (and this one skips its), so
 * each lease is disposed of exactly once, and no heartbeat, outcome or release can change them
 * before this transaction ends. Each queue's leases are read from the leased-jobs index in expiry
 * order under a LIMIT; a lease renewed since the statement's snapshot is re-checked on the row's
 * latest version when it is locked, and is then no longer a candidate. Each comes with what the
 * decision and its transition need: the attempt counts, a pending cancel request, the job's own
 * retry policy (read here and at claims only) and the owner of the lease that lapsed.
 */
export const LOCK_EXPIRED_LEASES = (S: string) => `
WITH served AS (
  SELECT queue FROM ${S}.queues WHERE $1::text[] IS NULL
  UNION
  SELECT unnest($1::text[])
)
SELECT c.seq, c.id, c.queue, c.attempt, c.releases, c.cancel_requested_by, c.has_children, c.retry, c.lease_owner
FROM served s CROSS JOIN LATERAL (
  SELECT j.seq, j.id, j.queue, j.attempt, j.releases, j.cancel_requested_by, j.has_children, j.retry, j.lease_owner, j.lease_expires_at
  FROM ${S}.jobs j
  WHERE j.queue = s.queue AND j.state = ${STATE.leased} AND j.lease_expires_at <= $2
  ORDER BY j.lease_expires_at, j.seq
  LIMIT $3
  FOR UPDATE SKIP LOCKED
) c
ORDER BY c.lease_expires_at, c.seq
LIMIT $3`;

/**
 * Writes the decided dispositions of locked leases by primary key: the new state, the due time
 * (kept where none is given), the terminal cause (none for a rescheduled job), and the
 * transitions, which name the owner of the lease that lapsed (`$8`, read when the rows were
 * locked: the update clears it). The rows have been this transaction's since they were locked,
 * so the expiry is not checked again.
 */
export const DISPOSE_LEASES = (S: string) => `
WITH d AS (
  SELECT * FROM unnest($1::bigint[], $2::int2[], $3::bigint[], $4::text[], $8::text[]) AS d(seq, state, due_at, terminal_cause, owner)
),
expired AS (
  UPDATE ${S}.jobs j SET
    state = d.state,
    due_at = coalesce(d.due_at, j.due_at),
    terminal_at = CASE WHEN d.state >= ${STATE.succeeded} THEN $5::bigint END,
    terminal_cause = d.terminal_cause,
    lease_owner = NULL, lease_expires_at = NULL, cancel_requested_by = NULL,
    ${transitionAssignments(S, {
      row: "j", cause: `${TRANSITION_CAUSE_CODES.leaseExpired}`, worker: "d.owner",
      history: "$6", cap: "$7",
    })}
  FROM d
  WHERE j.seq = ANY(ARRAY(SELECT x.seq FROM d x)) AND j.seq = d.seq
  RETURNING j.seq, j.state, j.attempt, j.transition_count, j.history, d.owner
),
${feedCtes(S, "expired", "$5", "$6", "$7")}
SELECT count(*) AS expired FROM expired`;

/** See `JobStore.expireLeases`. */
export async function expireLeases(ctx: StoreContext, request: ExpireLeasesRequest): Promise<ExpireLeasesResult> {
  const { now, retry } = request;
  const max = clampToBound(request.max, ctx.bounds.claimBatch);
  const queues = request.queues === undefined ? null : [...new Set(request.queues)];
  if (queues !== null && queues.length === 0) return { expired: [] };
  const due = new DueQueues(now);
  const expired = await ctx.executor.run("expireLeases", "transaction", async (session): Promise<ExpiredLease[]> => {
    const leases = await session.query(ctx.sql.get("lockExpiredLeases", LOCK_EXPIRED_LEASES), [queues, now, max]);
    if (leases.length === 0) return [];
    await session.step("leases locked");
    const decided = leases.map((row) => {
      const job = {
        attempt: row["attempt"] as number,
        releases: row["releases"] as number,
        cancelRequestedBy: (row["cancel_requested_by"] as string | null) ?? null,
        retry: decodeRetry(row["retry"]),
      };
      return { row, disposition: leaseExpiryDisposition(job, retry, now) };
    });
    await session.query(ctx.sql.get("disposeLeases", DISPOSE_LEASES), [
      decided.map(({ row }) => row["seq"]),
      decided.map(({ disposition }) => JOB_STATE_CODES[disposition.state]),
      decided.map(({ disposition }) => (disposition.state === "scheduled" ? disposition.dueAt : null)),
      decided.map(({ disposition }) => (disposition.state === "scheduled" ? null : disposition.terminalCause)),
      now,
      ctx.history,
      ctx.bounds.transitionsPerJob,
      decided.map(({ row }) => row["lease_owner"]),
    ]);
    await session.step("leases expired");
    const ended: EndedParent[] = [];
    for (const { row, disposition } of decided) {
      if (disposition.state === "scheduled") due.add(row["queue"] as string, STATE.scheduled, disposition.dueAt);
      else if (row["has_children"] === true) ended.push({ seq: row["seq"] as number, id: row["id"] as string, state: STATE[disposition.state] });
    }
    await resolveChildren(session, ctx, ended, now, due);
    return decided.map(({ row, disposition }) => ({ jobId: row["id"] as string, state: disposition.state }));
  });
  ctx.hint(due.queues);
  return { expired };
}
