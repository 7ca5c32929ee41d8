import type { Instant, OutboxFilter, OutboxRef, OutboxRow, PromisePageQuery, PromiseReader, PromiseRow, TaskPageQuery } from "@belay/contract";
import type { Statements } from "../connection.js";
import type { Tables } from "../tables.js";
import {
  PROMISE_COLUMNS, type PromiseContext, type PromiseSqlRow, SCHEDULE_COLUMNS, type ScheduleSqlRow, TASK_COLUMNS, type TaskSqlRow,
  promiseOf, selectListeners, selectPromise, scheduleOf, taskOf,
} from "./promise-rows.js";

// The promise surface's scans: due timers and the outbox by their time-ordered indexes, in bounded
// batches (inside the operation's write transaction, which holds the file's write lock, so no row
// can be taken twice), and the reads of pages and snapshots (on one read snapshot). Filters are
// bound as JSON (`json_each`), so every statement's text is fixed and prepared once.

// ---- timers ---------------------------------------------------------------------------------

/** Pending promises whose deadline has come, earliest first (the partial index of pending deadlines). */
export const selectDuePromises = (t: Tables) =>
  `SELECT id FROM ${t.promises} WHERE state = 'pending' AND timeout_at <= ? ORDER BY timeout_at LIMIT ?`;

/** Tasks whose timer (retry or lease) has come, earliest first (the partial index of task timers). */
export const selectDueTasks = (t: Tables) =>
  `SELECT id FROM ${t.tasks} WHERE timer_at IS NOT NULL AND timer_at <= ? ORDER BY timer_at LIMIT ?`;

/** Due deadlines and task timers at `now`, earliest first, up to `max` each. */
export function dueTimers(ctx: PromiseContext, now: Instant, max: number): { promises: string[]; tasks: string[] } {
  const promises = (ctx.q.get(selectDuePromises).all(now, max) as { id: string }[]).map((row) => row.id);
  const tasks = (ctx.q.get(selectDueTasks).all(now, max) as { id: string }[]).map((row) => row.id);
  return { promises, tasks };
}

// ---- the outbox -----------------------------------------------------------------------------

/** Messages available at `now`, oldest first (by availability, then by write: the outbox's time index). */
export const selectAvailableOutbox = (t: Tables) =>
  `SELECT kind, id, address FROM ${t.outbox} WHERE available_at <= ? ORDER BY available_at, revision LIMIT ?`;

/**
 * Messages available at `now` whose address is one of `@addresses` or starts with one of
 * `@prefixes` (JSON lists), oldest first. It walks the same time index as the unfiltered take: the
 * index of a WITHOUT ROWID table carries the key, address included, so each entry is tested
 * without reading the table. A prefix is compared by `substr`, exactly (no `LIKE` wildcards or
 * case folding).
 */
export const selectAvailableOutboxFiltered = (t: Tables) =>
  `SELECT kind, id, address FROM ${t.outbox} AS o
   WHERE o.available_at <= @now
     AND (o.address IN (SELECT value FROM json_each(@addresses))
       OR EXISTS (SELECT 1 FROM json_each(@prefixes) AS p WHERE substr(o.address, 1, length(p.value)) = p.value))
   ORDER BY o.available_at, o.revision LIMIT @max`;

/** A taken message: hidden until the take's lease ends, at the take's revision, taken once more. */
export const markTaken = (t: Tables) =>
  `UPDATE ${t.outbox} SET available_at = ?, revision = ?, takes = takes + 1 WHERE kind = ? AND id = ? AND address = ?
   RETURNING version, created_at AS createdAt, takes`;

/** A message still at the revision of its take. An `execute` is one per task: its key is (kind, id). */
export const deleteAcknowledged = (t: Tables) =>
  `DELETE FROM ${t.outbox} WHERE kind = ? AND id = ? AND (kind = 'execute' OR address = ?) AND revision = ?`;

/** A message still at the revision of its take, handed back: available at `at`, at a new revision (its takes stay). */
export const markReleased = (t: Tables) =>
  `UPDATE ${t.outbox} SET available_at = ?, revision = ? WHERE kind = ? AND id = ? AND (kind = 'execute' OR address = ?) AND revision = ?`;

type OutboxKey = { kind: "execute" | "unblock"; id: string; address: string };

/** Takes up to `max` messages available at `now` that pass `filter`: each hidden until `until`, at a new revision, `takes` + 1. */
export function takeOutbox(ctx: PromiseContext, now: Instant, max: number, until: Instant, filter: OutboxFilter | null): OutboxRow[] {
  const { q } = ctx;
  const due = (
    filter === null
      ? q.get(selectAvailableOutbox).all(now, max)
      : q.get(selectAvailableOutboxFiltered).all({ now, max, addresses: JSON.stringify(filter.addresses), prefixes: JSON.stringify(filter.prefixes) })
  ) as OutboxKey[];
  if (due.length === 0) return [];
  let revision = ctx.revisions.take(q, due.length) - 1;
  return due.map(({ kind, id, address }) => {
    revision++;
    const { version, createdAt, takes } = q.get(markTaken).get(until, revision, kind, id, address) as { version: number; createdAt: Instant; takes: number };
    return kind === "execute"
      ? { kind, id, address, version, availableAt: until, revision, createdAt, takes }
      : { kind, id, address, version: 0 as const, availableAt: until, revision, createdAt, takes };
  });
}

/** Deletes messages still at the revision of their take (a later write or take moved it on). */
export function acknowledgeOutbox(ctx: PromiseContext, rows: readonly OutboxRef[]): void {
  const statement = ctx.q.get(deleteAcknowledged);
  for (const { kind, id, address, revision } of rows) statement.run(kind, id, address, revision);
}

/**
 * Makes messages still at the revision of their take available at `at`, each at a new revision
 * (so the old token touches it no more). Says whether any was handed back. Revisions are reserved
 * for every row given: a row that moved on leaves a gap, and revisions need only be new.
 */
export function releaseOutbox(ctx: PromiseContext, rows: readonly OutboxRef[], at: Instant): boolean {
  if (rows.length === 0) return false;
  const { q } = ctx;
  let revision = ctx.revisions.take(q, rows.length) - 1;
  let released = false;
  const statement = q.get(markReleased);
  for (const { kind, id, address, revision: taken } of rows) {
    revision++;
    if (statement.run(at, revision, kind, id, address, taken).changes > 0) released = true;
  }
  return released;
}

// ---- reset ----------------------------------------------------------------------------------

const RESET_TABLES = ["promises", "tasks", "callbacks", "listeners", "outbox", "promiseSchedules"] as const;
const resets = RESET_TABLES.map((table) => (t: Tables) => `DELETE FROM ${t[table]}`);

/** Deletes every row of the promise surface. The revision counter stays: a revision is never handed out twice. */
export function resetPromises(ctx: PromiseContext): void {
  for (const reset of resets) ctx.q.get(reset).run();
}

// ---- reads ----------------------------------------------------------------------------------

/** Every `[key, value]` of the JSON object bound to `filter` is a tag of `tags` with that value (a tag key may be any text). */
const tagsMatch = (tags: string, filter: string) =>
  `NOT EXISTS (SELECT 1 FROM json_each(${filter}) AS f WHERE (SELECT g.value FROM json_each(${tags}) AS g WHERE g.key = f.key) IS NOT f.value)`;

/** The conditions of a promise page past its ids: states a JSON list or null (any), `expiredBy` an instant or null, `tags` a JSON object. */
const PAGE_FILTERS = `(@states IS NULL OR p.state IN (SELECT value FROM json_each(@states)) OR (p.state = 'pending' AND p.timeout_at <= @expiredBy))
     AND ${tagsMatch("p.tags", "@tags")}`;

/** A page of promises by id (see `PAGE_FILTERS`). */
export const selectPromisePage = (t: Tables) =>
  `SELECT ${PROMISE_COLUMNS} FROM ${t.promises} AS p
   WHERE p.id > @after
     AND ${PAGE_FILTERS}
   ORDER BY p.id LIMIT @limit`;

/**
 * A page of promises whose id starts with `@prefix`: a range of the id index, from the prefix (or
 * past the cursor, whichever is later) to `@upper`, the first text after every id with that
 * prefix (see `prefixUpperBound`); `substr` keeps the match exact (no `LIKE` wildcards).
 */
export const selectPromisePrefixPage = (t: Tables) =>
  `SELECT ${PROMISE_COLUMNS} FROM ${t.promises} AS p
   WHERE p.id >= max(@prefix, @after) AND p.id <> @after AND p.id < @upper
     AND substr(p.id, 1, length(@prefix)) = @prefix
     AND ${PAGE_FILTERS}
   ORDER BY p.id LIMIT @limit`;

/**
 * The least text above every text starting with `prefix`, in SQLite's BINARY order (UTF-8 bytes,
 * which is code point order): the prefix with its last code point raised by one (skipping the
 * surrogates; a last U+10FFFF is dropped and the one before raised). When there is none (every
 * code point U+10FFFF, or a lone surrogate that SQLite would store replaced), an empty BLOB: every
 * TEXT sorts below every BLOB.
 */
export function prefixUpperBound(prefix: string): string | Buffer {
  const points = [...prefix].map((char) => char.codePointAt(0)!);
  if (points.some((point) => point >= 0xd800 && point <= 0xdfff)) return Buffer.alloc(0);
  while (points.length > 0) {
    const last = points.pop()!;
    if (last === 0x10ffff) continue;
    points.push(last === 0xd7ff ? 0xe000 : last + 1);
    return String.fromCodePoint(...points);
  }
  return Buffer.alloc(0);
}

/** The callbacks on a promise, by their key (awaited first). */
export const selectAwaitersOf = (t: Tables) => `SELECT awaiter FROM ${t.callbacks} WHERE awaited = ? ORDER BY awaiter`;
/** The promises an awaiter waits on (the awaiter index). */
export const selectAwaitedBy = (t: Tables) => `SELECT awaited FROM ${t.callbacks} WHERE awaiter = ? ORDER BY awaited`;
/** The messages about a promise: its task's `execute` and its `unblock`s (by the outbox's key). */
export const selectMessagesOf = (t: Tables) =>
  `SELECT kind, id, address, version, available_at AS availableAt, revision, created_at AS createdAt, takes FROM ${t.outbox}
   WHERE kind IN ('execute', 'unblock') AND id = ? ORDER BY kind, address`;

/** A page of tasks by id, each with its promise; with `fulfilled`, tasks whose promise is pending past `now` count as fulfilled. */
export const selectTaskPage = (t: Tables) =>
  `SELECT ${TASK_COLUMNS}, ${PROMISE_COLUMNS} FROM ${t.tasks} AS t LEFT JOIN ${t.promises} AS p ON p.id = t.id
   WHERE t.id > @after
     AND (@states IS NULL OR t.state IN (SELECT value FROM json_each(@states)) OR (@fulfilled AND p.state = 'pending' AND p.timeout_at <= @now))
   ORDER BY t.id LIMIT @limit`;

/** A page of schedules by id whose promise tags match `tags` (a JSON object). */
export const selectSchedulePage = (t: Tables) =>
  `SELECT ${SCHEDULE_COLUMNS} FROM ${t.promiseSchedules} WHERE id > @after AND ${tagsMatch("promise_tags", "@tags")} ORDER BY id LIMIT @limit`;

/** Schedules due at `now`, earliest first (the schedules' time index). */
export const selectDueSchedules = (t: Tables) =>
  `SELECT ${SCHEDULE_COLUMNS} FROM ${t.promiseSchedules} WHERE next_run_at <= ? ORDER BY next_run_at LIMIT ?`;

const everyPromise = (t: Tables) => `SELECT ${PROMISE_COLUMNS} FROM ${t.promises} AS p`;
const everyTask = (t: Tables) => `SELECT ${TASK_COLUMNS} FROM ${t.tasks} AS t`;
const everyCallback = (t: Tables) => `SELECT awaited, awaiter FROM ${t.callbacks}`;
const everyListener = (t: Tables) => `SELECT promise_id AS promiseId, address FROM ${t.listeners}`;
const everySchedule = (t: Tables) => `SELECT ${SCHEDULE_COLUMNS} FROM ${t.promiseSchedules}`;
const everyMessage = (t: Tables) =>
  `SELECT kind, id, address, version, available_at AS availableAt, revision, created_at AS createdAt, takes FROM ${t.outbox}`;

/** Ids are non-empty, so every id sorts after the empty text: the first page starts there. */
const after = (cursor: string | null) => cursor ?? "";

/** The read-only queries, on the caller's read snapshot. */
export function promiseReader(q: Statements): PromiseReader {
  return {
    async promisePage(query: PromisePageQuery) {
      const params = {
        after: after(query.after),
        states: query.states === null ? null : JSON.stringify(query.states),
        expiredBy: query.expiredBy,
        tags: JSON.stringify(query.tags),
        limit: query.limit,
      };
      const rows =
        query.prefix === null
          ? q.get(selectPromisePage).all(params)
          : q.get(selectPromisePrefixPage).all({ ...params, prefix: query.prefix, upper: prefixUpperBound(query.prefix) });
      return (rows as PromiseSqlRow[]).map(promiseOf);
    },
    async taskPage(query: TaskPageQuery) {
      const states = query.states === null ? null : JSON.stringify(query.states);
      const fulfilled = query.states?.includes("fulfilled") === true ? 1 : 0;
      const rows = q.get(selectTaskPage).all({ after: after(query.after), states, fulfilled, now: query.now, limit: query.limit }) as (TaskSqlRow & PromiseSqlRow)[];
      return rows.map((row) => ({ task: taskOf(row)!, promise: row.id === null ? null : promiseOf(row) }));
    },
    async schedulePage(query) {
      const rows = q.get(selectSchedulePage).all({ after: after(query.after), tags: JSON.stringify(query.tags), limit: query.limit }) as ScheduleSqlRow[];
      return rows.map(scheduleOf);
    },
    async dueSchedules(now: Instant, max: number) {
      return (q.get(selectDueSchedules).all(now, max) as ScheduleSqlRow[]).map(scheduleOf);
    },
    async describe(id: string) {
      const row = q.get(selectPromise).get(id) as (PromiseSqlRow & TaskSqlRow) | undefined;
      if (row === undefined) return null;
      return {
        promise: promiseOf(row),
        task: taskOf(row),
        awaiters: (q.get(selectAwaitersOf).all(id) as { awaiter: string }[]).map((r) => r.awaiter),
        awaiting: (q.get(selectAwaitedBy).all(id) as { awaited: string }[]).map((r) => r.awaited),
        listeners: (q.get(selectListeners).all(id) as { address: string }[]).map((r) => r.address),
        outbox: q.get(selectMessagesOf).all(id) as OutboxRow[],
      };
    },
    async everything() {
      return {
        promises: (q.get(everyPromise).all() as PromiseSqlRow[]).map(promiseOf) as PromiseRow[],
        tasks: (q.get(everyTask).all() as TaskSqlRow[]).map((row) => taskOf(row)!),
        callbacks: q.get(everyCallback).all() as { awaited: string; awaiter: string }[],
        listeners: q.get(everyListener).all() as { promiseId: string; address: string }[],
        schedules: (q.get(everySchedule).all() as ScheduleSqlRow[]).map(scheduleOf),
        outbox: q.get(everyMessage).all() as OutboxRow[],
      };
    },
  };
}
