import type {
  Instant, LoadedRows, PromiseEffects, PromiseRow, PromiseScheduleRow, PromiseState, PromiseValue, RowKey, TaskRow, TaskState,
} from "@belay/contract";
import type { Statements } from "../connection.js";
import type { Tables } from "../tables.js";
import type { OutboxRevisions } from "../outbox-revisions.js";

// The promise surface's keyed reads and writes: the rows the contract's machine asks for, and the
// effects it decided, inside the operation's `BEGIN IMMEDIATE` transaction (shared with the writes
// of its group, each from its own savepoint). The write lock is held from the transaction's first
// statement, so what is loaded cannot change before the commit: nothing needs locking row by row.
// No rule is decided here.

/** What the promise surface's statements receive: the connection's prepared statements and the step hook. */
export interface PromiseContext {
  readonly q: Statements;
  /** Where the operation's outbox revisions come from (the connection's reserved block). */
  readonly revisions: OutboxRevisions;
  /** Calls the step hook (if installed) at a named point of the operation. */
  readonly step: (name: string) => Promise<void>;
}

/**
 * An insert hit a unique key: a row the machine saw absent exists. The contract's answer is to
 * run the operation again from its loads (`PromiseBackend.transact`). Under the file's single
 * write lock no concurrent creator can get in between, so this only guards the rule.
 */
export class InsertConflict extends Error {
  readonly table: string;
  readonly id: string;

  constructor(table: string, id: string, options?: ErrorOptions) {
    super(`a ${table} row with id ${JSON.stringify(id)} exists already`, options);
    this.name = "InsertConflict";
    this.table = table;
    this.id = id;
  }
}

// ---- rows ↔ records -------------------------------------------------------------------------

/** A promise row as stored. */
export interface PromiseSqlRow {
  readonly id: string;
  readonly state: PromiseState;
  readonly param: string;
  readonly value: string;
  readonly tags: string;
  readonly timeout_at: Instant;
  readonly created_at: Instant;
  readonly settled_at: Instant | null;
}

/** A task row as stored, under the names a join with its promise gives it. */
export interface TaskSqlRow {
  readonly task_id: string | null;
  readonly task_state: TaskState | null;
  readonly task_version: number | null;
  readonly task_resumes: number | null;
  readonly task_pid: string | null;
  readonly task_ttl: number | null;
  readonly task_timer_at: Instant | null;
}

/** A schedule row as stored. */
export interface ScheduleSqlRow {
  readonly id: string;
  readonly cron: string;
  readonly promise_id: string;
  readonly promise_timeout: number;
  readonly promise_param: string;
  readonly promise_tags: string;
  readonly created_at: Instant;
  readonly next_run_at: Instant;
  readonly last_run_at: Instant | null;
}

/** The columns of a promise (aliased `p`), for selects of promises. */
export const PROMISE_COLUMNS = "p.id, p.state, p.param, p.value, p.tags, p.timeout_at, p.created_at, p.settled_at";
/** The columns of a task (aliased `t`) as `task_*`, so a select may join it with its promise. */
export const TASK_COLUMNS =
  "t.id AS task_id, t.state AS task_state, t.version AS task_version, t.resumes AS task_resumes, t.pid AS task_pid, t.ttl AS task_ttl, t.timer_at AS task_timer_at";
/** The columns of a schedule. */
export const SCHEDULE_COLUMNS = "id, cron, promise_id, promise_timeout, promise_param, promise_tags, created_at, next_run_at, last_run_at";

/** A stored promise as the contract's row. */
export function promiseOf(row: PromiseSqlRow): PromiseRow {
  return {
    id: row.id,
    state: row.state,
    param: JSON.parse(row.param) as PromiseValue,
    value: JSON.parse(row.value) as PromiseValue,
    tags: JSON.parse(row.tags) as Record<string, string>,
    timeoutAt: row.timeout_at,
    createdAt: row.created_at,
    settledAt: row.settled_at,
  };
}

/** A stored task as the contract's row, or `null` when the join found none. */
export function taskOf(row: TaskSqlRow): TaskRow | null {
  if (row.task_id === null) return null;
  return {
    id: row.task_id,
    state: row.task_state!,
    version: row.task_version!,
    resumes: row.task_resumes!,
    pid: row.task_pid,
    ttl: row.task_ttl,
    timerAt: row.task_timer_at,
  };
}

/** A stored schedule as the contract's row. */
export function scheduleOf(row: ScheduleSqlRow): PromiseScheduleRow {
  return {
    id: row.id,
    cron: row.cron,
    promiseId: row.promise_id,
    promiseTimeout: row.promise_timeout,
    promiseParam: JSON.parse(row.promise_param) as PromiseValue,
    promiseTags: JSON.parse(row.promise_tags) as Record<string, string>,
    createdAt: row.created_at,
    nextRunAt: row.next_run_at,
    lastRunAt: row.last_run_at,
  };
}

// ---- load -----------------------------------------------------------------------------------

/** A promise and its task, by id (the primary keys of both). */
export const selectPromise = (t: Tables) =>
  `SELECT ${PROMISE_COLUMNS}, ${TASK_COLUMNS} FROM ${t.promises} AS p LEFT JOIN ${t.tasks} AS t ON t.id = p.id WHERE p.id = ?`;

/** The awaiters of the callbacks on a promise, each with its promise and task (the callbacks' primary key). */
export const selectAwaiters = (t: Tables) =>
  `SELECT c.awaiter, ${PROMISE_COLUMNS}, ${TASK_COLUMNS} FROM ${t.callbacks} AS c
   LEFT JOIN ${t.promises} AS p ON p.id = c.awaiter LEFT JOIN ${t.tasks} AS t ON t.id = c.awaiter
   WHERE c.awaited = ? ORDER BY c.awaiter`;

/** The listener addresses on a promise (the listeners' primary key). */
export const selectListeners = (t: Tables) => `SELECT address FROM ${t.listeners} WHERE promise_id = ? ORDER BY address`;

/** Every promise of a branch (the branch index). */
export const selectBranch = (t: Tables) => `SELECT ${PROMISE_COLUMNS} FROM ${t.promises} AS p WHERE p.branch = ?`;

/** A schedule by id (its primary key). */
export const selectSchedule = (t: Tables) => `SELECT ${SCHEDULE_COLUMNS} FROM ${t.promiseSchedules} WHERE id = ?`;

type Joined = PromiseSqlRow & TaskSqlRow;

/** Reads the rows of `keys`. The transaction holds the file's write lock: nothing loaded can change before it commits. */
export function loadPromiseRows(ctx: PromiseContext, keys: readonly RowKey[]): LoadedRows {
  const { q } = ctx;
  const promises: LoadedRows["promises"][number][] = [];
  const awaiters: LoadedRows["awaiters"][number][] = [];
  const listeners: LoadedRows["listeners"][number][] = [];
  const branches: LoadedRows["branches"][number][] = [];
  const schedules: LoadedRows["schedules"][number][] = [];
  for (const key of keys) {
    switch (key.kind) {
      case "promise": {
        const row = q.get(selectPromise).get(key.id) as Joined | undefined;
        promises.push(row === undefined ? { id: key.id, promise: null, task: null } : { id: key.id, promise: promiseOf(row), task: taskOf(row) });
        break;
      }
      case "awaiters": {
        const rows = q.get(selectAwaiters).all(key.promiseId) as (Joined & { awaiter: string })[];
        awaiters.push({ promiseId: key.promiseId, awaiters: rows.map((row) => row.awaiter) });
        for (const row of rows) {
          promises.push(row.id === null ? { id: row.awaiter, promise: null, task: null } : { id: row.awaiter, promise: promiseOf(row), task: taskOf(row) });
        }
        break;
      }
      case "listeners": {
        const rows = q.get(selectListeners).all(key.promiseId) as { address: string }[];
        listeners.push({ promiseId: key.promiseId, addresses: rows.map((row) => row.address) });
        break;
      }
      case "branch": {
        const rows = q.get(selectBranch).all(key.branch) as PromiseSqlRow[];
        branches.push({ branch: key.branch, promises: rows.map(promiseOf) });
        break;
      }
      case "schedule": {
        const row = q.get(selectSchedule).get(key.id) as ScheduleSqlRow | undefined;
        schedules.push({ id: key.id, schedule: row === undefined ? null : scheduleOf(row) });
        break;
      }
    }
  }
  return { promises, awaiters, listeners, branches, schedules };
}

// ---- apply ----------------------------------------------------------------------------------

/** The callbacks on a promise go (by their primary key, awaited first). */
export const deleteCallbacksOn = (t: Tables) => `DELETE FROM ${t.callbacks} WHERE awaited = ?`;
/** The callbacks of an awaiter go (by the awaiter index). */
export const deleteCallbacksOf = (t: Tables) => `DELETE FROM ${t.callbacks} WHERE awaiter = ?`;
/** The listeners on a promise go (by their primary key). */
export const deleteListeners = (t: Tables) => `DELETE FROM ${t.listeners} WHERE promise_id = ?`;
/** A task's waiting `execute` goes (by the outbox's primary key). */
export const deleteExecute = (t: Tables) => `DELETE FROM ${t.outbox} WHERE kind = 'execute' AND id = ?`;
const deleteSchedule = (t: Tables) => `DELETE FROM ${t.promiseSchedules} WHERE id = ?`;

/** A new promise, written whole; a unique violation means it exists. */
export const insertPromise = (t: Tables) =>
  `INSERT INTO ${t.promises} (id, state, param, value, tags, timeout_at, created_at, settled_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`;
/** A loaded promise, written whole. */
export const updatePromise = (t: Tables) =>
  `UPDATE ${t.promises} SET state = ?, param = ?, value = ?, tags = ?, timeout_at = ?, created_at = ?, settled_at = ? WHERE id = ?`;
/** A new task, written whole; a unique violation means it exists. */
export const insertTask = (t: Tables) => `INSERT INTO ${t.tasks} (id, state, version, resumes, pid, ttl, timer_at) VALUES (?, ?, ?, ?, ?, ?, ?)`;
/** A loaded task, written whole. */
export const updateTask = (t: Tables) => `UPDATE ${t.tasks} SET state = ?, version = ?, resumes = ?, pid = ?, ttl = ?, timer_at = ? WHERE id = ?`;
const insertCallback = (t: Tables) => `INSERT INTO ${t.callbacks} (awaited, awaiter) VALUES (?, ?) ON CONFLICT DO NOTHING`;
const insertListener = (t: Tables) => `INSERT INTO ${t.listeners} (promise_id, address) VALUES (?, ?) ON CONFLICT DO NOTHING`;
/** Reserves `?` revisions; returns the last (the counter only rises, so no revision is ever handed out twice; see `OutboxRevisions`). */
export const reserveRevisions = (t: Tables) => `UPDATE ${t.outboxRevision} SET revision = revision + ? WHERE id = 1 RETURNING revision`;
/** A task's one `execute`: a newer dispatch replaces it — a new message, written now, never taken. */
export const upsertExecute = (t: Tables) =>
  `INSERT INTO ${t.outbox} (kind, id, address, version, available_at, revision, created_at, takes) VALUES ('execute', ?, ?, ?, ?, ?, ?, 0)
   ON CONFLICT (kind, id, address) DO UPDATE SET version = excluded.version, available_at = excluded.available_at, revision = excluded.revision,
     created_at = excluded.created_at, takes = 0`;
/** An `unblock` is written once per (promise, address). */
const insertUnblock = (t: Tables) =>
  `INSERT INTO ${t.outbox} (kind, id, address, version, available_at, revision, created_at, takes) VALUES ('unblock', ?, ?, 0, ?, ?, ?, 0)
   ON CONFLICT DO NOTHING`;
const insertSchedule = (t: Tables) =>
  `INSERT INTO ${t.promiseSchedules} (id, cron, promise_id, promise_timeout, promise_param, promise_tags, created_at, next_run_at, last_run_at)
   VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`;
const updateSchedule = (t: Tables) =>
  `UPDATE ${t.promiseSchedules} SET cron = ?, promise_id = ?, promise_timeout = ?, promise_param = ?, promise_tags = ?, created_at = ?,
   next_run_at = ?, last_run_at = ? WHERE id = ?`;

/** Runs an insert; a unique violation becomes {@link InsertConflict} (the operation runs again). */
function inserting(table: string, id: string, insert: () => unknown): void {
  try {
    insert();
  } catch (error) {
    const code = (error as { code?: unknown } | null)?.code;
    if (code === "SQLITE_CONSTRAINT_PRIMARYKEY" || code === "SQLITE_CONSTRAINT_UNIQUE") throw new InsertConflict(table, id, { cause: error });
    throw error;
  }
}

/** Runs an update of a row the operation loaded; it must exist (only `reset` deletes promises and tasks, under the same lock). */
function updating(table: string, id: string, update: () => { changes: number }): void {
  if (update().changes !== 1) throw new Error(`promise store: the ${table} row ${JSON.stringify(id)} the operation loaded is gone`);
}

/**
 * Writes an operation's effects: deletions first, then rows (see `PromiseEffects`). Says whether
 * it wrote an outbox message (an `unblock` already there is not written again).
 */
export async function applyPromiseEffects(ctx: PromiseContext, effects: PromiseEffects): Promise<boolean> {
  const { q } = ctx;
  for (const id of effects.callbacksOnDeleted) q.get(deleteCallbacksOn).run(id);
  for (const id of effects.callbacksOfDeleted) q.get(deleteCallbacksOf).run(id);
  for (const id of effects.listenersDeleted) q.get(deleteListeners).run(id);
  for (const id of effects.executesDeleted) q.get(deleteExecute).run(id);
  for (const id of effects.schedulesDeleted) q.get(deleteSchedule).run(id);
  await ctx.step("deletions written");
  for (const { row, insert } of effects.promises) {
    const param = JSON.stringify(row.param);
    const value = JSON.stringify(row.value);
    const tags = JSON.stringify(row.tags);
    if (insert) {
      inserting("promise", row.id, () => q.get(insertPromise).run(row.id, row.state, param, value, tags, row.timeoutAt, row.createdAt, row.settledAt));
    } else {
      updating("promise", row.id, () => q.get(updatePromise).run(row.state, param, value, tags, row.timeoutAt, row.createdAt, row.settledAt, row.id));
    }
  }
  for (const { row, insert } of effects.tasks) {
    if (insert) inserting("task", row.id, () => q.get(insertTask).run(row.id, row.state, row.version, row.resumes, row.pid, row.ttl, row.timerAt));
    else updating("task", row.id, () => q.get(updateTask).run(row.state, row.version, row.resumes, row.pid, row.ttl, row.timerAt, row.id));
  }
  await ctx.step("promises and tasks written");
  for (const { awaited, awaiter } of effects.callbacksAdded) q.get(insertCallback).run(awaited, awaiter);
  for (const { promiseId, address } of effects.listenersAdded) q.get(insertListener).run(promiseId, address);
  let wroteOutbox = false;
  if (effects.outbox.length > 0) {
    let revision = ctx.revisions.take(q, effects.outbox.length) - 1;
    for (const write of effects.outbox) {
      revision++;
      // A message is written when it first becomes available: the operation's instant.
      const written =
        write.kind === "execute"
          ? q.get(upsertExecute).run(write.id, write.address, write.version, write.availableAt, revision, write.availableAt)
          : q.get(insertUnblock).run(write.id, write.address, write.availableAt, revision, write.availableAt);
      if (written.changes > 0) wroteOutbox = true;
    }
  }
  for (const { row, insert } of effects.schedules) {
    const param = JSON.stringify(row.promiseParam);
    const tags = JSON.stringify(row.promiseTags);
    if (insert) {
      inserting("schedule", row.id, () =>
        q.get(insertSchedule).run(row.id, row.cron, row.promiseId, row.promiseTimeout, param, tags, row.createdAt, row.nextRunAt, row.lastRunAt),
      );
    } else {
      updating("schedule", row.id, () =>
        q.get(updateSchedule).run(row.cron, row.promiseId, row.promiseTimeout, param, tags, row.createdAt, row.nextRunAt, row.lastRunAt, row.id),
      );
    }
  }
  await ctx.step("callbacks, listeners, outbox and schedules written");
  return wroteOutbox;
}
