import {
  type ExpireLeasesRequest,
  type ExpiredLease,
  type HeartbeatRequest,
  type HeartbeatResult,
  type ReleaseRequest,
  type ReleaseResult,
  JOB_STATE_CODES,
  clampToBound,
  terminalCauseSql,
} from "@belay/contract";
import { DueQueues, type StoreContext } from "../context.js";
import { sqlState } from "../pg-errors.js";
import { type EndedParent, resolveChildren } from "./children.js";
import { stateOf, transitionCtes } from "./jobs.js";

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
         cancel_requested_by = NULL, transition_count = j.transition_count + 1
  FROM cur c
  WHERE j.seq = ANY(ARRAY(SELECT x.seq FROM cur x)) AND j.seq = c.seq
    AND j.state = c.state AND j.lease_owner = $3 AND j.attempt = c.attempt AND j.lease_expires_at > $4
  RETURNING j.seq, j.id, j.queue, j.state, j.attempt, j.transition_count, c.ord
),
${transitionCtes(S, "released", "$4", "(SELECT $5::boolean)", "$6")}
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

/**
 * Expired leases of the served queues (all queues when none are named), oldest expiry first,
 * taken with SKIP LOCKED so concurrent sweepers dispose of each exactly once; each becomes
 * cancelled (a pending cancel request), dead-lettered (at the attempt ceiling) or scheduled
 * after the retry delay of its counted attempt. Like outcomes, the statement hands over to a
 * transaction when a job it ends has children.
 */
export const EXPIRE_LEASES = (S: string) => `
WITH served AS (
  SELECT queue FROM ${S}.queues WHERE $1::text[] IS NULL
  UNION
  SELECT unnest($1::text[])
),
candidates AS MATERIALIZED (
  SELECT c.seq, c.state, c.lease_expires_at FROM served s CROSS JOIN LATERAL (
    SELECT j.seq, j.state, j.lease_expires_at FROM ${S}.jobs j
    WHERE j.queue = s.queue AND j.state = ${STATE.leased} AND j.lease_expires_at <= $2
    ORDER BY j.lease_expires_at, j.seq
    LIMIT $3
    FOR UPDATE SKIP LOCKED
  ) c
  ORDER BY c.lease_expires_at, c.seq
  LIMIT $3
),
expired AS (
  UPDATE ${S}.jobs j SET
    state = CASE WHEN j.cancel_requested_by IS NOT NULL THEN ${STATE.cancelled} WHEN j.attempt - j.releases >= $4 THEN ${STATE.deadLettered} ELSE ${STATE.scheduled} END,
    due_at = CASE WHEN j.cancel_requested_by IS NULL AND j.attempt - j.releases < $4
                  THEN $2 + coalesce(($5::bigint[])[least(greatest(j.attempt - j.releases, 1), cardinality($5::bigint[]))], 0)
                  ELSE j.due_at END,
    terminal_at = CASE WHEN j.cancel_requested_by IS NOT NULL OR j.attempt - j.releases >= $4 THEN $2::bigint END,
    terminal_cause = CASE WHEN j.cancel_requested_by IS NOT NULL THEN ${terminalCauseSql("cancelledOnExpiry", { actor: "j.cancel_requested_by" })}
                          WHEN j.attempt - j.releases >= $4 THEN ${terminalCauseSql("expiredAtCeiling", { maxAttempts: "$4" })} END,
    lease_owner = NULL, lease_expires_at = NULL, cancel_requested_by = NULL,
    transition_count = j.transition_count + 1
  FROM candidates c
  -- By primary key; the leased state is compared with the candidate's copy, not a literal (see HEARTBEAT).
  WHERE j.seq = ANY(ARRAY(SELECT x.seq FROM candidates x)) AND j.seq = c.seq AND j.state = c.state AND j.lease_expires_at <= $2
  RETURNING j.seq, j.id, j.queue, j.state, j.due_at, j.attempt, j.has_children, j.transition_count, c.lease_expires_at AS expired_at
),
${transitionCtes(S, "expired", "$2", "(SELECT $6::boolean)", "$7")}
SELECT seq, id, queue, state, due_at, has_children,
       ${S}.retry_in_transaction($8 AND EXISTS (SELECT 1 FROM expired x WHERE x.has_children AND x.state >= ${STATE.succeeded})) AS handover
FROM expired ORDER BY expired_at, seq`;

/** See `JobStore.expireLeases`. */
export async function expireLeases(ctx: StoreContext, request: ExpireLeasesRequest): Promise<ExpiredLease[]> {
  const { now, retry } = request;
  const max = clampToBound(request.max, ctx.bounds.claimBatch);
  const queues = request.queues === undefined ? null : [...new Set(request.queues)];
  if (queues !== null && queues.length === 0) return [];
  const attempt = (mode: "autocommit" | "transaction") =>
    ctx.executor.run("expireLeases", mode, async (session) => {
      const due = new DueQueues(now);
      const rows = await session.query(ctx.sql.get("expireLeases", EXPIRE_LEASES), [
        queues,
        now,
        max,
        retry.maxAttempts,
        retry.delaysMs,
        ctx.history,
        ctx.bounds.transitionsPerJob,
        !session.transactional,
      ]);
      await session.step("leases expired");
      const ended: EndedParent[] = [];
      const expired = rows.map((row): ExpiredLease => {
        const state = row["state"] as number;
        due.add(row["queue"] as string, state, row["due_at"] as number);
        if (state >= STATE.succeeded && row["has_children"] === true) ended.push({ seq: row["seq"] as number, id: row["id"] as string, state });
        return { jobId: row["id"] as string, state: stateOf(state) };
      });
      await resolveChildren(session, ctx, ended, now, due);
      return { expired, due };
    });
  let result: Awaited<ReturnType<typeof attempt>>;
  try {
    result = await attempt("autocommit");
  } catch (error) {
    if (sqlState(error) !== "BLY01") throw error;
    result = await attempt("transaction");
  }
  ctx.hint(result.due.queues);
  return result.expired;
}
