import {
  type CallbackRow, type Instant, type ListenerRow, type OutboxRef, type OutboxRow, type PromisePageQuery, type PromiseReader,
  type PromiseRow, type PromiseScheduleRow, type PromiseTransaction, type QueryRow, type TaskPageQuery, type TaskRow, takesNothing,
} from "@belay/contract";
import type { PromiseSession } from "../promise-session.js";
import type { Session, SqlCache } from "../session.js";
import {
  OUTBOX_ADDRESS_KEY, OUTBOX_KIND_CODES, PROMISE_COLUMNS, PROMISE_NAMES, PROMISE_STATE_CODES, SCHEDULE_COLUMNS, TASK_COLUMNS,
  TASK_NAMES, TASK_STATE_CODES, decodePromise, decodeSchedule, decodeTask, promiseStateOf, taskStateOf,
} from "./promise-rows.js";

// The scans of the promise surface: due timers and the outbox take (bounded, oldest first, by
// their time-ordered indexes, `FOR UPDATE SKIP LOCKED` so concurrent scanners split the work),
// and the reads behind searches and snapshots. Parameters are kept out of the planner's estimates
// (`(SELECT $n)`), so each prepared statement settles on its generic plan, an index probe.

const PENDING = PROMISE_STATE_CODES.pending;

/**
 * Due deadlines and due task timers, oldest first, up to `$2` each. A task's timer is taken by
 * locking its promise's row, the row every task operation locks first, so a scan and an operation
 * never lock one task's two rows in opposite orders; a row someone holds is skipped. What a scan
 * read is re-checked by the machine under the lock (a moved timer fires nothing).
 */
export const DUE_TIMERS = (S: string) => `
SELECT 'p'::text AS k, d.id FROM (
  SELECT p.id FROM ${S}.promises p
  WHERE p.state = ${PENDING} AND p.timeout_at <= (SELECT $1::bigint)
  ORDER BY p.timeout_at, p.id LIMIT (SELECT $2::int) FOR UPDATE OF p SKIP LOCKED
) d
UNION ALL
SELECT 't', d.id FROM (
  SELECT t.id FROM ${S}.tasks t JOIN ${S}.promises p ON p.id = t.id
  WHERE t.timer_at <= (SELECT $1::bigint)
  ORDER BY t.timer_at, t.id LIMIT (SELECT $2::int) FOR UPDATE OF p SKIP LOCKED
) d`;

/** See `PromiseTransaction.dueTimers`. */
export async function dueTimers(session: Session, sql: SqlCache, now: Instant, max: number): Promise<{ promises: string[]; tasks: string[] }> {
  const rows = await session.query(sql.get("promiseDueTimers", DUE_TIMERS), [now, max]);
  const promises: string[] = [];
  const tasks: string[] = [];
  for (const row of rows) (row["k"] === "p" ? promises : tasks).push(row["id"] as string);
  return { promises, tasks };
}

/**
 * Takes the oldest available messages that pass the taker's filter (skipping rows other takers
 * hold), hides each until `$3` at a new revision with one more take (updated by their row ids:
 * locked, they cannot move before the update), and returns them with the promise of each
 * `unblock` (an unblock exists only for a settled promise, which never changes again: read
 * unlocked, it spares the front a load).
 *
 * The filter — `$4` "everything", else an address in `$5` or one starting with a prefix of `$6` —
 * is a condition of the scan of the availability index, under its `FOR UPDATE SKIP LOCKED`: a
 * row the taker cannot deliver is passed over without being locked, so takers with different
 * filters (server processes serving different transports or groups) never hold each other's rows.
 */
export const TAKE_OUTBOX = (S: string) => `
WITH due AS MATERIALIZED (
  SELECT o.ctid AS row_id, o.available_at, o.revision FROM ${S}.outbox o
  WHERE o.available_at <= (SELECT $1::bigint)
    AND ((SELECT $4::boolean) OR o.address = ANY((SELECT $5::text[])::text[]) OR o.address ^@ ANY((SELECT $6::text[])::text[]))
  ORDER BY o.available_at, o.revision LIMIT (SELECT $2::int) FOR UPDATE SKIP LOCKED
),
taken AS (
  UPDATE ${S}.outbox o SET available_at = $3::bigint, revision = nextval('${S}.outbox_revision'), takes = o.takes + 1
  FROM due WHERE o.ctid = ANY(ARRAY(SELECT d.row_id FROM due d)) AND o.ctid = due.row_id
  RETURNING o.kind, o.id, o.address, o.version, o.available_at, o.revision, o.created_at AS message_created_at, o.takes,
            due.available_at AS was_at, due.revision AS was_revision
)
SELECT x.kind, x.id AS message_id, x.address, x.version, x.available_at, x.revision, x.message_created_at, x.takes,
       p.id IS NOT NULL AS found, ${PROMISE_COLUMNS("p")}
FROM taken x
LEFT JOIN ${S}.promises p ON x.kind = ${OUTBOX_KIND_CODES.unblock} AND p.id = x.id
ORDER BY x.was_at, x.was_revision`;

function outboxRow(kind: unknown, id: string, address: string, version: number, availableAt: number, revision: number, createdAt: number, takes: number): OutboxRow {
  const common = { id, address, availableAt, revision, createdAt, takes };
  return kind === OUTBOX_KIND_CODES.execute ? { kind: "execute", version, ...common } : { kind: "unblock", version: 0, ...common };
}

/** See `PromiseTransaction.takeOutbox`: each `unblock` comes with its promise (`null` when it is gone). */
export async function takeOutbox(session: Session, sql: SqlCache, ...[now, max, until, filter]: Parameters<PromiseTransaction["takeOutbox"]>): ReturnType<PromiseTransaction["takeOutbox"]> {
  if (takesNothing(filter)) return [];
  const rows = await session.query(sql.get("promiseTakeOutbox", TAKE_OUTBOX), [now, max, until, filter === null, filter?.addresses ?? [], filter?.prefixes ?? []]);
  return rows.map((row) => {
    const taken = outboxRow(
      row["kind"],
      row["message_id"] as string,
      row["address"] as string,
      row["version"] as number,
      row["available_at"] as number,
      row["revision"] as number,
      row["message_created_at"] as number,
      row["takes"] as number,
    );
    if (taken.kind === "execute") return taken;
    return { ...taken, promise: row["found"] === true ? decodePromise(row, PROMISE_NAMES) : null };
  });
}

export const ACKNOWLEDGE_OUTBOX = (S: string) => `
DELETE FROM ${S}.outbox o
USING unnest($1::smallint[], $2::text[], $3::text[], $4::bigint[]) a(kind, id, address, revision)
WHERE o.id = a.id AND o.kind = a.kind AND o.address_key = ${OUTBOX_ADDRESS_KEY("a.kind", "a.address")} AND o.revision = a.revision`;

/** The refs' columns, as the arrays of {@link ACKNOWLEDGE_OUTBOX} and {@link RELEASE_OUTBOX}. */
const refArrays = (rows: readonly OutboxRef[]) => [rows.map((r) => OUTBOX_KIND_CODES[r.kind]), rows.map((r) => r.id), rows.map((r) => r.address), rows.map((r) => r.revision)];

/** See `PromiseTransaction.acknowledgeOutbox`: a write, which may go out with the COMMIT. */
export async function acknowledgeOutbox(session: PromiseSession, sql: SqlCache, rows: readonly OutboxRef[]): Promise<void> {
  if (rows.length === 0) return;
  const statement = sql.get("promiseAcknowledgeOutbox", ACKNOWLEDGE_OUTBOX);
  if (session.write !== undefined) await session.write(statement, refArrays(rows));
  else await session.query(statement, refArrays(rows));
}

/** Rows still at the revision of their take, available again at `$5`, at a new revision (their takes kept). */
export const RELEASE_OUTBOX = (S: string) => `
UPDATE ${S}.outbox o SET available_at = $5::bigint, revision = nextval('${S}.outbox_revision')
FROM unnest($1::smallint[], $2::text[], $3::text[], $4::bigint[]) a(kind, id, address, revision)
WHERE o.id = a.id AND o.kind = a.kind AND o.address_key = ${OUTBOX_ADDRESS_KEY("a.kind", "a.address")} AND o.revision = a.revision
RETURNING o.revision`;

/** See `PromiseTransaction.releaseOutbox`; returns how many rows were handed back. */
export async function releaseOutbox(session: Session, sql: SqlCache, rows: readonly OutboxRef[], at: Instant): Promise<number> {
  if (rows.length === 0) return 0;
  return (await session.query(sql.get("promiseReleaseOutbox", RELEASE_OUTBOX), [...refArrays(rows), at])).length;
}

const RESET = (S: string) => `
WITH a AS (DELETE FROM ${S}.callbacks), b AS (DELETE FROM ${S}.listeners), c AS (DELETE FROM ${S}.outbox),
     d AS (DELETE FROM ${S}.tasks), e AS (DELETE FROM ${S}.promise_schedules)
DELETE FROM ${S}.promises`;

/** See `PromiseTransaction.reset`: row deletes (not TRUNCATE, whose exclusive locks would stall every other server on the schema). */
export async function resetPromises(session: Session, sql: SqlCache): Promise<void> {
  await session.query(sql.get("promiseReset", RESET, false));
}

// ---- reads ---------------------------------------------------------------------------------

/**
 * A page of promises by id. The timed-out view: with states given, a pending promise whose
 * deadline is ≤ `$4` is included too (the front shows it settled by its deadline).
 *
 * Ids start with `$6` (`''`: any). With `bounded`, the ids starting with it are the key range
 * [`$6`, `$7`) (`$7` is the prefix's successor: ids are `COLLATE "C"`, ordered by code point), so
 * a prefix page walks only that range of the key; a prefix without a successor (nothing but
 * U+10FFFF) needs no upper bound: every id from it on starts with it.
 */
export const PROMISE_PAGE = (S: string, bounded = false) => `
SELECT ${PROMISE_COLUMNS("p")} FROM ${S}.promises p
WHERE p.id > $1::text AND p.id >= $6::text${bounded ? " AND p.id < $7::text" : ""} AND p.id ^@ $6::text AND p.tags @> $2::jsonb
  AND ($3::smallint[] IS NULL OR p.state = ANY($3::smallint[]) OR (p.state = ${PENDING} AND p.timeout_at <= $4::bigint))
ORDER BY p.id LIMIT $5::int`;

/** The least text above every text starting with `prefix` (in code point order), or `null` when there is none. */
export function prefixSuccessor(prefix: string): string | null {
  const points = [...prefix].map((c) => c.codePointAt(0)!);
  while (points.length > 0) {
    let last = points.pop()!;
    if (last === 0x10ffff) continue;
    last++;
    if (last >= 0xd800 && last <= 0xdfff) last = 0xe000;
    return String.fromCodePoint(...points, last);
  }
  return null;
}

/**
 * One promise and everything around it, one subquery per table by its key or index, in one
 * statement (one snapshot): its task, the tasks awaiting it, the promises its task awaits, its
 * listeners and its outbox messages.
 */
export const DESCRIBE_PROMISE = (S: string) => `
SELECT
  (SELECT json_build_array(p.id, p.state, p.param, p.value, p.tags, p.timeout_at, p.created_at, p.settled_at) FROM ${S}.promises p WHERE p.id = $1::text)::text AS promise,
  (SELECT json_build_array(t.id, t.state, t.version, t.resumes, t.pid, t.ttl, t.timer_at) FROM ${S}.tasks t WHERE t.id = $1::text)::text AS task,
  (SELECT coalesce(json_agg(c.awaiter), '[]') FROM ${S}.callbacks c WHERE c.awaited = $1::text)::text AS awaiters,
  (SELECT coalesce(json_agg(c.awaited), '[]') FROM ${S}.callbacks c WHERE c.awaiter = $1::text)::text AS awaiting,
  (SELECT coalesce(json_agg(l.address), '[]') FROM ${S}.listeners l WHERE l.promise_id = $1::text)::text AS listeners,
  (SELECT coalesce(json_agg(json_build_array(o.kind, o.id, o.address, o.version, o.available_at, o.revision, o.created_at, o.takes) ORDER BY o.kind, o.address), '[]')
     FROM ${S}.outbox o WHERE o.id = $1::text)::text AS outbox`;

export const TASK_PAGE = (S: string) => `
SELECT ${TASK_COLUMNS("t")}, p.id AS p_id, p.state AS p_state, p.param AS p_param, p.value AS p_value, p.tags::text AS p_tags,
       p.timeout_at AS p_timeout_at, p.created_at AS p_created_at, p.settled_at AS p_settled_at
FROM ${S}.tasks t LEFT JOIN ${S}.promises p ON p.id = t.id
WHERE t.id > $1::text
  AND ($2::smallint[] IS NULL OR t.state = ANY($2::smallint[]) OR ($3::boolean AND p.state = ${PENDING} AND p.timeout_at <= $4::bigint))
ORDER BY t.id LIMIT $5::int`;

export const SCHEDULE_PAGE = (S: string) => `
SELECT ${SCHEDULE_COLUMNS("s")} FROM ${S}.promise_schedules s
WHERE s.id > $1::text AND s.promise_tags @> $2::jsonb ORDER BY s.id LIMIT $3::int`;

/**
 * Due schedules, oldest first, by the next-run index. A schedule a firing holds right now is
 * skipped (its timer is about to move); the firing's compare-and-set makes any other repeat harmless.
 */
export const DUE_SCHEDULES = (S: string) => `
SELECT ${SCHEDULE_COLUMNS("s")} FROM ${S}.promise_schedules s
WHERE s.next_run_at <= (SELECT $1::bigint)
ORDER BY s.next_run_at, s.id LIMIT (SELECT $2::int) FOR UPDATE SKIP LOCKED`;

/** Every row, each table as one JSON array, in one statement (one snapshot). */
const EVERYTHING = (S: string) => `
SELECT
  (SELECT coalesce(json_agg(json_build_array(p.id, p.state, p.param, p.value, p.tags, p.timeout_at, p.created_at, p.settled_at)), '[]') FROM ${S}.promises p)::text AS promises,
  (SELECT coalesce(json_agg(json_build_array(t.id, t.state, t.version, t.resumes, t.pid, t.ttl, t.timer_at)), '[]') FROM ${S}.tasks t)::text AS tasks,
  (SELECT coalesce(json_agg(json_build_array(c.awaited, c.awaiter)), '[]') FROM ${S}.callbacks c)::text AS callbacks,
  (SELECT coalesce(json_agg(json_build_array(l.promise_id, l.address)), '[]') FROM ${S}.listeners l)::text AS listeners,
  (SELECT coalesce(json_agg(json_build_array(s.id, s.cron, s.promise_id, s.promise_timeout, s.promise_param, s.promise_tags, s.created_at, s.next_run_at, s.last_run_at)), '[]')
     FROM ${S}.promise_schedules s)::text AS schedules,
  (SELECT coalesce(json_agg(json_build_array(o.kind, o.id, o.address, o.version, o.available_at, o.revision, o.created_at, o.takes)), '[]') FROM ${S}.outbox o)::text AS outbox`;

type Cell = string | number | null | object;
const list = (row: QueryRow, column: string) => JSON.parse(row[column] as string) as Cell[][];

/** A promise row from `json_build_array(id, state, param, value, tags, timeout_at, created_at, settled_at)`. */
const promiseOfCells = ([id, state, param, value, tags, timeoutAt, createdAt, settledAt]: Cell[]): PromiseRow => ({
  id: id as string,
  state: promiseStateOf(state),
  param: JSON.parse(param as string),
  value: JSON.parse(value as string),
  tags: tags as Record<string, string>,
  timeoutAt: timeoutAt as number,
  createdAt: createdAt as number,
  settledAt: settledAt as number | null,
});

/** A task row from `json_build_array(id, state, version, resumes, pid, ttl, timer_at)`. */
const taskOfCells = ([id, state, version, resumes, pid, ttl, timerAt]: Cell[]): TaskRow => ({
  id: id as string,
  state: taskStateOf(state),
  version: version as number,
  resumes: resumes as number,
  pid: pid as string | null,
  ttl: ttl as number | null,
  timerAt: timerAt as number | null,
});

/** An outbox row from `json_build_array(kind, id, address, version, available_at, revision, created_at, takes)`. */
const outboxOfCells = ([kind, id, address, version, availableAt, revision, createdAt, takes]: Cell[]): OutboxRow =>
  outboxRow(kind, id as string, address as string, version as number, availableAt as number, revision as number, createdAt as number, takes as number);

/** The read-only queries, each one statement (one snapshot), on `session`. */
export function promiseReader(session: Session, sql: SqlCache): PromiseReader {
  return {
    async promisePage(query: PromisePageQuery) {
      const states = query.states === null ? null : query.states.map((s) => PROMISE_STATE_CODES[s]);
      const prefix = query.prefix ?? "";
      const successor = prefix === "" ? null : prefixSuccessor(prefix);
      const values = [query.after ?? "", JSON.stringify(query.tags), states, query.expiredBy, query.limit, prefix];
      const rows =
        successor === null
          ? await session.query(sql.get("promisePage", (S) => PROMISE_PAGE(S)), values)
          : await session.query(sql.get("promisePrefixPage", (S) => PROMISE_PAGE(S, true)), [...values, successor]);
      return rows.map((row) => decodePromise(row, PROMISE_NAMES));
    },
    async describe(id: string) {
      const [row] = await session.query(sql.get("promiseDescribe", DESCRIBE_PROMISE), [id]);
      if (row === undefined || row["promise"] === null) return null;
      const strings = (column: string) => JSON.parse(row[column] as string) as string[];
      return {
        promise: promiseOfCells(JSON.parse(row["promise"] as string) as Cell[]),
        task: row["task"] === null ? null : taskOfCells(JSON.parse(row["task"] as string) as Cell[]),
        awaiters: strings("awaiters"),
        awaiting: strings("awaiting"),
        listeners: strings("listeners"),
        outbox: list(row, "outbox").map(outboxOfCells),
      };
    },
    async taskPage(query: TaskPageQuery) {
      const states = query.states === null ? null : query.states.map((s) => TASK_STATE_CODES[s]);
      const fulfilled = query.states?.includes("fulfilled") ?? false;
      const rows = await session.query(sql.get("promiseTaskPage", TASK_PAGE), [query.after ?? "", states, fulfilled, query.now, query.limit]);
      return rows.map((row) => ({
        task: decodeTask(row, TASK_NAMES),
        promise:
          row["p_id"] === null
            ? null
            : decodePromise(row, {
                id: "p_id",
                state: "p_state",
                param: "p_param",
                value: "p_value",
                tags: "p_tags",
                timeoutAt: "p_timeout_at",
                createdAt: "p_created_at",
                settledAt: "p_settled_at",
              }),
      }));
    },
    async schedulePage(query) {
      const rows = await session.query(sql.get("promiseSchedulePage", SCHEDULE_PAGE), [query.after ?? "", JSON.stringify(query.tags), query.limit]);
      return rows.map(decodeSchedule);
    },
    async dueSchedules(now: Instant, max: number) {
      const rows = await session.query(sql.get("promiseDueSchedules", DUE_SCHEDULES), [now, max]);
      return rows.map(decodeSchedule);
    },
    async everything() {
      const [row] = await session.query(sql.get("promiseEverything", EVERYTHING, false));
      const promises = list(row!, "promises").map(promiseOfCells);
      const tasks = list(row!, "tasks").map(taskOfCells);
      const callbacks = list(row!, "callbacks").map(([awaited, awaiter]): CallbackRow => ({ awaited: awaited as string, awaiter: awaiter as string }));
      const listeners = list(row!, "listeners").map(([promiseId, address]): ListenerRow => ({ promiseId: promiseId as string, address: address as string }));
      const schedules = list(row!, "schedules").map(
        ([id, cron, promiseId, promiseTimeout, promiseParam, promiseTags, createdAt, nextRunAt, lastRunAt]): PromiseScheduleRow => ({
          id: id as string,
          cron: cron as string,
          promiseId: promiseId as string,
          promiseTimeout: promiseTimeout as number,
          promiseParam: JSON.parse(promiseParam as string),
          promiseTags: promiseTags as Record<string, string>,
          createdAt: createdAt as number,
          nextRunAt: nextRunAt as number,
          lastRunAt: lastRunAt as number | null,
        }),
      );
      const outbox = list(row!, "outbox").map(outboxOfCells);
      return { promises, tasks, callbacks, listeners, schedules, outbox };
    },
  };
}
