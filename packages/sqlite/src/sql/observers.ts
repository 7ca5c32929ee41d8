import {
  type ClaimObserverDeliveriesRequest, type ClaimObserverDeliveriesResult, type Instant, type ObserverDeadLetter,
  type ObserverDelivery, type ObserverStatus, type ObserverSubscription, type RegisterObserverRequest,
  type RegisterObserverResult, type ReportObserverDeliveriesRequest, type ReportObserverDeliveriesResult, JOB_STATE_CODES,
  clampToBound, jobStateFromCode,
} from "@belay/contract";
import type { Tables } from "../tables.js";
import type { OpContext, ReadContext, Steps } from "../transaction.js";

// Observers walk the transition log in position order. Positions are assigned under the file's
// single write lock, so position order is commit order: a transition can never commit "behind"
// a cursor that has already passed its position.

const PENDING = 0;
const DELIVERED = 1;
const DEAD = 2;
/** Log rows read per round of a walk. */
const WALK_BATCH = 256;

const OBSERVER = (t: Tables) => `SELECT id, subscription, cursor, lease_owner, lease_expires_at FROM ${t.observers} WHERE id = ?`;
const LIST_OBSERVERS = (t: Tables) => `SELECT id, subscription, cursor, lease_owner, lease_expires_at FROM ${t.observers} ORDER BY id`;
const INSERT_OBSERVER = (t: Tables) => `INSERT INTO ${t.observers} (id, subscription, cursor) VALUES (?, ?, ?)`;
const RESUBSCRIBE = (t: Tables) => `UPDATE ${t.observers} SET subscription = ? WHERE id = ?`;
const LAST_POSITION = () => `SELECT seq FROM sqlite_sequence WHERE name = ?`;
const TAKE_LEASE = (t: Tables) => `UPDATE ${t.observers} SET lease_owner = ?, lease_expires_at = ? WHERE id = ?`;
const MOVE_CURSOR = (t: Tables) => `UPDATE ${t.observers} SET cursor = ? WHERE id = ?`;
const DELETE_OBSERVER = (t: Tables) => `DELETE FROM ${t.observers} WHERE id = ? RETURNING id`;
const DELETE_DELIVERIES = (t: Tables) => `DELETE FROM ${t.deliveries} WHERE observer_id = ?`;
const DELETE_DEAD_LETTERS = (t: Tables) => `DELETE FROM ${t.deadLetters} WHERE observer_id = ?`;
const FORGET_BEFORE = (t: Tables) => `DELETE FROM ${t.deliveries} WHERE observer_id = ? AND position <= ?`;
const DELIVERY = (t: Tables) => `SELECT attempts, resolution FROM ${t.deliveries} WHERE observer_id = ? AND position = ?`;
const HAND_OUT = (t: Tables) => `INSERT INTO ${t.deliveries} (observer_id, position, attempts, resolution, next_attempt_at)
  VALUES (?, ?, ?, ${PENDING}, NULL)
  ON CONFLICT (observer_id, position) DO UPDATE SET attempts = excluded.attempts, next_attempt_at = NULL`;
const RESOLVE = (t: Tables) => `UPDATE ${t.deliveries} SET resolution = ? WHERE observer_id = ? AND position = ?`;
const RETRY_AT = (t: Tables) => `UPDATE ${t.deliveries} SET next_attempt_at = ? WHERE observer_id = ? AND position = ?`;
const TRANSITION_AT = (t: Tables) => `SELECT j.id AS job_id, tr.state, tr.attempt, tr.at FROM ${t.transitions} tr
  JOIN ${t.jobs} j ON j.seq = tr.job_seq WHERE tr.position = ?`;
const INSERT_DEAD_LETTER = (t: Tables) => `INSERT INTO ${t.deadLetters}
  (observer_id, position, job_id, state, attempt, at, delivery_attempts, dead_lettered_at, error) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`;
const COUNT_DEAD_LETTERS = (t: Tables) => `SELECT count(*) AS n FROM ${t.deadLetters} WHERE observer_id = ?`;
const LIST_DEAD_LETTERS = (t: Tables) => `SELECT observer_id, position, job_id, state, attempt, at, delivery_attempts,
  dead_lettered_at, error FROM ${t.deadLetters} WHERE observer_id = ? ORDER BY rowid`;

/** Log rows after a position that match a subscription, with this observer's delivery bookkeeping. */
const SUBSCRIBED = `tr.position > @after AND tr.state IN (SELECT value FROM json_each(@states))
  AND (@names IS NULL OR j.job_name IN (SELECT value FROM json_each(@names)))
  AND (@queues IS NULL OR j.queue IN (SELECT value FROM json_each(@queues)))`;

const WALK = (t: Tables) => `SELECT tr.position, tr.state, tr.attempt, tr.at, tr.failure_detail, j.id AS job_id, j.job_name,
  j.queue, d.attempts, d.resolution, d.next_attempt_at
  FROM ${t.transitions} tr JOIN ${t.jobs} j ON j.seq = tr.job_seq
  LEFT JOIN ${t.deliveries} d ON d.observer_id = @observer AND d.position = tr.position
  WHERE ${SUBSCRIBED} ORDER BY tr.position LIMIT @limit`;

const PENDING_COUNT = (t: Tables) => `SELECT count(*) AS n FROM ${t.transitions} tr JOIN ${t.jobs} j ON j.seq = tr.job_seq
  LEFT JOIN ${t.deliveries} d ON d.observer_id = @observer AND d.position = tr.position
  WHERE ${SUBSCRIBED} AND (d.resolution IS NULL OR d.resolution = ${PENDING})`;

const OLDEST_PENDING = (t: Tables) => `SELECT tr.at FROM ${t.transitions} tr JOIN ${t.jobs} j ON j.seq = tr.job_seq
  LEFT JOIN ${t.deliveries} d ON d.observer_id = @observer AND d.position = tr.position
  WHERE ${SUBSCRIBED} AND (d.resolution IS NULL OR d.resolution = ${PENDING}) ORDER BY tr.position LIMIT 1`;

/** Every log row after a position (subscribed or not), to move the cursor over the resolved prefix. */
const TAIL = (t: Tables) => `SELECT tr.position, tr.state, j.job_name, j.queue, d.resolution
  FROM ${t.transitions} tr JOIN ${t.jobs} j ON j.seq = tr.job_seq
  LEFT JOIN ${t.deliveries} d ON d.observer_id = ? AND d.position = tr.position
  WHERE tr.position > ? ORDER BY tr.position LIMIT ?`;

interface ObserverRow {
  id: string;
  subscription: string;
  cursor: number;
  lease_owner: string | null;
  lease_expires_at: number | null;
}

/** The observer's row, or `undefined` for an unknown observer. */
function observerRow(ctx: ReadContext, observerId: string): ObserverRow | undefined {
  return ctx.q.get(OBSERVER).get(observerId) as ObserverRow | undefined;
}

interface DeadEntry {
  job_id: string;
  state: number;
  attempt: number;
  at: number;
}

interface WalkRow {
  position: number;
  state: number;
  attempt: number;
  at: number;
  failure_detail: string | null;
  job_id: string;
  job_name: string;
  queue: string;
  attempts: number | null;
  resolution: number | null;
  next_attempt_at: number | null;
}

/** The named parameters that select an observer's subscribed rows after `after`. */
function subscriptionParams(observer: ObserverRow, after: number) {
  const subscription = JSON.parse(observer.subscription) as ObserverSubscription;
  return {
    observer: observer.id,
    after,
    states: JSON.stringify(subscription.states.map((s) => JOB_STATE_CODES[s])),
    names: subscription.jobNames ? JSON.stringify(subscription.jobNames) : null,
    queues: subscription.queues ? JSON.stringify(subscription.queues) : null,
  };
}

function subscribed(subscription: ObserverSubscription, row: { state: number; job_name: string; queue: string }): boolean {
  if (!subscription.states.includes(jobStateFromCode(row.state))) return false;
  if (subscription.jobNames && !subscription.jobNames.includes(row.job_name)) return false;
  if (subscription.queues && !subscription.queues.includes(row.queue)) return false;
  return true;
}

/** See `JobStore.registerObserver`. */
export function* registerObserver(ctx: OpContext, request: RegisterObserverRequest): Steps<RegisterObserverResult> {
  const { subscription } = request;
  const existing = observerRow(ctx, subscription.observerId);
  if (existing !== undefined) {
    ctx.q.get(RESUBSCRIBE).run(JSON.stringify(subscription), subscription.observerId);
    return { status: "updated", cursor: existing.cursor };
  }
  const last = ctx.q.get(LAST_POSITION).get(`${ctx.q.t.prefix}transitions`) as { seq: number } | undefined;
  const cursor = request.startAt === "beginning" ? -1 : (last?.seq ?? 0);
  ctx.q.get(INSERT_OBSERVER).run(subscription.observerId, JSON.stringify(subscription), cursor);
  return { status: "created", cursor };
}

/** See `JobStore.removeObserver`: the observer goes with its deliveries and dead letters. */
export function* removeObserver(ctx: OpContext, request: { readonly observerId: string }): Steps<{ status: "removed" | "notFound" }> {
  const { observerId } = request;
  if (ctx.q.get(DELETE_OBSERVER).get(observerId) === undefined) return { status: "notFound" };
  ctx.q.get(DELETE_DELIVERIES).run(observerId);
  ctx.q.get(DELETE_DEAD_LETTERS).run(observerId);
  return { status: "removed" };
}

/** See `JobStore.claimObserverDeliveries`: takes the lease, then walks the log after the cursor. */
export function* claimObserverDeliveries(
  ctx: OpContext,
  request: ClaimObserverDeliveriesRequest,
): Steps<ClaimObserverDeliveriesResult> {
  const { observerId, workerId, now } = request;
  const observer = observerRow(ctx, observerId);
  if (observer === undefined) return { status: "notFound" };
  if (observer.lease_owner !== null && observer.lease_owner !== workerId && observer.lease_expires_at! > now) {
    return { status: "busy", leaseOwner: observer.lease_owner };
  }
  const leaseExpiresAt = now + request.leaseMs;
  ctx.q.get(TAKE_LEASE).run(workerId, leaseExpiresAt, observerId);
  const max = clampToBound(request.max, ctx.bounds.claimBatch);
  const deliveries: ObserverDelivery[] = [];
  let after = observer.cursor;
  walk: for (;;) {
    const rows = ctx.q.get(WALK).all({ ...subscriptionParams(observer, after), limit: WALK_BATCH }) as WalkRow[];
    for (const row of rows) {
      if (deliveries.length === max) break walk;
      if (row.resolution !== null && row.resolution !== PENDING) continue;
      if (row.next_attempt_at !== null && row.next_attempt_at > now) break walk; // head of the line
      const deliveryAttempt = (row.attempts ?? 0) + 1;
      ctx.q.get(HAND_OUT).run(observerId, row.position, deliveryAttempt);
      deliveries.push({
        position: row.position,
        jobId: row.job_id,
        jobName: row.job_name,
        queue: row.queue,
        state: jobStateFromCode(row.state),
        attempt: row.attempt,
        at: row.at,
        failureDetail: row.failure_detail,
        deliveryAttempt,
      });
    }
    if (rows.length < WALK_BATCH) break;
    after = rows.at(-1)!.position;
  }
  yield "deliveries handed out";
  return { status: "acquired", leaseExpiresAt, deliveries };
}

/** Moves the cursor over the contiguous prefix of the log that is resolved or not subscribed. */
function advanceCursor(ctx: OpContext, observer: ObserverRow): number {
  const subscription = JSON.parse(observer.subscription) as ObserverSubscription;
  let cursor = observer.cursor;
  walk: for (;;) {
    const rows = ctx.q.get(TAIL).all(observer.id, cursor, WALK_BATCH) as {
      position: number;
      state: number;
      job_name: string;
      queue: string;
      resolution: number | null;
    }[];
    for (const row of rows) {
      if (subscribed(subscription, row) && (row.resolution ?? PENDING) === PENDING) break walk;
      cursor = row.position;
    }
    if (rows.length < WALK_BATCH) break;
  }
  if (cursor !== observer.cursor) {
    ctx.q.get(FORGET_BEFORE).run(observer.id, cursor);
    ctx.q.get(MOVE_CURSOR).run(cursor, observer.id);
  }
  return cursor;
}

/** The observer, when `workerId` holds its delivery lease, live at `now` (the fence of a report); else `undefined`. */
function heldObserver(ctx: ReadContext, request: ReportObserverDeliveriesRequest): ObserverRow | undefined {
  const observer = observerRow(ctx, request.observerId);
  return observer?.lease_owner === request.workerId && observer.lease_expires_at! > request.now ? observer : undefined;
}

/** See `JobStore.reportObserverDeliveries`: fenced by the delivery lease. */
export function* reportObserverDeliveries(
  ctx: OpContext,
  request: ReportObserverDeliveriesRequest,
): Steps<ReportObserverDeliveriesResult> {
  const observer = heldObserver(ctx, request);
  if (observer === undefined) return { status: "stale" };
  const { observerId, now } = request;
  for (const outcome of request.outcomes) {
    const delivery = ctx.q.get(DELIVERY).get(observerId, outcome.position) as { attempts: number; resolution: number } | undefined;
    if (delivery === undefined || delivery.resolution !== PENDING) continue;
    if (outcome.outcome === "delivered") {
      ctx.q.get(RESOLVE).run(DELIVERED, observerId, outcome.position);
    } else if (outcome.outcome === "retry") {
      ctx.q.get(RETRY_AT).run(outcome.retryAt, observerId, outcome.position);
    } else {
      ctx.q.get(RESOLVE).run(DEAD, observerId, outcome.position);
      // A job purged since the hand-out has no transition left: the dead letter keeps its position, with placeholders.
      const entry = (ctx.q.get(TRANSITION_AT).get(outcome.position) as DeadEntry | undefined) ?? {
        job_id: "",
        state: JOB_STATE_CODES.scheduled,
        attempt: 0,
        at: now,
      };
      const { job_id, state, attempt, at } = entry;
      ctx.q.get(INSERT_DEAD_LETTER).run(observerId, outcome.position, job_id, state, attempt, at, delivery.attempts, now, outcome.error);
    }
  }
  yield "outcomes recorded";
  return { status: "applied", cursor: advanceCursor(ctx, observer) };
}

function toStatus(ctx: ReadContext, observer: ObserverRow): ObserverStatus {
  const { q } = ctx;
  const params = subscriptionParams(observer, observer.cursor);
  const { n: pending } = q.get(PENDING_COUNT).get(params) as { n: number };
  const oldest = pending === 0 ? undefined : (q.get(OLDEST_PENDING).get(params) as { at: Instant } | undefined);
  const { n: deadLetters } = q.get(COUNT_DEAD_LETTERS).get(observer.id) as { n: number };
  return {
    subscription: JSON.parse(observer.subscription) as ObserverSubscription,
    cursor: observer.cursor,
    leaseOwner: observer.lease_owner,
    leaseExpiresAt: observer.lease_expires_at,
    pending,
    oldestPendingAt: oldest?.at ?? null,
    deadLetters,
  };
}

/** See `JobStore.getObserver`; call inside one snapshot. */
export function getObserver(ctx: ReadContext, observerId: string): ObserverStatus | null {
  const row = observerRow(ctx, observerId);
  return row === undefined ? null : toStatus(ctx, row);
}

/** See `JobStore.listObservers`: by id; call inside one snapshot. */
export function listObservers(ctx: ReadContext): ObserverStatus[] {
  return (ctx.q.get(LIST_OBSERVERS).all() as ObserverRow[]).map((row) => toStatus(ctx, row));
}

/** See `JobStore.listObserverDeadLetters`: in the order they were recorded. */
export function listObserverDeadLetters(ctx: ReadContext, observerId: string): ObserverDeadLetter[] {
  const rows = ctx.q.get(LIST_DEAD_LETTERS).all(observerId) as {
    observer_id: string;
    position: number;
    job_id: string;
    state: number;
    attempt: number;
    at: number;
    delivery_attempts: number;
    dead_lettered_at: number;
    error: string;
  }[];
  return rows.map((row) => ({
    observerId: row.observer_id,
    position: row.position,
    jobId: row.job_id,
    state: jobStateFromCode(row.state),
    attempt: row.attempt,
    at: row.at,
    deliveryAttempts: row.delivery_attempts,
    deadLetteredAt: row.dead_lettered_at,
    error: row.error,
  }));
}
