import {
  type LoadedRows,
  PROMISE_STATES,
  type PromiseEffects,
  type PromiseRow,
  type PromiseScheduleRow,
  type PromiseState,
  type QueryRow,
  type RowKey,
  TASK_STATES,
  type TaskRow,
  type TaskState,
} from "@belay/contract";
import type { Session, SqlCache, Statement } from "../session.js";

// The rows of the promise surface: one statement loads (and locks) every row of an operation's
// keys, one statement writes every effect. Both are prepared, with one fixed text per shape
// (which key kinds, which kinds of writes), so an operation that touches only promises and tasks
// does not pay for empty clauses of schedules or listeners. Nothing here decides anything: the
// contract's machine does, on the rows loaded here.

/** Promise states as stored (never renumbered: the partial index of pending promises names 0). */
export const PROMISE_STATE_CODES: Readonly<Record<PromiseState, number>> = Object.freeze({
  pending: 0,
  resolved: 1,
  rejected: 2,
  rejected_canceled: 3,
  rejected_timedout: 4,
});

/** Task states as stored. */
export const TASK_STATE_CODES: Readonly<Record<TaskState, number>> = Object.freeze({ pending: 0, acquired: 1, suspended: 2, halted: 3, fulfilled: 4 });

/** Outbox message kinds as stored. */
export const OUTBOX_KIND_CODES = Object.freeze({ execute: 0, unblock: 1 });

/**
 * The address part of an outbox key, as SQL over a kind and an address: none for an `execute`
 * (one per task, whatever its address), the address's MD5 for an `unblock`.
 */
export const OUTBOX_ADDRESS_KEY = (kind: string, address: string) =>
  `CASE ${kind} WHEN ${OUTBOX_KIND_CODES.execute} THEN '00000000-0000-0000-0000-000000000000'::uuid ELSE md5(${address})::uuid END`;

const PROMISE_STATE_OF = PROMISE_STATES.reduce<PromiseState[]>((out, s) => ((out[PROMISE_STATE_CODES[s]] = s), out), []);
const TASK_STATE_OF = TASK_STATES.reduce<TaskState[]>((out, s) => ((out[TASK_STATE_CODES[s]] = s), out), []);

/** A state code read back as its name. */
export const promiseStateOf = (code: unknown): PromiseState => PROMISE_STATE_OF[code as number]!;
export const taskStateOf = (code: unknown): TaskState => TASK_STATE_OF[code as number]!;

const json = (text: unknown) => JSON.parse(text as string) as never;
const nullable = (value: unknown): number | null => (value === null || value === undefined ? null : (value as number));

/** A promise row from columns `id, state, param, value, tags, timeout_at, created_at, settled_at` under the given names. */
export function decodePromise(row: QueryRow, c: { id: string; state: string; param: string; value: string; tags: string; timeoutAt: string; createdAt: string; settledAt: string }): PromiseRow {
  return {
    id: row[c.id] as string,
    state: promiseStateOf(row[c.state]),
    param: json(row[c.param]),
    value: json(row[c.value]),
    tags: json(row[c.tags]),
    timeoutAt: row[c.timeoutAt] as number,
    createdAt: row[c.createdAt] as number,
    settledAt: nullable(row[c.settledAt]),
  };
}

/** A task row from columns `id, state, version, resumes, pid, ttl, timer_at` under the given names. */
export function decodeTask(row: QueryRow, c: { id: string; state: string; version: string; resumes: string; pid: string; ttl: string; timerAt: string }): TaskRow {
  return {
    id: row[c.id] as string,
    state: taskStateOf(row[c.state]),
    version: row[c.version] as number,
    resumes: row[c.resumes] as number,
    pid: (row[c.pid] as string | null) ?? null,
    ttl: nullable(row[c.ttl]),
    timerAt: nullable(row[c.timerAt]),
  };
}

/** A schedule row from its table's own column names. */
export function decodeSchedule(row: QueryRow): PromiseScheduleRow {
  return {
    id: row["id"] as string,
    cron: row["cron"] as string,
    promiseId: row["promise_id"] as string,
    promiseTimeout: row["promise_timeout"] as number,
    promiseParam: json(row["promise_param"]),
    promiseTags: json(row["promise_tags"]),
    createdAt: row["created_at"] as number,
    nextRunAt: row["next_run_at"] as number,
    lastRunAt: nullable(row["last_run_at"]),
  };
}

/** The select list of a promise row (tags as text, parsed by the store). */
export const PROMISE_COLUMNS = (p: string) =>
  `${p}.id, ${p}.state, ${p}.param, ${p}.value, ${p}.tags::text AS tags, ${p}.timeout_at, ${p}.created_at, ${p}.settled_at`;
export const PROMISE_NAMES = { id: "id", state: "state", param: "param", value: "value", tags: "tags", timeoutAt: "timeout_at", createdAt: "created_at", settledAt: "settled_at" };
export const TASK_COLUMNS = (t: string) => `${t}.id, ${t}.state, ${t}.version, ${t}.resumes, ${t}.pid, ${t}.ttl, ${t}.timer_at`;
export const TASK_NAMES = { id: "id", state: "state", version: "version", resumes: "resumes", pid: "pid", ttl: "ttl", timerAt: "timer_at" };
export const SCHEDULE_COLUMNS = (s: string) =>
  `${s}.id, ${s}.cron, ${s}.promise_id, ${s}.promise_timeout, ${s}.promise_param, ${s}.promise_tags::text AS promise_tags, ${s}.created_at, ${s}.next_run_at, ${s}.last_run_at`;

// ---- statements with one text per shape ------------------------------------------------------

/** A statement whose parameters are named: `names[i]` is the value of `$i+1`. */
interface Shaped {
  readonly statement: Statement;
  readonly names: readonly string[];
}

const shapes = new WeakMap<SqlCache, Map<string, Shaped>>();

/**
 * The statement of one shape, built once per store: `build` calls `p(name, type)` for each
 * parameter it uses (the same name is the same parameter), and the values are bound by name.
 */
function shaped(sql: SqlCache, key: string, build: (S: string, p: (name: string, type: string) => string) => string): Shaped {
  let byKey = shapes.get(sql);
  if (byKey === undefined) shapes.set(sql, (byKey = new Map()));
  let found = byKey.get(key);
  if (found === undefined) {
    const names: string[] = [];
    // Each parameter is an InitPlan, whose value no plan depends on: a custom plan then costs
    // what the generic one does, so PostgreSQL keeps the generic plan after its five trials
    // instead of planning every call (the arrays' lengths would otherwise make every custom
    // plan look cheaper).
    const p = (name: string, type: string) => {
      let i = names.indexOf(name);
      if (i < 0) i = names.push(name) - 1;
      return `(SELECT $${i + 1}::${type})::${type}`;
    };
    const statement = sql.get(key, (S) => build(S, p));
    found = { statement, names };
    byKey.set(key, found);
  }
  return found;
}

function run(session: Session, shape: Shaped, values: Readonly<Record<string, unknown>>): Promise<QueryRow[]> {
  return session.query(
    shape.statement,
    shape.names.map((name) => values[name]),
  );
}

// ---- what one transaction remembers ----------------------------------------------------------

/** What an operation's transaction has read so far (it lives for one attempt). */
export class TransactionMemo {
  /** Promise rows as loaded: an update whose param or tags are these very objects does not send them again. */
  readonly loaded = new Map<string, PromiseRow>();

  /**
   * How many callbacks and listeners each `awaiters`/`listeners` key found, read under the
   * promise's lock: nobody else can add one before this transaction ends, so deleting "every
   * callback (listener) on it" when there were none is a statement clause saved.
   */
  readonly awaiterCounts = new Map<string, number>();
  readonly listenerCounts = new Map<string, number>();
}

// ---- load ----------------------------------------------------------------------------------

/**
 * The load of one shape. Every promise named by a key (a `promise` key, the promise of an
 * `awaiters` or `listeners` key, each awaiter found) is locked `FOR UPDATE` with its task, in id
 * order (so concurrent loads take their locks in one order); schedules are locked too; a branch
 * reads unlocked. One union of typed rows answers every key kind.
 *
 * A lock the statement had to wait for hands it the promise's newest version, but the
 * callbacks and listeners it read come from the statement's snapshot, which may predate a
 * callback or listener the lock holder added. Adding one raises the promise's revision (see
 * `apply`), so rows `x` (the snapshot's revision differs from the locked row's) say the load must
 * run again — now holding the lock, so the second run is exact.
 */
function loadShape(sql: SqlCache, has: { promises: boolean; awaiters: boolean; listeners: boolean; branches: boolean; schedules: boolean }): Shaped {
  const key = `promiseLoad:${+has.promises}${+has.awaiters}${+has.listeners}${+has.branches}${+has.schedules}`;
  return shaped(sql, key, (S, p) => {
    const ctes: string[] = [];
    const parts: string[] = [];
    const locked = has.promises || has.awaiters || has.listeners;
    if (has.awaiters) ctes.push(`aw AS MATERIALIZED (SELECT c.awaited, c.awaiter FROM ${S}.callbacks c WHERE c.awaited = ANY(${p("awaiters", "text[]")}))`);
    // Every branch of the union names its columns (a union takes its names from its first branch,
    // which differs from shape to shape): k, id, s, a, b, c, d, n1, n2, n3, n4.
    const part = (from: string, ...columns: string[]) => {
      const names = ["k", "id", "s", "a", "b", "c", "d", "n1", "n2", "n3", "n4"];
      const types = ["text", "text", "smallint", "text", "text", "text", "text", "bigint", "bigint", "bigint", "bigint"];
      parts.push(`SELECT ${columns.map((c, i) => `${c === "NULL" ? `NULL::${types[i]}` : c} AS ${names[i]}`).join(", ")} FROM ${from}`);
    };
    if (locked) {
      const named = [has.promises && p("promises", "text[]"), has.awaiters && p("awaiters", "text[]"), has.listeners && p("listeners", "text[]")].filter(Boolean).join(" || ");
      ctes.push(
        `ids AS (SELECT DISTINCT u.id FROM (SELECT unnest(${named}) AS id${has.awaiters ? " UNION ALL SELECT aw.awaiter FROM aw" : ""}) u)`,
        `lp AS MATERIALIZED (SELECT p.id, p.state, p.param, p.value, p.tags::text AS tags, p.timeout_at, p.created_at, p.settled_at, p.revision
           FROM ${S}.promises p WHERE p.id = ANY(ARRAY(SELECT ids.id FROM ids)) ORDER BY p.id FOR UPDATE)`,
        `lt AS MATERIALIZED (SELECT ${TASK_COLUMNS("t")} FROM ${S}.tasks t WHERE t.id = ANY(ARRAY(SELECT ids.id FROM ids)) ORDER BY t.id FOR UPDATE)`,
      );
      part("lp", "'p'", "lp.id", "lp.state", "lp.param", "lp.value", "lp.tags", "NULL", "lp.timeout_at", "lp.created_at", "lp.settled_at", "NULL");
      part("lt", "'t'", "lt.id", "lt.state", "lt.pid", "NULL", "NULL", "NULL", "lt.version", "lt.resumes::bigint", "lt.ttl::bigint", "lt.timer_at");
    }
    if (has.awaiters) part("aw", "'c'", "aw.awaited", "NULL", "aw.awaiter", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL");
    if (has.listeners) {
      part(
        `${S}.listeners l WHERE l.promise_id = ANY(${p("listeners", "text[]")})`,
        "'l'", "l.promise_id", "NULL", "l.address", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL",
      );
    }
    if (has.awaiters || has.listeners) {
      const watched = [has.awaiters && p("awaiters", "text[]"), has.listeners && p("listeners", "text[]")].filter(Boolean).join(" || ");
      part(
        `${S}.promises sp JOIN lp ON lp.id = sp.id WHERE sp.id = ANY(${watched}) AND sp.revision <> lp.revision`,
        "'x'", "sp.id", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL",
      );
    }
    if (has.branches) {
      part(
        `${S}.promises b WHERE b.branch = ANY(${p("branches", "text[]")})`,
        "'b'", "b.id", "b.state", "b.param", "b.value", "b.tags::text", "b.branch", "b.timeout_at", "b.created_at", "b.settled_at", "NULL",
      );
    }
    if (has.schedules) {
      ctes.push(
        `sc AS MATERIALIZED (SELECT s.id, s.cron, s.promise_id, s.promise_timeout, s.promise_param, s.promise_tags::text AS promise_tags,
                                    s.created_at, s.next_run_at, s.last_run_at
           FROM ${S}.promise_schedules s WHERE s.id = ANY(${p("schedules", "text[]")}) ORDER BY s.id FOR UPDATE)`,
      );
      part("sc", "'s'", "sc.id", "NULL", "sc.cron", "sc.promise_id", "sc.promise_tags", "sc.promise_param", "sc.promise_timeout", "sc.created_at", "sc.next_run_at", "sc.last_run_at");
    }
    return `${ctes.length > 0 ? `WITH ${ctes.join(",\n")}\n` : ""}${parts.join("\nUNION ALL\n")}`;
  });
}

const LOAD_PROMISE = { id: "id", state: "s", param: "a", value: "b", tags: "c", timeoutAt: "n1", createdAt: "n2", settledAt: "n3" };
const LOAD_TASK = { id: "id", state: "s", version: "n1", resumes: "n2", pid: "a", ttl: "n3", timerAt: "n4" };

/** The most runs of one load: the second holds every lock it needs, so a third never happens. */
const MAX_LOAD_RUNS = 3;

/** See `PromiseTransaction.load`: every key in one statement (run again only after a lock wait that may have hidden new callbacks or listeners). */
export async function loadPromiseRows(session: Session, sql: SqlCache, keys: readonly RowKey[], memo: TransactionMemo): Promise<LoadedRows> {
  const promiseIds = new Set<string>();
  const awaiterKeys = new Set<string>();
  const listenerKeys = new Set<string>();
  const branchKeys = new Set<string>();
  const scheduleKeys = new Set<string>();
  const known: { id: string; promise: PromiseRow | null; task: TaskRow | null }[] = [];
  for (const key of keys) {
    switch (key.kind) {
      case "promise":
        promiseIds.add(key.id);
        break;
      case "awaiters":
        awaiterKeys.add(key.promiseId);
        break;
      case "listeners":
        listenerKeys.add(key.promiseId);
        break;
      case "branch":
        branchKeys.add(key.branch);
        break;
      case "schedule":
        scheduleKeys.add(key.id);
        break;
    }
  }
  const has = { promises: promiseIds.size > 0, awaiters: awaiterKeys.size > 0, listeners: listenerKeys.size > 0, branches: branchKeys.size > 0, schedules: scheduleKeys.size > 0 };
  if (!has.promises && !has.awaiters && !has.listeners && !has.branches && !has.schedules) {
    return { promises: known, awaiters: [], listeners: [], branches: [], schedules: [] };
  }
  const shape = loadShape(sql, has);
  const values = { promises: [...promiseIds], awaiters: [...awaiterKeys], listeners: [...listenerKeys], branches: [...branchKeys], schedules: [...scheduleKeys] };
  let rows: QueryRow[] = [];
  for (let runs = 1; ; runs++) {
    rows = await run(session, shape, values);
    if (!rows.some((row) => row["k"] === "x")) break;
    if (runs >= MAX_LOAD_RUNS) throw new Error("promise load: callbacks or listeners kept changing under a held lock");
  }
  const promises = new Map<string, PromiseRow>();
  const tasks = new Map<string, TaskRow>();
  const awaiters = new Map<string, string[]>([...awaiterKeys].map((id) => [id, []]));
  const listeners = new Map<string, string[]>([...listenerKeys].map((id) => [id, []]));
  const branches = new Map<string, PromiseRow[]>([...branchKeys].map((b) => [b, []]));
  const schedules = new Map<string, PromiseScheduleRow | null>([...scheduleKeys].map((id) => [id, null]));
  for (const row of rows) {
    switch (row["k"]) {
      case "p": {
        const promise = decodePromise(row, LOAD_PROMISE);
        promises.set(promise.id, promise);
        memo.loaded.set(promise.id, promise);
        break;
      }
      case "t":
        tasks.set(row["id"] as string, decodeTask(row, LOAD_TASK));
        break;
      case "c":
        awaiters.get(row["id"] as string)!.push(row["a"] as string);
        break;
      case "l":
        listeners.get(row["id"] as string)!.push(row["a"] as string);
        break;
      case "b":
        branches.get(row["d"] as string)!.push(decodePromise(row, LOAD_PROMISE));
        break;
      case "s":
        schedules.set(row["id"] as string, {
          id: row["id"] as string,
          cron: row["a"] as string,
          promiseId: row["b"] as string,
          promiseTags: json(row["c"]),
          promiseParam: json(row["d"]),
          promiseTimeout: row["n1"] as number,
          createdAt: row["n2"] as number,
          nextRunAt: row["n3"] as number,
          lastRunAt: nullable(row["n4"]),
        });
        break;
    }
  }
  // Every promise locked (asked for, or the promise of an awaiters/listeners key, or an awaiter) is loaded, found or not.
  const locked = new Set([...promiseIds, ...awaiterKeys, ...listenerKeys, ...[...awaiters.values()].flat()]);
  for (const id of locked) known.push({ id, promise: promises.get(id) ?? null, task: tasks.get(id) ?? null });
  for (const [id, list] of awaiters) memo.awaiterCounts.set(id, list.length);
  for (const [id, list] of listeners) memo.listenerCounts.set(id, list.length);
  const sorted = (list: string[]) => list.sort();
  return {
    promises: known,
    awaiters: [...awaiters].map(([promiseId, ids]) => ({ promiseId, awaiters: sorted(ids) })),
    listeners: [...listeners].map(([promiseId, addresses]) => ({ promiseId, addresses: sorted(addresses) })),
    branches: [...branches].map(([branch, rows]) => ({ branch, promises: rows })),
    schedules: [...schedules].map(([id, schedule]) => ({ id, schedule })),
  };
}

// ---- apply ---------------------------------------------------------------------------------

/**
 * The write of one shape: each kind of effect is one data-modifying CTE over `unnest` of
 * arrays, all in one statement. They share one snapshot and never touch one row twice (the
 * workspace's effects are disjoint by construction: a task's execute is either written or
 * deleted, a schedule either written or deleted, and a promise's revision is raised either by
 * its update or by the bump). "Deletions, then rows" holds where both name one row: a callback
 * or listener both deleted (by promise) and added survives the delete and is inserted unless
 * present.
 */
function applyShape(sql: SqlCache, has: Readonly<Record<ApplyGroup, boolean>>): Shaped {
  const key = `promiseApply:${APPLY_GROUPS.map((g) => +has[g]).join("")}`;
  return shaped(sql, key, (S, p) => {
    const ctes: string[] = [];
    const added = (alias: string) =>
      `NOT EXISTS (SELECT 1 FROM unnest(${p("cbAwaited", "text[]")}, ${p("cbAwaiter", "text[]")}) a(awaited, awaiter) WHERE a.awaited = ${alias}.awaited AND a.awaiter = ${alias}.awaiter)`;
    if (has.callbacksDeleted) {
      ctes.push(
        `callbacks_deleted AS (DELETE FROM ${S}.callbacks c WHERE (c.awaited = ANY(${p("cbOn", "text[]")}) OR c.awaiter = ANY(${p("cbOf", "text[]")}))${has.callbacksAdded ? ` AND ${added("c")}` : ""})`,
      );
    }
    if (has.callbacksAdded) {
      ctes.push(
        `callbacks_added AS (INSERT INTO ${S}.callbacks (awaited, awaiter) SELECT * FROM unnest(${p("cbAwaited", "text[]")}, ${p("cbAwaiter", "text[]")}) ON CONFLICT DO NOTHING)`,
      );
    }
    if (has.listenersDeleted) {
      const keep = has.listenersAdded
        ? ` AND NOT EXISTS (SELECT 1 FROM unnest(${p("lsPromise", "text[]")}, ${p("lsAddress", "text[]")}) a(promise_id, address) WHERE a.promise_id = l.promise_id AND a.address = l.address)`
        : "";
      ctes.push(`listeners_deleted AS (DELETE FROM ${S}.listeners l WHERE l.promise_id = ANY(${p("lsDeleted", "text[]")})${keep})`);
    }
    if (has.listenersAdded) {
      ctes.push(
        `listeners_added AS (INSERT INTO ${S}.listeners (promise_id, address) SELECT * FROM unnest(${p("lsPromise", "text[]")}, ${p("lsAddress", "text[]")}) ON CONFLICT DO NOTHING)`,
      );
    }
    if (has.executesDeleted) {
      ctes.push(`executes_deleted AS (DELETE FROM ${S}.outbox o WHERE o.id = ANY(${p("exDeleted", "text[]")}) AND o.kind = ${OUTBOX_KIND_CODES.execute})`);
    }
    const revision = `nextval('${S}.outbox_revision')`;
    if (has.executes) {
      ctes.push(
        `executes AS (INSERT INTO ${S}.outbox (kind, id, address, version, available_at, revision, created_at)
           SELECT ${OUTBOX_KIND_CODES.execute}, u.id, u.address, u.version, u.available_at, ${revision}, u.available_at
           FROM unnest(${p("exId", "text[]")}, ${p("exAddress", "text[]")}, ${p("exVersion", "bigint[]")}, ${p("exAt", "bigint[]")}) u(id, address, version, available_at)
           ON CONFLICT (id, kind, address_key) DO UPDATE SET version = EXCLUDED.version, available_at = EXCLUDED.available_at,
             revision = EXCLUDED.revision, created_at = EXCLUDED.created_at, takes = 0)`,
      );
    }
    if (has.unblocks) {
      ctes.push(
        `unblocks AS (INSERT INTO ${S}.outbox (kind, id, address, version, available_at, revision, created_at)
           SELECT ${OUTBOX_KIND_CODES.unblock}, u.id, u.address, 0, u.available_at, ${revision}, u.available_at
           FROM unnest(${p("ubId", "text[]")}, ${p("ubAddress", "text[]")}, ${p("ubAt", "bigint[]")}) u(id, address, available_at)
           ON CONFLICT DO NOTHING)`,
      );
    }
    const promiseArrays = (prefix: string) =>
      `unnest(${p(`${prefix}Id`, "text[]")}, ${p(`${prefix}State`, "smallint[]")}, ${p(`${prefix}Param`, "text[]")}, ${p(`${prefix}Value`, "text[]")},
              ${p(`${prefix}Tags`, "text[]")}, ${p(`${prefix}Timeout`, "bigint[]")}, ${p(`${prefix}Created`, "bigint[]")}, ${p(`${prefix}Settled`, "bigint[]")})
       u(id, state, param, value, tags, timeout_at, created_at, settled_at)`;
    if (has.promisesInserted) {
      // A plain insert: a concurrent creator of the same id makes it fail (23505), and the operation runs again.
      ctes.push(
        `promises_inserted AS (INSERT INTO ${S}.promises (id, state, param, value, tags, timeout_at, created_at, settled_at, revision)
           SELECT u.id, u.state, u.param, u.value, u.tags::jsonb, u.timeout_at, u.created_at, u.settled_at, 1 FROM ${promiseArrays("pi")})`,
      );
    }
    // Updates find their rows by `id = ANY(ids)`, an index condition whatever the estimates (joined
    // with the unnest alone, a generic plan guessing 10 rows would hash-join a scan of the table).
    if (has.promisesUpdated) {
      // A null param or tags is "as loaded": a settle does not send (or rewrite) a large param again.
      ctes.push(
        `promises_updated AS (UPDATE ${S}.promises p SET state = u.state, param = coalesce(u.param, p.param), value = u.value,
             tags = coalesce(u.tags::jsonb, p.tags), timeout_at = u.timeout_at, created_at = u.created_at, settled_at = u.settled_at,
             revision = p.revision + 1
           FROM ${promiseArrays("pu")} WHERE p.id = ANY(${p("puId", "text[]")}) AND p.id = u.id)`,
      );
    }
    if (has.promisesBumped) {
      ctes.push(`promises_bumped AS (UPDATE ${S}.promises p SET revision = p.revision + 1 WHERE p.id = ANY(${p("bumped", "text[]")}))`);
    }
    const taskArrays = (prefix: string) =>
      `unnest(${p(`${prefix}Id`, "text[]")}, ${p(`${prefix}State`, "smallint[]")}, ${p(`${prefix}Version`, "bigint[]")}, ${p(`${prefix}Resumes`, "int[]")},
              ${p(`${prefix}Pid`, "text[]")}, ${p(`${prefix}Ttl`, "int[]")}, ${p(`${prefix}Timer`, "bigint[]")})
       u(id, state, version, resumes, pid, ttl, timer_at)`;
    if (has.tasksInserted) {
      ctes.push(
        `tasks_inserted AS (INSERT INTO ${S}.tasks (id, state, version, resumes, pid, ttl, timer_at)
           SELECT u.id, u.state, u.version, u.resumes, u.pid, u.ttl, u.timer_at FROM ${taskArrays("ti")})`,
      );
    }
    if (has.tasksUpdated) {
      ctes.push(
        `tasks_updated AS (UPDATE ${S}.tasks t SET state = u.state, version = u.version, resumes = u.resumes, pid = u.pid, ttl = u.ttl, timer_at = u.timer_at
           FROM ${taskArrays("tu")} WHERE t.id = ANY(${p("tuId", "text[]")}) AND t.id = u.id)`,
      );
    }
    if (has.schedulesDeleted) {
      ctes.push(`schedules_deleted AS (DELETE FROM ${S}.promise_schedules s WHERE s.id = ANY(${p("scDeleted", "text[]")}))`);
    }
    const scheduleArrays = (prefix: string) =>
      `unnest(${p(`${prefix}Id`, "text[]")}, ${p(`${prefix}Cron`, "text[]")}, ${p(`${prefix}PromiseId`, "text[]")}, ${p(`${prefix}Timeout`, "bigint[]")},
              ${p(`${prefix}Param`, "text[]")}, ${p(`${prefix}Tags`, "text[]")}, ${p(`${prefix}Created`, "bigint[]")}, ${p(`${prefix}Next`, "bigint[]")},
              ${p(`${prefix}Last`, "bigint[]")})
       u(id, cron, promise_id, promise_timeout, promise_param, promise_tags, created_at, next_run_at, last_run_at)`;
    if (has.schedulesInserted) {
      ctes.push(
        `schedules_inserted AS (INSERT INTO ${S}.promise_schedules (id, cron, promise_id, promise_timeout, promise_param, promise_tags, created_at, next_run_at, last_run_at)
           SELECT u.id, u.cron, u.promise_id, u.promise_timeout, u.promise_param, u.promise_tags::jsonb, u.created_at, u.next_run_at, u.last_run_at
           FROM ${scheduleArrays("si")})`,
      );
    }
    if (has.schedulesUpdated) {
      ctes.push(
        `schedules_updated AS (UPDATE ${S}.promise_schedules s SET cron = u.cron, promise_id = u.promise_id, promise_timeout = u.promise_timeout,
             promise_param = u.promise_param, promise_tags = u.promise_tags::jsonb, created_at = u.created_at, next_run_at = u.next_run_at,
             last_run_at = u.last_run_at
           FROM ${scheduleArrays("su")} WHERE s.id = ANY(${p("suId", "text[]")}) AND s.id = u.id)`,
      );
    }
    return `WITH ${ctes.join(",\n")}\nSELECT 1 AS written`;
  });
}

const APPLY_GROUPS = [
  "callbacksDeleted",
  "callbacksAdded",
  "listenersDeleted",
  "listenersAdded",
  "executesDeleted",
  "executes",
  "unblocks",
  "promisesInserted",
  "promisesUpdated",
  "promisesBumped",
  "tasksInserted",
  "tasksUpdated",
  "schedulesDeleted",
  "schedulesInserted",
  "schedulesUpdated",
] as const;
type ApplyGroup = (typeof APPLY_GROUPS)[number];

function promiseArrays(prefix: string, rows: readonly PromiseRow[], memo: TransactionMemo | null, out: Record<string, unknown>): void {
  const loaded = (row: PromiseRow) => memo?.loaded.get(row.id);
  out[`${prefix}Id`] = rows.map((r) => r.id);
  out[`${prefix}State`] = rows.map((r) => PROMISE_STATE_CODES[r.state]);
  out[`${prefix}Param`] = rows.map((r) => (loaded(r)?.param === r.param ? null : JSON.stringify(r.param)));
  out[`${prefix}Value`] = rows.map((r) => JSON.stringify(r.value));
  out[`${prefix}Tags`] = rows.map((r) => (loaded(r)?.tags === r.tags ? null : JSON.stringify(r.tags)));
  out[`${prefix}Timeout`] = rows.map((r) => r.timeoutAt);
  out[`${prefix}Created`] = rows.map((r) => r.createdAt);
  out[`${prefix}Settled`] = rows.map((r) => r.settledAt);
}

function taskArrays(prefix: string, rows: readonly TaskRow[], out: Record<string, unknown>): void {
  out[`${prefix}Id`] = rows.map((r) => r.id);
  out[`${prefix}State`] = rows.map((r) => TASK_STATE_CODES[r.state]);
  out[`${prefix}Version`] = rows.map((r) => r.version);
  out[`${prefix}Resumes`] = rows.map((r) => r.resumes);
  out[`${prefix}Pid`] = rows.map((r) => r.pid);
  out[`${prefix}Ttl`] = rows.map((r) => r.ttl);
  out[`${prefix}Timer`] = rows.map((r) => r.timerAt);
}

function scheduleArrays(prefix: string, rows: readonly PromiseScheduleRow[], out: Record<string, unknown>): void {
  out[`${prefix}Id`] = rows.map((r) => r.id);
  out[`${prefix}Cron`] = rows.map((r) => r.cron);
  out[`${prefix}PromiseId`] = rows.map((r) => r.promiseId);
  out[`${prefix}Timeout`] = rows.map((r) => r.promiseTimeout);
  out[`${prefix}Param`] = rows.map((r) => JSON.stringify(r.promiseParam));
  out[`${prefix}Tags`] = rows.map((r) => JSON.stringify(r.promiseTags));
  out[`${prefix}Created`] = rows.map((r) => r.createdAt);
  out[`${prefix}Next`] = rows.map((r) => r.nextRunAt);
  out[`${prefix}Last`] = rows.map((r) => r.lastRunAt);
}

/**
 * See `PromiseTransaction.apply`: every effect in one statement. A promise that gains a callback
 * or a listener without being written has its revision raised (the "bump"), which tells a
 * concurrent load that waited for its lock to read its callbacks and listeners again.
 */
export async function applyPromiseEffects(session: Session, sql: SqlCache, effects: PromiseEffects, memo: TransactionMemo): Promise<void> {
  const values: Record<string, unknown> = {};
  // Deletions of sets the locked load found empty delete nothing (what this operation adds is in the added lists).
  const callbacksOnDeleted = effects.callbacksOnDeleted.filter((id) => memo.awaiterCounts.get(id) !== 0);
  const listenersDeleted = effects.listenersDeleted.filter((id) => memo.listenerCounts.get(id) !== 0);
  const inserted = effects.promises.filter((w) => w.insert).map((w) => w.row);
  const updated = effects.promises.filter((w) => !w.insert).map((w) => w.row);
  const written = new Set(effects.promises.map((w) => w.row.id));
  const bumped = [...new Set([...effects.callbacksAdded.map((c) => c.awaited), ...effects.listenersAdded.map((l) => l.promiseId)])].filter((id) => !written.has(id));
  const executes = effects.outbox.filter((m) => m.kind === "execute");
  const unblocks = effects.outbox.filter((m) => m.kind === "unblock");
  const has: Record<ApplyGroup, boolean> = {
    callbacksDeleted: callbacksOnDeleted.length + effects.callbacksOfDeleted.length > 0,
    callbacksAdded: effects.callbacksAdded.length > 0,
    listenersDeleted: listenersDeleted.length > 0,
    listenersAdded: effects.listenersAdded.length > 0,
    executesDeleted: effects.executesDeleted.length > 0,
    executes: executes.length > 0,
    unblocks: unblocks.length > 0,
    promisesInserted: inserted.length > 0,
    promisesUpdated: updated.length > 0,
    promisesBumped: bumped.length > 0,
    tasksInserted: effects.tasks.some((w) => w.insert),
    tasksUpdated: effects.tasks.some((w) => !w.insert),
    schedulesDeleted: effects.schedulesDeleted.length > 0,
    schedulesInserted: effects.schedules.some((w) => w.insert),
    schedulesUpdated: effects.schedules.some((w) => !w.insert),
  };
  if (!APPLY_GROUPS.some((g) => has[g])) return;
  values["cbOn"] = callbacksOnDeleted;
  values["cbOf"] = effects.callbacksOfDeleted;
  values["cbAwaited"] = effects.callbacksAdded.map((c) => c.awaited);
  values["cbAwaiter"] = effects.callbacksAdded.map((c) => c.awaiter);
  values["lsDeleted"] = listenersDeleted;
  values["lsPromise"] = effects.listenersAdded.map((l) => l.promiseId);
  values["lsAddress"] = effects.listenersAdded.map((l) => l.address);
  values["exDeleted"] = effects.executesDeleted;
  values["exId"] = executes.map((m) => m.id);
  values["exAddress"] = executes.map((m) => m.address);
  values["exVersion"] = executes.map((m) => (m.kind === "execute" ? m.version : 0));
  values["exAt"] = executes.map((m) => m.availableAt);
  values["ubId"] = unblocks.map((m) => m.id);
  values["ubAddress"] = unblocks.map((m) => m.address);
  values["ubAt"] = unblocks.map((m) => m.availableAt);
  promiseArrays("pi", inserted, null, values);
  promiseArrays("pu", updated, memo, values);
  values["bumped"] = bumped;
  taskArrays("ti", effects.tasks.filter((w) => w.insert).map((w) => w.row), values);
  taskArrays("tu", effects.tasks.filter((w) => !w.insert).map((w) => w.row), values);
  values["scDeleted"] = effects.schedulesDeleted;
  scheduleArrays("si", effects.schedules.filter((w) => w.insert).map((w) => w.row), values);
  scheduleArrays("su", effects.schedules.filter((w) => !w.insert).map((w) => w.row), values);
  await run(session, applyShape(sql, has), values);
}

/** The statement texts of every shape built so far by this store (for the plan tests). */
export function builtShapes(sql: SqlCache): ReadonlyMap<string, Shaped> {
  return shapes.get(sql) ?? new Map();
}

/** The load statement of a shape (for the plan tests). */
export function loadStatement(sql: SqlCache, has: { promises: boolean; awaiters: boolean; listeners: boolean; branches: boolean; schedules: boolean }): Shaped {
  return loadShape(sql, has);
}
