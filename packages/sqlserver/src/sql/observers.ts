import {
  type ClaimObserverDeliveriesRequest, type ClaimObserverDeliveriesResult, type ObserverDeadLetter, type ObserverDelivery,
  type ObserverStatus, type ObserverSubscription, type QueryRow, type RegisterObserverRequest, type RegisterObserverResult,
  type ReportObserverDeliveriesRequest, type ReportObserverDeliveriesResult, JOB_STATE_CODES, clampToBound,
} from "@belay/contract";
import type { StoreContext } from "../context.js";
import { hex, key, keyOrNull, textOf, textOfHex, textOfKey, toInt, toIntOrNull } from "../keys.js";
import { COLUMN_BYTES } from "../sqlserver-store-config.js";
import { statement } from "../statements.js";
import { idOf, stateOf } from "./jobs.js";

// The transition log is walked in `rowversion` order, and only below MIN_ACTIVE_ROWVERSION(): the
// lowest rowversion a transaction still running has used. Every row below it was written by a
// transaction that has ended, so no row can ever appear below the walk's cursor; a transaction
// that commits late holds the horizon back until it commits, and its rows are then walked after
// the cursor — never skipped. The horizon is read by a statement of its own, before the walk's:
// under READ_COMMITTED_SNAPSHOT each statement reads as of its own start, so the walk sees every
// transaction the horizon counted as ended. `position` (an identity) numbers the rows.
//
// The cursor is the pair (cursor_rv, cursor_position); it is reported as the position.

const ID = `varbinary(${COLUMN_BYTES.id})`;

const SUBSCRIBED = `t.state IN (SELECT CAST(s.value AS tinyint) FROM OPENJSON(o.states) AS s)
  AND (o.job_names IS NULL OR j.job_name IN (SELECT ${idOf("n.value")} FROM OPENJSON(o.job_names) AS n))
  AND (o.queues IS NULL OR j.queue IN (SELECT ${idOf("q.value")} FROM OPENJSON(o.queues) AS q))`;

// A new observer starting at the end takes the newest transition it can see as its cursor; a
// transaction still running whose rows would sort before it is "before registration".
const REGISTER = statement(
  "registerObserver",
  { id: ID, states: "nvarchar(max)", jobNames: "nvarchar(max)", queues: "nvarchar(max)", beginning: "bit" },
  (S) => `DECLARE @created bit = 0;
UPDATE o SET states = @states, job_names = @jobNames, queues = @queues FROM ${S}.observers AS o WITH (UPDLOCK, HOLDLOCK) WHERE o.id = @id;
IF @@ROWCOUNT = 0
BEGIN
  DECLARE @rv binary(8) = 0x0000000000000000, @position bigint = -1;
  IF @beginning = 0
    SELECT TOP (1) @rv = CAST(t.rv AS binary(8)), @position = t.position FROM ${S}.transitions AS t ORDER BY t.rv DESC;
  INSERT INTO ${S}.observers (id, states, job_names, queues, cursor_rv, cursor_position) VALUES (@id, @states, @jobNames, @queues, @rv, @position);
  SET @created = 1;
END;
SELECT @created AS created, o.cursor_position FROM ${S}.observers AS o WHERE o.id = @id`,
);

const hexList = (list: readonly string[] | undefined) => (list === undefined ? null : JSON.stringify(list.map(hex)));

export async function registerObserver(ctx: StoreContext, request: RegisterObserverRequest): Promise<RegisterObserverResult> {
  const { subscription } = request;
  const [row] = await ctx.executor.transaction(
    "registerObserver",
    async (session) => {
      const rows = await session.rows(REGISTER, {
        id: key(subscription.observerId),
        states: JSON.stringify(subscription.states.map((s) => JOB_STATE_CODES[s])),
        jobNames: hexList(subscription.jobNames),
        queues: hexList(subscription.queues),
        beginning: request.startAt === "beginning",
      });
      await session.step("observer written");
      return rows;
    },
    { rerunOnUnique: true },
  );
  return { status: toInt(row!["created"]) === 1 ? "created" : "updated", cursor: toInt(row!["cursor_position"]) };
}

const TAKE_LEASE = statement(
  "takeObserverLease",
  { id: ID, worker: ID, now: "bigint", leaseMs: "bigint" },
  (S) => `UPDATE o SET lease_owner = @worker, lease_expires_at = @now + @leaseMs OUTPUT inserted.id
FROM ${S}.observers AS o WHERE o.id = @id AND (o.lease_owner IS NULL OR o.lease_owner = @worker OR o.lease_expires_at <= @now);
SELECT o.lease_owner FROM ${S}.observers AS o WHERE o.id = @id`,
);

/** The next deliverable transitions of one observer, in walk order, below the horizon. */
export const WALK = statement(
  "walkObserver",
  { id: ID, max: "int" },
  (S) => `DECLARE @horizon binary(8) = CAST(MIN_ACTIVE_ROWVERSION() AS binary(8));
SELECT TOP (@max) CAST(t.rv AS binary(8)) AS rv, t.position, t.state, t.attempt, t.at, t.failure_detail, j.id AS job_id, j.job_name, j.queue,
  d.attempts, d.next_attempt_at
FROM ${S}.observers AS o
INNER JOIN ${S}.transitions AS t ON t.rv > o.cursor_rv
INNER JOIN ${S}.jobs AS j ON j.seq = t.job_seq
LEFT JOIN ${S}.observer_deliveries AS d ON d.observer_id = o.id AND d.position = t.position
WHERE o.id = @id AND t.rv < @horizon AND ${SUBSCRIBED} AND ISNULL(d.resolved, 0) = 0
ORDER BY t.rv`,
);

const HAND_OUT = statement(
  "handOutDeliveries",
  { id: ID, rows: "nvarchar(max)" },
  (S) => `UPDATE d SET attempts = r.attempts, next_attempt_at = NULL
FROM ${S}.observer_deliveries AS d INNER JOIN OPENJSON(@rows) WITH (position bigint '$[0]', rv varchar(16) '$[1]', attempts int '$[2]') AS r
  ON d.observer_id = @id AND d.position = r.position;
INSERT INTO ${S}.observer_deliveries (observer_id, position, rv, attempts, resolved)
SELECT @id, r.position, CONVERT(binary(8), r.rv, 2), r.attempts, 0
FROM OPENJSON(@rows) WITH (position bigint '$[0]', rv varchar(16) '$[1]', attempts int '$[2]') AS r
WHERE NOT EXISTS (SELECT 1 FROM ${S}.observer_deliveries AS d WHERE d.observer_id = @id AND d.position = r.position)`,
);

const rvHex = (value: unknown) => Buffer.from(value as Uint8Array).toString("hex");

export async function claimObserverDeliveries(ctx: StoreContext, request: ClaimObserverDeliveriesRequest): Promise<ClaimObserverDeliveriesResult> {
  const { observerId, workerId, now, leaseMs } = request;
  const max = clampToBound(request.max, ctx.bounds.claimBatch);
  if (Buffer.byteLength(observerId, "utf8") > COLUMN_BYTES.id) return { status: "notFound" };
  return ctx.executor.transaction("claimObserverDeliveries", async (session): Promise<ClaimObserverDeliveriesResult> => {
    const [taken = [], owner = []] = await session.query(TAKE_LEASE, { id: key(observerId), worker: key(workerId), now, leaseMs });
    if (taken.length === 0) {
      return owner[0] === undefined ? { status: "notFound" } : { status: "busy", leaseOwner: textOf(owner[0]["lease_owner"]) ?? "" };
    }
    await session.step("lease taken");
    const rows = await session.rows(WALK, { id: key(observerId), max });
    const deliveries: ObserverDelivery[] = [];
    const handed: unknown[][] = [];
    for (const row of rows) {
      const nextAttemptAt = toIntOrNull(row["next_attempt_at"]);
      if (nextAttemptAt !== null && nextAttemptAt > now) break; // head of line: a retry not yet due
      const delivery: ObserverDelivery = {
        position: toInt(row["position"]),
        jobId: textOfKey(row["job_id"]),
        jobName: textOfKey(row["job_name"]),
        queue: textOfKey(row["queue"]),
        state: stateOf(row["state"]),
        attempt: toInt(row["attempt"]),
        at: toInt(row["at"]),
        failureDetail: (row["failure_detail"] as string | null) ?? null,
        deliveryAttempt: (toIntOrNull(row["attempts"]) ?? 0) + 1,
      };
      deliveries.push(delivery);
      handed.push([delivery.position, rvHex(row["rv"]), delivery.deliveryAttempt]);
    }
    if (deliveries.length > 0) {
      await session.query(HAND_OUT, { id: key(observerId), rows: JSON.stringify(handed) });
      await session.step("deliveries handed out");
    }
    return { status: "acquired", leaseExpiresAt: now + leaseMs, deliveries };
  });
}

const FENCE = statement(
  "observerFence",
  { id: ID, worker: ID, now: "bigint" },
  (S) => `SELECT o.id FROM ${S}.observers AS o WITH (UPDLOCK, ROWLOCK) WHERE o.id = @id AND o.lease_owner = @worker AND o.lease_expires_at > @now`,
);

const RECORD_OUTCOMES = statement(
  "recordObserverDeliveries",
  { id: ID, outcomes: "nvarchar(max)", now: "bigint" },
  (S) => `DECLARE @recorded TABLE (position bigint NOT NULL PRIMARY KEY, rv binary(8) NOT NULL, attempts int NOT NULL, kind tinyint NOT NULL, error nvarchar(max) NULL, n int NOT NULL);
UPDATE d SET resolved = CASE o.kind WHEN 0 THEN 1 WHEN 2 THEN 2 ELSE 0 END,
  next_attempt_at = CASE WHEN o.kind = 1 THEN o.retry_at ELSE d.next_attempt_at END
OUTPUT inserted.position, inserted.rv, inserted.attempts, o.kind, o.error, o.n INTO @recorded
FROM ${S}.observer_deliveries AS d
INNER JOIN OPENJSON(@outcomes) WITH (n int '$[0]', position bigint '$[1]', kind tinyint '$[2]', retry_at bigint '$[3]', error nvarchar(max) '$[4]') AS o
  ON d.observer_id = @id AND d.position = o.position
WHERE d.resolved = 0;
INSERT INTO ${S}.observer_dead_letters (observer_id, position, job_id, state, attempt, at, delivery_attempts, dead_lettered_at, error)
SELECT @id, r.position, ISNULL(j.id, 0x), ISNULL(t.state, ${JOB_STATE_CODES.scheduled}), ISNULL(t.attempt, 0), ISNULL(t.at, @now), r.attempts, @now, r.error
FROM @recorded AS r
LEFT JOIN ${S}.transitions AS t ON t.position = r.position
LEFT JOIN ${S}.jobs AS j ON j.seq = t.job_seq
WHERE r.kind = 2
ORDER BY r.n`,
);

/**
 * Moves the cursor to the last settled row before the first row that blocks it: a subscribed
 * transition not yet delivered or dead-lettered. Rows at or above the horizon never settle yet.
 */
export const ADVANCE = statement(
  "advanceObserver",
  { id: ID },
  (S) => `DECLARE @horizon binary(8) = CAST(MIN_ACTIVE_ROWVERSION() AS binary(8));
DECLARE @cursor binary(8) = (SELECT o.cursor_rv FROM ${S}.observers AS o WHERE o.id = @id);
DECLARE @blocker binary(8) = (
  SELECT TOP (1) CAST(t.rv AS binary(8)) FROM ${S}.observers AS o
  INNER JOIN ${S}.transitions AS t ON t.rv > o.cursor_rv
  INNER JOIN ${S}.jobs AS j ON j.seq = t.job_seq
  LEFT JOIN ${S}.observer_deliveries AS d ON d.observer_id = o.id AND d.position = t.position
  WHERE o.id = @id AND ${SUBSCRIBED} AND ISNULL(d.resolved, 0) = 0
  ORDER BY t.rv);
DECLARE @settledRv binary(8), @settledPosition bigint;
SELECT TOP (1) @settledRv = CAST(t.rv AS binary(8)), @settledPosition = t.position FROM ${S}.transitions AS t
WHERE t.rv > @cursor AND t.rv < @horizon AND (@blocker IS NULL OR t.rv < @blocker)
ORDER BY t.rv DESC;
IF @settledRv IS NOT NULL
BEGIN
  UPDATE ${S}.observers SET cursor_rv = @settledRv, cursor_position = @settledPosition WHERE id = @id;
  DELETE FROM ${S}.observer_deliveries WHERE observer_id = @id AND rv <= @settledRv;
END;
SELECT o.cursor_position FROM ${S}.observers AS o WHERE o.id = @id`,
);

const KINDS = { delivered: 0, retry: 1, deadLettered: 2 } as const;

export async function reportObserverDeliveries(ctx: StoreContext, request: ReportObserverDeliveriesRequest): Promise<ReportObserverDeliveriesResult> {
  const { observerId, workerId, outcomes, now } = request;
  if (Buffer.byteLength(observerId, "utf8") > COLUMN_BYTES.id) return { status: "stale" };
  return ctx.executor.transaction("reportObserverDeliveries", async (session): Promise<ReportObserverDeliveriesResult> => {
    const [fenced] = await session.rows(FENCE, { id: key(observerId), worker: key(workerId), now });
    if (fenced === undefined) return { status: "stale" };
    const list = outcomes.map((o, n) => [n, o.position, KINDS[o.outcome], o.outcome === "retry" ? o.retryAt : null, o.outcome === "deadLettered" ? o.error : null]);
    await session.query(RECORD_OUTCOMES, { id: key(observerId), outcomes: JSON.stringify(list), now });
    await session.step("outcomes recorded");
    const [row] = await session.rows(ADVANCE, { id: key(observerId) });
    return { status: "applied", cursor: toInt(row!["cursor_position"]) };
  });
}

const STATUS = statement(
  "observerStatus",
  { id: ID },
  (S) => `SELECT o.id, o.job_names, o.queues, o.states, o.cursor_position, o.lease_owner, o.lease_expires_at,
  (SELECT COUNT_BIG(*) FROM ${S}.observer_dead_letters AS x WHERE x.observer_id = o.id) AS dead_letters,
  p.pending, p.oldest
FROM ${S}.observers AS o
CROSS APPLY (
  SELECT COUNT_BIG(*) AS pending, (
    SELECT TOP (1) t.at FROM ${S}.transitions AS t
    INNER JOIN ${S}.jobs AS j ON j.seq = t.job_seq
    LEFT JOIN ${S}.observer_deliveries AS d ON d.observer_id = o.id AND d.position = t.position
    WHERE t.rv > o.cursor_rv AND ${SUBSCRIBED} AND ISNULL(d.resolved, 0) = 0 ORDER BY t.rv) AS oldest
  FROM ${S}.transitions AS t
  INNER JOIN ${S}.jobs AS j ON j.seq = t.job_seq
  LEFT JOIN ${S}.observer_deliveries AS d ON d.observer_id = o.id AND d.position = t.position
  WHERE t.rv > o.cursor_rv AND ${SUBSCRIBED} AND ISNULL(d.resolved, 0) = 0
) AS p
WHERE (@id IS NULL OR o.id = @id)
ORDER BY o.id`,
);

function toStatus(row: QueryRow): ObserverStatus {
  const names = row["job_names"] == null ? null : (JSON.parse(row["job_names"] as string) as string[]).map(textOfHex);
  const queues = row["queues"] == null ? null : (JSON.parse(row["queues"] as string) as string[]).map(textOfHex);
  const subscription: ObserverSubscription = {
    observerId: textOfKey(row["id"]),
    states: (JSON.parse(row["states"] as string) as number[]).map(stateOf),
    ...(names === null ? {} : { jobNames: names }),
    ...(queues === null ? {} : { queues }),
  };
  return {
    subscription,
    cursor: toInt(row["cursor_position"]),
    leaseOwner: textOf(row["lease_owner"]),
    leaseExpiresAt: toIntOrNull(row["lease_expires_at"]),
    pending: toInt(row["pending"]),
    oldestPendingAt: toIntOrNull(row["oldest"]),
    deadLetters: toInt(row["dead_letters"]),
  };
}

async function observerStatuses(ctx: StoreContext, observerId: string | null): Promise<ObserverStatus[]> {
  if (observerId !== null && Buffer.byteLength(observerId, "utf8") > COLUMN_BYTES.id) return [];
  const rows = await ctx.executor.read("observerStatus", (s) => s.rows(STATUS, { id: keyOrNull(observerId) }));
  return rows.map(toStatus);
}

export async function getObserver(ctx: StoreContext, observerId: string): Promise<ObserverStatus | null> {
  return (await observerStatuses(ctx, observerId))[0] ?? null;
}

export function listObservers(ctx: StoreContext): Promise<ObserverStatus[]> {
  return observerStatuses(ctx, null);
}

const REMOVE = statement(
  "removeObserver",
  { id: ID },
  (S) => `DELETE FROM ${S}.observer_deliveries WHERE observer_id = @id;
DELETE FROM ${S}.observer_dead_letters WHERE observer_id = @id;
DELETE FROM ${S}.observers WHERE id = @id;
SELECT @@ROWCOUNT AS removed`,
);

export async function removeObserver(ctx: StoreContext, request: { readonly observerId: string }): Promise<{ readonly status: "removed" | "notFound" }> {
  return ctx.executor.transaction("removeObserver", async (session) => {
    const [row] = await session.rows(REMOVE, { id: key(request.observerId) });
    await session.step("observer removed");
    return { status: toInt(row!["removed"]) > 0 ? "removed" : "notFound" };
  });
}

const DEAD_LETTERS = statement(
  "observerDeadLetters",
  { id: ID },
  (S) => `SELECT x.observer_id, x.position, x.job_id, x.state, x.attempt, x.at, x.delivery_attempts, x.dead_lettered_at, x.error
FROM ${S}.observer_dead_letters AS x WHERE x.observer_id = @id ORDER BY x.seq`,
);

export async function listObserverDeadLetters(ctx: StoreContext, observerId: string): Promise<ObserverDeadLetter[]> {
  if (Buffer.byteLength(observerId, "utf8") > COLUMN_BYTES.id) return [];
  const rows = await ctx.executor.read("listObserverDeadLetters", (s) => s.rows(DEAD_LETTERS, { id: key(observerId) }));
  return rows.map((row) => ({
    observerId: textOfKey(row["observer_id"]),
    position: toInt(row["position"]),
    jobId: textOfKey(row["job_id"]),
    state: stateOf(row["state"]),
    attempt: toInt(row["attempt"]),
    at: toInt(row["at"]),
    deliveryAttempts: toInt(row["delivery_attempts"]),
    deadLetteredAt: toInt(row["dead_lettered_at"]),
    error: row["error"] as string,
  }));
}
