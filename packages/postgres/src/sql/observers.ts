import {
  type ClaimObserverDeliveriesRequest, type ClaimObserverDeliveriesResult, type ObserverDeadLetter, type ObserverDelivery,
  type ObserverStatus, type ObserverSubscription, type QueryRow, type RegisterObserverRequest, type RegisterObserverResult,
  type ReportObserverDeliveriesRequest, type ReportObserverDeliveriesResult, JOB_STATE_CODES, clampToBound,
} from "@belay/contract";
import type { StoreContext } from "../context.js";
import type { Session } from "../session.js";
import { feedRowOf, stateOf } from "./jobs.js";

// The transition log is the feed (one row per writing statement, its arrays one entry per job
// that moved; see `transitionAssignments`), walked entry by entry in (xid, position) order, and
// only over rows whose writing transaction is older than the oldest transaction still running
// (pg_snapshot_xmin): every such transaction has finished, so no entry can ever appear below the
// walk's cursor. A transaction that commits late holds the horizon back until it commits, and its
// entries are then walked after the cursor — never skipped. Positions (one sequence) agree with
// the walk order except between transactions that overlapped.
//
// The cursor is stored as the pair (cursor_xid, cursor_position); it is reported as the position.

/** The feed's entries as rows `t` (position, job_seq, ordinal, state, attempt) of feed row `f` (xid, at). */
const ENTRIES = (S: string) =>
  `${S}.feed f CROSS JOIN LATERAL unnest(f.positions, f.job_seqs, f.ordinals, f.states, f.attempts) AS t(position, job_seq, ordinal, state, attempt)`;

/** How a statement reads observer `o`'s columns: joined per row, or from a one-row CTE `o` by scalar subqueries. */
type ObserverColumns = (column: string) => string;
const JOINED: ObserverColumns = (column) => `o.${column}`;
const SINGLE: ObserverColumns = (column) => `(SELECT ${column} FROM o)`;

/**
 * The entries after observer `o`'s cursor. The scan of the feed's key starts at the row holding
 * the cursor (see `feedRowOf`), not at its transaction's first row; the pair picks the entries.
 * Walked in (xid, first_position, position) order: the (xid, position) order, since one
 * transaction's rows hold ascending, disjoint ranges of positions. With `SINGLE`, the bounds are
 * scalars, so the feed's key scan is the outermost one and its order feeds the walk's LIMIT
 * (an incremental sort of each row's few entries), instead of a sort of everything after the cursor.
 */
const AFTER_CURSOR = (S: string, o: ObserverColumns) => `(f.xid, f.first_position) >= (${o("cursor_xid")}, coalesce(
    (SELECT r.first_position FROM (${feedRowOf(S, o("cursor_xid"), o("cursor_position"))}) r), -1))
  AND (f.xid, t.position) > (${o("cursor_xid")}, ${o("cursor_position")})`;

/**
 * Whether entry `t` of job `j` is one observer `o` subscribes to: its state, job name and queue,
 * and still within the job's history (`cap`, a placeholder: entries dropped beyond
 * `transitionsPerJob` are not delivered, as on every store). The casts keep `= ANY` reading a
 * scalar subquery's array as an array, not as the rows of a subquery.
 */
const subscribed = (cap: string, o: ObserverColumns) => `t.state = ANY(${o("states")}::smallint[])
  AND (${o("job_names")} IS NULL OR j.job_name = ANY(${o("job_names")}::text[]))
  AND (${o("queues")} IS NULL OR j.queue = ANY(${o("queues")}::text[]))
  AND t.ordinal > j.transition_count - ${cap}`;

// A new observer starting at the end takes the newest transition it can see as its cursor; a
// transaction still running at that moment whose rows would sort before it is counted as "before
// registration" (startAt `end` promises later transitions only).
const REGISTER = (S: string) => `
WITH tail AS (
  SELECT xid, positions[cardinality(positions)] AS position FROM ${S}.feed ORDER BY xid DESC, first_position DESC LIMIT 1
)
INSERT INTO ${S}.observers AS o (id, states, job_names, queues, cursor_xid, cursor_position)
SELECT $1, $2, $3, $4,
       CASE WHEN $5 THEN '0'::xid8 ELSE coalesce((SELECT xid FROM tail), '0'::xid8) END,
       CASE WHEN $5 THEN -1 ELSE coalesce((SELECT position FROM tail), -1) END
ON CONFLICT (id) DO UPDATE SET states = EXCLUDED.states, job_names = EXCLUDED.job_names, queues = EXCLUDED.queues
RETURNING o.cursor_position, (o.xmax = 0) AS created`;

/** See `JobStore.registerObserver`. */
export async function registerObserver(ctx: StoreContext, request: RegisterObserverRequest): Promise<RegisterObserverResult> {
  const { subscription } = request;
  const [row] = await ctx.executor.run("registerObserver", "autocommit", async (session) => {
    const rows = await session.query(ctx.sql.get("registerObserver", REGISTER), [
      subscription.observerId,
      subscription.states.map((s) => JOB_STATE_CODES[s]),
      subscription.jobNames ?? null,
      subscription.queues ?? null,
      request.startAt === "beginning",
    ]);
    await session.step("observer written");
    return rows;
  });
  return { status: row!["created"] === true ? "created" : "updated", cursor: row!["cursor_position"] as number };
}

const TAKE_LEASE = (S: string) => `
UPDATE ${S}.observers SET lease_owner = $2, lease_expires_at = $3 + $4::bigint
WHERE id = $1 AND (lease_owner IS NULL OR lease_owner = $2 OR lease_expires_at <= $3)
RETURNING id`;

const LEASE_OWNER = (S: string) => `SELECT lease_owner FROM ${S}.observers WHERE id = $1`;

/** The next deliverable transitions of one observer, in walk order, below the horizon. */
export const WALK = (S: string) => `
WITH o AS MATERIALIZED (SELECT * FROM ${S}.observers WHERE id = $1)
SELECT f.xid::text AS xid, t.position, t.state, t.attempt, f.at, fd.detail AS failure_detail, j.id AS job_id, j.job_name, j.queue,
       d.attempts, d.next_attempt_at
FROM ${ENTRIES(S)}
CROSS JOIN LATERAL (SELECT j.id, j.job_name, j.queue, j.transition_count FROM ${S}.jobs j WHERE j.seq = t.job_seq OFFSET 0) j
LEFT JOIN LATERAL (SELECT fd.detail FROM ${S}.failure_details fd WHERE fd.job_seq = t.job_seq AND fd.ordinal = t.ordinal OFFSET 0) fd ON true
LEFT JOIN LATERAL (
  SELECT d.attempts, d.next_attempt_at, d.resolved FROM ${S}.observer_deliveries d WHERE d.observer_id = $1 AND d.position = t.position OFFSET 0
) d ON true
WHERE ${AFTER_CURSOR(S, SINGLE)}
  AND f.xid < pg_snapshot_xmin(pg_current_snapshot())
  AND ${subscribed("$3", SINGLE)}
  AND coalesce(d.resolved, 0) = 0
-- The lookups are lateral probes (OFFSET 0 keeps them so): a hash join would lose the feed key's
-- order, and the walk would sort every entry after the cursor to return its first few.
ORDER BY f.xid, f.first_position, t.position
LIMIT $2`;

const HAND_OUT = (S: string) => `
INSERT INTO ${S}.observer_deliveries (observer_id, xid, position, attempts)
SELECT $1, x::xid8, p, a FROM unnest($2::text[], $3::bigint[], $4::int[]) AS d(x, p, a)
ON CONFLICT (observer_id, position) DO UPDATE SET attempts = EXCLUDED.attempts, next_attempt_at = NULL`;

/** See `JobStore.claimObserverDeliveries`. */
export async function claimObserverDeliveries(
  ctx: StoreContext,
  request: ClaimObserverDeliveriesRequest,
): Promise<ClaimObserverDeliveriesResult> {
  const { observerId, workerId, now, leaseMs } = request;
  const max = clampToBound(request.max, ctx.bounds.claimBatch);
  return ctx.executor.run("claimObserverDeliveries", "transaction", async (session): Promise<ClaimObserverDeliveriesResult> => {
    const [leased] = await session.query(ctx.sql.get("takeObserverLease", TAKE_LEASE), [observerId, workerId, now, leaseMs]);
    if (leased === undefined) {
      const [owner] = await session.query(ctx.sql.get("observerLeaseOwner", LEASE_OWNER), [observerId]);
      return owner === undefined ? { status: "notFound" } : { status: "busy", leaseOwner: owner["lease_owner"] as string };
    }
    await session.step("lease taken");
    const rows = await session.query(ctx.sql.get("walkObserver", WALK), [observerId, max, ctx.bounds.transitionsPerJob]);
    const deliveries: ObserverDelivery[] = [];
    const xids: string[] = [];
    for (const row of rows) {
      const nextAttemptAt = row["next_attempt_at"] as number | null;
      if (nextAttemptAt !== null && nextAttemptAt > now) break; // head of line: a retry not yet due
      xids.push(row["xid"] as string);
      deliveries.push({
        position: row["position"] as number,
        jobId: row["job_id"] as string,
        jobName: row["job_name"] as string,
        queue: row["queue"] as string,
        state: stateOf(row["state"]),
        attempt: row["attempt"] as number,
        at: row["at"] as number,
        failureDetail: (row["failure_detail"] as string | null) ?? null,
        deliveryAttempt: ((row["attempts"] as number | null) ?? 0) + 1,
      });
    }
    if (deliveries.length > 0) {
      await session.query(ctx.sql.get("handOutDeliveries", HAND_OUT), [
        observerId,
        xids,
        deliveries.map((d) => d.position),
        deliveries.map((d) => d.deliveryAttempt),
      ]);
      await session.step("deliveries handed out");
    }
    return { status: "acquired", leaseExpiresAt: now + leaseMs, deliveries };
  });
}

const FENCE = (S: string) => `SELECT id FROM ${S}.observers WHERE id = $1 AND lease_owner = $2 AND lease_expires_at > $3 FOR UPDATE`;

const RECORD_OUTCOMES = (S: string) => `
WITH o AS (
  SELECT * FROM unnest($2::bigint[], $3::int2[], $4::bigint[], $5::text[]) WITH ORDINALITY AS o(position, kind, retry_at, error, ord)
),
recorded AS (
  UPDATE ${S}.observer_deliveries d
  SET resolved = CASE o.kind WHEN 0 THEN 1 WHEN 2 THEN 2 ELSE 0 END,
      next_attempt_at = CASE WHEN o.kind = 1 THEN o.retry_at ELSE d.next_attempt_at END
  FROM o
  WHERE d.observer_id = $1 AND d.position = o.position AND d.resolved = 0
  RETURNING d.xid, d.position, d.attempts, o.kind, o.error, o.ord
),
dead AS (
  INSERT INTO ${S}.observer_dead_letters (observer_id, position, job_id, state, attempt, at, delivery_attempts, dead_lettered_at, error)
  SELECT $1, r.position, coalesce(j.id, ''), coalesce(t.state, ${JOB_STATE_CODES.scheduled}), coalesce(t.attempt, 0), coalesce(t.at, $6), r.attempts, $6, r.error
  FROM recorded r
  LEFT JOIN LATERAL (
    SELECT t.job_seq, t.state, t.attempt, f.at FROM (${feedRowOf(S, "r.xid", "r.position")}) k
    JOIN ${ENTRIES(S)} ON f.xid = k.xid AND f.first_position = k.first_position
    WHERE t.position = r.position
  ) t ON true
  LEFT JOIN ${S}.jobs j ON j.seq = t.job_seq
  WHERE r.kind = 2
  ORDER BY r.ord
)
SELECT count(*) FROM recorded`;

/**
 * Moves the cursor to the last settled row before the first row that blocks it: a subscribed
 * transition not yet delivered or dead-lettered. Rows beyond the horizon never settle yet.
 */
export const ADVANCE = (S: string) => `
WITH o AS MATERIALIZED (SELECT * FROM ${S}.observers WHERE id = $1),
blocker AS (
  SELECT f.xid, f.first_position, t.position FROM ${ENTRIES(S)}
  CROSS JOIN LATERAL (SELECT j.job_name, j.queue, j.transition_count FROM ${S}.jobs j WHERE j.seq = t.job_seq OFFSET 0) j
  LEFT JOIN LATERAL (SELECT d.resolved FROM ${S}.observer_deliveries d WHERE d.observer_id = $1 AND d.position = t.position OFFSET 0) d ON true
  WHERE ${AFTER_CURSOR(S, SINGLE)} AND ${subscribed("$2", SINGLE)} AND coalesce(d.resolved, 0) = 0
  ORDER BY f.xid, f.first_position, t.position LIMIT 1
),
settled AS (
  SELECT f.xid, t.position FROM ${ENTRIES(S)}
  WHERE ${AFTER_CURSOR(S, SINGLE)}
    AND f.xid < pg_snapshot_xmin(pg_current_snapshot())
    -- Up to the blocker's feed row (a bound of the key, so the backward scan starts there), and
    -- before the blocker in it.
    AND (f.xid, f.first_position) <= (coalesce((SELECT b.xid FROM blocker b), '18446744073709551615'::xid8),
                                      coalesce((SELECT b.first_position FROM blocker b), 9223372036854775807))
    AND (NOT EXISTS (SELECT 1 FROM blocker) OR (f.xid, t.position) < (SELECT b.xid, b.position FROM blocker b))
  ORDER BY f.xid DESC, f.first_position DESC, t.position DESC LIMIT 1
),
moved AS (
  UPDATE ${S}.observers SET cursor_xid = s.xid, cursor_position = s.position FROM settled s WHERE id = $1
  RETURNING cursor_xid, cursor_position
),
cleared AS (
  DELETE FROM ${S}.observer_deliveries d USING moved m
  WHERE d.observer_id = $1 AND (d.xid, d.position) <= (m.cursor_xid, m.cursor_position)
)
SELECT coalesce((SELECT cursor_position FROM moved), (SELECT cursor_position FROM o)) AS cursor`;

const KINDS = { delivered: 0, retry: 1, deadLettered: 2 } as const;

/** See `JobStore.reportObserverDeliveries`. */
export async function reportObserverDeliveries(
  ctx: StoreContext,
  request: ReportObserverDeliveriesRequest,
): Promise<ReportObserverDeliveriesResult> {
  const { observerId, workerId, outcomes, now } = request;
  return ctx.executor.run("reportObserverDeliveries", "transaction", async (session): Promise<ReportObserverDeliveriesResult> => {
    const [fenced] = await session.query(ctx.sql.get("observerFence", FENCE), [observerId, workerId, now]);
    if (fenced === undefined) return { status: "stale" };
    await session.query(ctx.sql.get("recordDeliveries", RECORD_OUTCOMES), [
      observerId,
      outcomes.map((o) => o.position),
      outcomes.map((o) => KINDS[o.outcome]),
      outcomes.map((o) => (o.outcome === "retry" ? o.retryAt : null)),
      outcomes.map((o) => (o.outcome === "deadLettered" ? o.error : null)),
      now,
    ]);
    await session.step("outcomes recorded");
    const [row] = await session.query(ctx.sql.get("advanceObserver", ADVANCE), [observerId, ctx.bounds.transitionsPerJob]);
    return { status: "applied", cursor: row!["cursor"] as number };
  });
}

const STATUS = (S: string) => `
SELECT o.id, array_to_json(o.job_names)::text AS job_names, array_to_json(o.queues)::text AS queues,
       array_to_json(o.states)::text AS state_codes, o.cursor_position, o.lease_owner, o.lease_expires_at,
       (SELECT count(*) FROM ${S}.observer_dead_letters x WHERE x.observer_id = o.id) AS dead_letters,
       p.pending, p.oldest
FROM ${S}.observers o
CROSS JOIN LATERAL (
  SELECT count(*) AS pending, (array_agg(f.at ORDER BY f.xid, f.first_position, t.position))[1] AS oldest
  FROM ${ENTRIES(S)}
  JOIN ${S}.jobs j ON j.seq = t.job_seq
  LEFT JOIN ${S}.observer_deliveries d ON d.observer_id = o.id AND d.position = t.position
  WHERE ${AFTER_CURSOR(S, JOINED)} AND ${subscribed("$2", JOINED)} AND coalesce(d.resolved, 0) = 0
) p
WHERE ($1::text IS NULL OR o.id = $1)
ORDER BY o.id`;

function toStatus(row: QueryRow): ObserverStatus {
  const jobNames = JSON.parse(row["job_names"] as string) as string[] | null;
  const queues = JSON.parse(row["queues"] as string) as string[] | null;
  const subscription: ObserverSubscription = {
    observerId: row["id"] as string,
    states: (JSON.parse(row["state_codes"] as string) as number[]).map(stateOf),
    ...(jobNames === null ? {} : { jobNames }),
    ...(queues === null ? {} : { queues }),
  };
  return {
    subscription,
    cursor: row["cursor_position"] as number,
    leaseOwner: (row["lease_owner"] as string | null) ?? null,
    leaseExpiresAt: (row["lease_expires_at"] as number | null) ?? null,
    pending: row["pending"] as number,
    oldestPendingAt: (row["oldest"] as number | null) ?? null,
    deadLetters: row["dead_letters"] as number,
  };
}

/** One observer's status with an id, every observer's without. */
async function observerStatuses(ctx: StoreContext, observerId: string | null): Promise<ObserverStatus[]> {
  const rows = await ctx.executor.run("observerStatus", "autocommit", (s) => s.query(ctx.sql.get("observerStatus", STATUS), [observerId, ctx.bounds.transitionsPerJob]));
  return rows.map(toStatus);
}

/** See `JobStore.getObserver`. */
export async function getObserver(ctx: StoreContext, observerId: string): Promise<ObserverStatus | null> {
  return (await observerStatuses(ctx, observerId))[0] ?? null;
}

/** See `JobStore.listObservers`. */
export function listObservers(ctx: StoreContext): Promise<ObserverStatus[]> {
  return observerStatuses(ctx, null);
}

const REMOVE = (S: string) => `
WITH gone AS (DELETE FROM ${S}.observers WHERE id = $1 RETURNING id),
gone_deliveries AS (DELETE FROM ${S}.observer_deliveries WHERE observer_id IN (SELECT id FROM gone)),
gone_dead AS (DELETE FROM ${S}.observer_dead_letters WHERE observer_id IN (SELECT id FROM gone))
SELECT count(*) AS removed FROM gone`;

/** See `JobStore.removeObserver`. */
export async function removeObserver(
  ctx: StoreContext,
  request: { readonly observerId: string },
): Promise<{ readonly status: "removed" | "notFound" }> {
  return ctx.executor.run("removeObserver", "autocommit", async (session: Session) => {
    const [row] = await session.query(ctx.sql.get("removeObserver", REMOVE), [request.observerId]);
    await session.step("observer removed");
    return { status: (row!["removed"] as number) > 0 ? "removed" : "notFound" };
  });
}

const DEAD_LETTERS = (S: string) => `
SELECT observer_id, position, job_id, state, attempt, at, delivery_attempts, dead_lettered_at, error
FROM ${S}.observer_dead_letters WHERE observer_id = $1 ORDER BY seq`;

/** See `JobStore.listObserverDeadLetters`. */
export async function listObserverDeadLetters(ctx: StoreContext, observerId: string): Promise<ObserverDeadLetter[]> {
  const rows = await ctx.executor.run("listObserverDeadLetters", "autocommit", (s) =>
    s.query(ctx.sql.get("observerDeadLetters", DEAD_LETTERS), [observerId]),
  );
  return rows.map((row) => ({
    observerId: row["observer_id"] as string,
    position: row["position"] as number,
    jobId: row["job_id"] as string,
    state: stateOf(row["state"]),
    attempt: row["attempt"] as number,
    at: row["at"] as number,
    deliveryAttempts: row["delivery_attempts"] as number,
    deadLetteredAt: row["dead_lettered_at"] as number,
    error: row["error"] as string,
  }));
}
