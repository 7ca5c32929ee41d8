import {
  type LoadedRows, PROMISE_STATES, type PromiseEffects, type PromiseRow, type PromiseScheduleRow, type PromiseState,
  type QueryRow, type RowKey, TASK_STATES, type TaskRow, type TaskState, keysByKind,
} from "@belay/contract";
import {
  AttemptRows, type RowGuards, type StoredPromise, type WrittenPromises, branchOfTags, firstRevision, raisedRevisions,
} from "../promise-row-cache.js";
import type { PromiseSession } from "../promise-session.js";
import type { Session, SqlCache, Statement } from "../session.js";

// The rows of the promise surface as stored, the load and the write: statements of one fixed
// text per shape, prepared, and what one transaction remembers between them. Nothing here decides anything: the contract's machine
// does, on the rows loaded.

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

/** A JSON column parsed. */
export const json = (text: unknown) => JSON.parse(text as string) as never;
/** A nullable bigint column. */
export const nullable = (value: unknown): number | null => (value === null || value === undefined ? null : (value as number));

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

type ScheduleNames = Readonly<Record<keyof PromiseScheduleRow, string>>;

/** A schedule row from its columns under the given names. */
function decodeScheduleAs(row: QueryRow, c: ScheduleNames): PromiseScheduleRow {
  return {
    id: row[c.id] as string,
    cron: row[c.cron] as string,
    promiseId: row[c.promiseId] as string,
    promiseTimeout: row[c.promiseTimeout] as number,
    promiseParam: json(row[c.promiseParam]),
    promiseTags: json(row[c.promiseTags]),
    createdAt: row[c.createdAt] as number,
    nextRunAt: row[c.nextRunAt] as number,
    lastRunAt: nullable(row[c.lastRunAt]),
  };
}

const SCHEDULE_NAMES: ScheduleNames = {
  id: "id", cron: "cron", promiseId: "promise_id", promiseTimeout: "promise_timeout", promiseParam: "promise_param", promiseTags: "promise_tags",
  createdAt: "created_at", nextRunAt: "next_run_at", lastRunAt: "last_run_at",
};

/** A schedule row from its table's own column names. */
export const decodeSchedule = (row: QueryRow): PromiseScheduleRow => decodeScheduleAs(row, SCHEDULE_NAMES);

/** The select list of a promise row (tags as text, parsed by the store). */
export const PROMISE_COLUMNS = (p: string) =>
  `${p}.id, ${p}.state, ${p}.param, ${p}.value, ${p}.tags::text AS tags, ${p}.timeout_at, ${p}.created_at, ${p}.settled_at`;
export const PROMISE_NAMES = { id: "id", state: "state", param: "param", value: "value", tags: "tags", timeoutAt: "timeout_at", createdAt: "created_at", settledAt: "settled_at" };
export const TASK_COLUMNS = (t: string) => `${t}.id, ${t}.state, ${t}.version, ${t}.resumes, ${t}.pid, ${t}.ttl, ${t}.timer_at`;
export const TASK_NAMES = { id: "id", state: "state", version: "version", resumes: "resumes", pid: "pid", ttl: "ttl", timerAt: "timer_at" };
export const SCHEDULE_COLUMNS = (s: string) =>
  `${s}.id, ${s}.cron, ${s}.promise_id, ${s}.promise_timeout, ${s}.promise_param, ${s}.promise_tags::text AS promise_tags, ${s}.created_at, ${s}.next_run_at, ${s}.last_run_at`;

// ---- statements with one text per shape ------------------------------------------------------

/** A statement whose parameters are named: `params[i]` says where the value of `$i+1` comes from. */
export interface Shaped {
  readonly statement: Statement;
  readonly params: readonly { readonly name: string; readonly scalar: boolean }[];
}

/**
 * How a shape's statement names a parameter: `list(name, type)` an array (`type[]`) of the values
 * under `name`, `one(name, type)` the single value of that list, as a scalar.
 */
export interface ShapeParams {
  readonly list: (name: string, type: string) => string;
  readonly one: (name: string, type: string) => string;
}

/** How many rows a part of a shape has: none (left out), one (scalar parameters) or several (arrays). */
export type Cardinality = 0 | 1 | 2;

/** The cardinality of a list of `n` values. */
export const cardinality = (n: number): Cardinality => (n === 0 ? 0 : n === 1 ? 1 : 2);

const shapes = new WeakMap<SqlCache, Map<string, Shaped>>();

/**
 * The statement of one shape, built once per store: `build` names each parameter through `list`
 * or `one` (the same name is the same parameter), and the values are bound by name.
 *
 * An array parameter is an InitPlan, whose value no plan depends on: a custom plan then costs
 * what the generic one does, so PostgreSQL keeps the generic plan after its five trials instead of
 * planning every call (the arrays' lengths would otherwise make every custom plan look cheaper).
 * A scalar compares with a key (`id = $1`) or fills a row: its custom plan is the generic one, and
 * an index probe by it costs a fraction of a probe by an array (no bitmap, no sort, no InitPlan),
 * which is why a part with one row gets scalars.
 */
export function shaped(sql: SqlCache, key: string, build: (S: string, p: ShapeParams) => string): Shaped {
  let byKey = shapes.get(sql);
  if (byKey === undefined) shapes.set(sql, (byKey = new Map()));
  let found = byKey.get(key);
  if (found === undefined) {
    const params: { name: string; scalar: boolean }[] = [];
    const index = (name: string, scalar: boolean) => {
      let i = params.findIndex((param) => param.name === name);
      if (i < 0) i = params.push({ name, scalar }) - 1;
      else if (params[i]!.scalar !== scalar) throw new Error(`promise statement ${key}: parameter ${name} used both as a list and a scalar`);
      return i + 1;
    };
    const p: ShapeParams = {
      list: (name, type) => `(SELECT $${index(name, false)}::${type}[])::${type}[]`,
      one: (name, type) => `$${index(name, true)}::${type}`,
    };
    const statement = sql.get(key, (S) => build(S, p));
    found = { statement, params };
    byKey.set(key, found);
  }
  return found;
}

/** The parameter values of `shape`, from lists by name (a scalar takes its list's one value). */
export function shapeValues(shape: Shaped, values: Readonly<Record<string, readonly unknown[]>>): unknown[] {
  return shape.params.map(({ name, scalar }) => (scalar ? values[name]![0] : values[name]));
}

/** A source of rows `u(columns)`: one row of scalars, or the arrays unnested. */
export function rowSource(p: ShapeParams, card: Cardinality, columns: readonly (readonly [name: string, param: string, type: string])[]): string {
  const names = columns.map(([name]) => name).join(", ");
  const source =
    card === 1
      ? `(VALUES (${columns.map(([, param, type]) => p.one(param, type)).join(", ")}))`
      : `unnest(${columns.map(([, param, type]) => p.list(param, type)).join(", ")})`;
  return `${source} u(${names})`;
}

/** `column` is one of the values under `name`: `= $n` for one, `= ANY(array)` for several. */
export function among(p: ShapeParams, column: string, card: Cardinality, name: string, type: string): string {
  return card === 1 ? `${column} = ${p.one(name, type)}` : `${column} = ANY(${p.list(name, type)})`;
}

/** Runs the statement of `shape` with its values. */
export function runShaped(session: Session, shape: Shaped, values: Readonly<Record<string, readonly unknown[]>>): Promise<QueryRow[]> {
  return session.query(shape.statement, shapeValues(shape, values));
}

/** The statement texts of every shape built so far by this store (for the plan tests). */
export function builtShapes(sql: SqlCache): ReadonlyMap<string, Shaped> {
  return shapes.get(sql) ?? new Map();
}

// ---- what one transaction remembers ----------------------------------------------------------

/**
 * What an operation's transaction has read so far (it lives for one attempt): the rows as
 * {@link AttemptRows} (what the row cache learns from after the commit), and more.
 *
 * Its `awaiterCounts` and `listenerCounts` were read under the promise's lock (or are guarded by
 * its revision): nobody else can add a callback or listener before this transaction ends, so
 * deleting "every callback (listener) on it" when there were none is a statement clause saved.
 */
export class TransactionMemo extends AttemptRows {
  /** Promise rows as loaded: an update whose param or tags are these very objects does not send them again. */
  readonly loaded = new Map<string, PromiseRow>();

  /** Whether an unlocked load (outside a transaction) found a row a locked load would have locked. */
  foundLockable = false;

  /** The effects handed to the write, and what the write sent once it has (for the row cache). */
  effects: PromiseEffects | null = null;
  written: WrittenPromises | null = null;
}

// ------------------------------------------------------------------------------------------------
// the load

// The load: one statement answers every key of an operation's load, as one union of typed rows.
// Inside a transaction it locks `FOR UPDATE` every promise and task it reads; outside one (an
// operation that may need no transaction, see `postgres-promise-store.ts`) it only reads.

/** What one load asks for: which key kinds, and how. */
export interface LoadShape {
  readonly promises: boolean;
  readonly awaiters: boolean;
  readonly listeners: boolean;
  readonly branches: boolean;
  readonly branchOf: boolean;
  readonly schedules: boolean;
  /**
   * Every promise the load names (by a `promise`, `awaiters`, `listeners` or `branchOf` key) is
   * one id: scalar parameters, which the planner probes by key (no list, no sort).
   */
  readonly one: boolean;
  /** Inside a transaction: every promise, task and schedule read is locked `FOR UPDATE`. */
  readonly locked: boolean;
}

// Every branch of the union names its columns (a union takes its names from its first branch,
// which differs from shape to shape): k, id, s, a, b, c, d, n1, n2, n3, n4.
const UNION_NAMES = ["k", "id", "s", "a", "b", "c", "d", "n1", "n2", "n3", "n4"];
const UNION_TYPES = ["text", "text", "smallint", "text", "text", "text", "text", "bigint", "bigint", "bigint", "bigint"];
const unionPart = (from: string, ...columns: string[]) =>
  `SELECT ${columns.map((c, i) => `${c === "NULL" ? `NULL::${UNION_TYPES[i]}` : c} AS ${UNION_NAMES[i]}`).join(", ")} FROM ${from}`;

const LOCKED_PROMISE_COLUMNS = "p.id, p.state, p.param, p.value, p.tags::text AS tags, p.timeout_at, p.created_at, p.settled_at, p.revision";
const PROMISE_PART = ["'p'", "lp.id", "lp.state", "lp.param", "lp.value", "lp.tags", "NULL", "lp.timeout_at", "lp.created_at", "lp.settled_at", "lp.revision"];
const TASK_PART = ["'t'", "lt.id", "lt.state", "lt.pid", "NULL", "NULL", "NULL", "lt.version", "lt.resumes::bigint", "lt.ttl::bigint", "lt.timer_at"];
const BRANCH_PART = ["'b'", "b.id", "b.state", "b.param", "b.value", "b.tags::text", "b.branch", "b.timeout_at", "b.created_at", "b.settled_at", "b.revision"];

/** The schedules of the keys, locked (a schedule is only ever read to be written). */
function schedulesCte(S: string, p: ShapeParams, locked: boolean): string {
  return `sc AS MATERIALIZED (SELECT s.id, s.cron, s.promise_id, s.promise_timeout, s.promise_param, s.promise_tags::text AS promise_tags,
                                    s.created_at, s.next_run_at, s.last_run_at
           FROM ${S}.promise_schedules s WHERE s.id = ANY(${p.list("schedules", "text")})${locked ? " ORDER BY s.id FOR UPDATE" : ""})`;
}
const SCHEDULE_PART = ["'s'", "sc.id", "NULL", "sc.cron", "sc.promise_id", "sc.promise_tags", "sc.promise_param", "sc.promise_timeout", "sc.created_at", "sc.next_run_at", "sc.last_run_at"];

/**
 * The load of one shape. Every promise named by a key (a `promise` key, the promise of an
 * `awaiters` or `listeners` key, each awaiter found) is locked `FOR UPDATE` with its task, in id
 * order (so concurrent loads take their locks in one order); schedules are locked too; a branch
 * reads unlocked. A `branchOf` key reads the branch the promise's tag names, in the same
 * statement (the promise itself is one of its rows).
 *
 * A lock the statement had to wait for hands it the promise's newest version, but the
 * callbacks and listeners it read come from the statement's snapshot, which may predate a
 * callback or listener the lock holder added. Adding one raises the promise's revision (see
 * `promise-write.ts`), so rows `x` (the snapshot's revision differs from the locked row's) say
 * the load must run again — now holding the lock, so the second run is exact.
 */
function loadShape(sql: SqlCache, has: LoadShape): Shaped {
  const key = `promiseLoad:${[has.promises, has.awaiters, has.listeners, has.branches, has.branchOf, has.schedules, has.one, has.locked].map(Number).join("")}`;
  return shaped(sql, key, (S, p) => (has.one ? oneShape(S, p, has) : listShape(S, p, has)));
}

/** One promise (and its awaiters, when asked): its id a scalar, probed by key. */
function oneShape(S: string, p: ShapeParams, has: LoadShape): string {
  const id = p.one("id", "text");
  const ctes: string[] = [];
  const parts: string[] = [];
  let lp: string;
  let lt: string;
  if (has.awaiters) {
    ctes.push(`aw AS MATERIALIZED (SELECT c.awaiter FROM ${S}.callbacks c WHERE c.awaited = ${id})`);
    const named = (column: string) => `(${column} = ${id} OR ${column} = ANY(ARRAY(SELECT aw.awaiter FROM aw)))`;
    lp = `SELECT ${LOCKED_PROMISE_COLUMNS} FROM ${S}.promises p WHERE ${named("p.id")}${has.locked ? " ORDER BY p.id FOR UPDATE" : ""}`;
    lt = `SELECT ${TASK_COLUMNS("t")} FROM ${S}.tasks t WHERE ${named("t.id")}${has.locked ? " ORDER BY t.id FOR UPDATE" : ""}`;
  } else {
    lp = `SELECT ${LOCKED_PROMISE_COLUMNS} FROM ${S}.promises p WHERE p.id = ${id}${has.locked ? " FOR UPDATE" : ""}`;
    lt = `SELECT ${TASK_COLUMNS("t")} FROM ${S}.tasks t WHERE t.id = ${id}${has.locked ? " FOR UPDATE" : ""}`;
  }
  const recheck = has.locked && (has.awaiters || has.listeners);
  if (has.awaiters || recheck) {
    ctes.push(`lp AS MATERIALIZED (${lp})`, `lt AS MATERIALIZED (${lt})`);
    parts.push(unionPart("lp", ...PROMISE_PART), unionPart("lt", ...TASK_PART));
  } else {
    // Read once each: subqueries, which cost less than materialized CTEs.
    parts.push(unionPart(`(${lp}) lp`, ...PROMISE_PART), unionPart(`(${lt}) lt`, ...TASK_PART));
  }
  if (has.awaiters) parts.push(unionPart("aw", "'c'", id, "NULL", "aw.awaiter", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL"));
  if (has.listeners) {
    parts.push(unionPart(`${S}.listeners l WHERE l.promise_id = ${id}`, "'l'", "l.promise_id", "NULL", "l.address", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL"));
  }
  if (recheck) {
    parts.push(
      unionPart(`lp WHERE lp.id = ${id} AND lp.revision <> (SELECT sp.revision FROM ${S}.promises sp WHERE sp.id = ${id})`, "'x'", "lp.id", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL"),
    );
  }
  if (has.branchOf) parts.push(unionPart(`${S}.promises b WHERE b.branch = (SELECT o.branch FROM ${S}.promises o WHERE o.id = ${id})`, ...BRANCH_PART));
  if (has.branches) parts.push(unionPart(`${S}.promises b WHERE b.branch = ANY(${p.list("branches", "text")})`, ...BRANCH_PART));
  if (has.schedules) {
    ctes.push(schedulesCte(S, p, has.locked));
    parts.push(unionPart("sc", ...SCHEDULE_PART));
  }
  return `${ctes.length > 0 ? `WITH ${ctes.join(",\n")}\n` : ""}${parts.join("\nUNION ALL\n")}`;
}

/** Any keys: ids as lists, locked in id order. */
function listShape(S: string, p: ShapeParams, has: LoadShape): string {
  const ctes: string[] = [];
  const parts: string[] = [];
  const named = has.promises || has.awaiters || has.listeners;
  if (has.awaiters) ctes.push(`aw AS MATERIALIZED (SELECT c.awaited, c.awaiter FROM ${S}.callbacks c WHERE c.awaited = ANY(${p.list("awaiters", "text")}))`);
  if (named) {
    const lists = [has.promises && p.list("promises", "text"), has.awaiters && p.list("awaiters", "text"), has.listeners && p.list("listeners", "text")].filter(Boolean).join(" || ");
    ctes.push(
      `ids AS (SELECT DISTINCT u.id FROM (SELECT unnest(${lists}) AS id${has.awaiters ? " UNION ALL SELECT aw.awaiter FROM aw" : ""}) u)`,
      `lp AS MATERIALIZED (SELECT ${LOCKED_PROMISE_COLUMNS}
           FROM ${S}.promises p WHERE p.id = ANY(ARRAY(SELECT ids.id FROM ids))${has.locked ? " ORDER BY p.id FOR UPDATE" : ""})`,
      `lt AS MATERIALIZED (SELECT ${TASK_COLUMNS("t")} FROM ${S}.tasks t WHERE t.id = ANY(ARRAY(SELECT ids.id FROM ids))${has.locked ? " ORDER BY t.id FOR UPDATE" : ""})`,
    );
    parts.push(unionPart("lp", ...PROMISE_PART), unionPart("lt", ...TASK_PART));
  }
  if (has.awaiters) parts.push(unionPart("aw", "'c'", "aw.awaited", "NULL", "aw.awaiter", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL"));
  if (has.listeners) {
    parts.push(
      unionPart(`${S}.listeners l WHERE l.promise_id = ANY(${p.list("listeners", "text")})`, "'l'", "l.promise_id", "NULL", "l.address", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL"),
    );
  }
  if (has.locked && (has.awaiters || has.listeners)) {
    const watched = [has.awaiters && p.list("awaiters", "text"), has.listeners && p.list("listeners", "text")].filter(Boolean).join(" || ");
    parts.push(
      unionPart(`${S}.promises sp JOIN lp ON lp.id = sp.id WHERE sp.id = ANY(${watched}) AND sp.revision <> lp.revision`, "'x'", "sp.id", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL"),
    );
  }
  if (has.branchOf) {
    parts.push(
      unionPart(
        `${S}.promises b WHERE b.branch = ANY(ARRAY(SELECT o.branch FROM ${S}.promises o WHERE o.id = ANY(${p.list("branchOf", "text")}) AND o.branch IS NOT NULL))`,
        ...BRANCH_PART,
      ),
    );
  }
  if (has.branches) parts.push(unionPart(`${S}.promises b WHERE b.branch = ANY(${p.list("branches", "text")})`, ...BRANCH_PART));
  if (has.schedules) {
    ctes.push(schedulesCte(S, p, has.locked));
    parts.push(unionPart("sc", ...SCHEDULE_PART));
  }
  return `${ctes.length > 0 ? `WITH ${ctes.join(",\n")}\n` : ""}${parts.join("\nUNION ALL\n")}`;
}

const LOAD_PROMISE = { id: "id", state: "s", param: "a", value: "b", tags: "c", timeoutAt: "n1", createdAt: "n2", settledAt: "n3" };

/** A promise of the load's union as stored (its JSON as text), with the machine's row decoded from it. */
function storedOf(row: QueryRow, promise: PromiseRow): StoredPromise {
  return {
    id: promise.id, state: promise.state, param: row["a"] as string, value: row["b"] as string, tags: row["c"] as string,
    timeoutAt: promise.timeoutAt, createdAt: promise.createdAt, settledAt: promise.settledAt, revision: row["n4"] as number,
    branch: branchOfTags(promise.tags),
  };
}
const LOAD_TASK = { id: "id", state: "s", version: "n1", resumes: "n2", pid: "a", ttl: "n3", timerAt: "n4" };
const LOAD_SCHEDULE: ScheduleNames = {
  id: "id", cron: "a", promiseId: "b", promiseTags: "c", promiseParam: "d", promiseTimeout: "n1", createdAt: "n2", nextRunAt: "n3", lastRunAt: "n4",
};

/** The most runs of one load: the second holds every lock it needs, so a third never happens. */
const MAX_LOAD_RUNS = 3;

/**
 * See `PromiseTransaction.load`: every key in one statement (run again only after a lock wait
 * that may have hidden new callbacks or listeners). With `locked` false (no transaction) it only
 * reads, and notes in `memo` whether it found a row a locked load would have locked.
 */
export async function loadPromiseRows(session: Session, sql: SqlCache, keys: readonly RowKey[], memo: TransactionMemo, locked = true): Promise<LoadedRows> {
  const { promise: promiseIds, awaiters: awaiterKeys, listeners: listenerKeys, branch: branchKeys, branchOf: branchOfKeys, schedule: scheduleKeys } = keysByKind(keys);
  const named = new Set([...promiseIds, ...awaiterKeys, ...listenerKeys]);
  const one = named.size === 1 && [...branchOfKeys].every((id) => named.has(id));
  const has: LoadShape = {
    promises: promiseIds.size > 0,
    awaiters: awaiterKeys.size > 0,
    listeners: listenerKeys.size > 0,
    branches: branchKeys.size > 0,
    branchOf: branchOfKeys.size > 0,
    schedules: scheduleKeys.size > 0,
    one,
    locked,
  };
  if (named.size === 0 && !has.branches && !has.branchOf && !has.schedules) {
    return { promises: [], awaiters: [], listeners: [], branches: [], schedules: [] };
  }
  const shape = loadShape(sql, has);
  const values = {
    id: [...named],
    promises: [...promiseIds],
    awaiters: [...awaiterKeys],
    listeners: [...listenerKeys],
    branches: [...branchKeys],
    branchOf: [...branchOfKeys],
    schedules: [...scheduleKeys],
  };
  let rows: QueryRow[] = [];
  for (let runs = 1; ; runs++) {
    rows = await runShaped(session, shape, values);
    if (!rows.some((row) => row["k"] === "x")) break;
    if (runs >= MAX_LOAD_RUNS) throw new Error("promise load: callbacks or listeners kept changing under a held lock");
  }
  return decodeLoad(rows, { promiseIds, awaiterKeys, listenerKeys, branchKeys, scheduleKeys }, memo, locked);
}

/** The rows of one load as the contract's `LoadedRows`. */
function decodeLoad(
  rows: readonly QueryRow[],
  keys: { promiseIds: Set<string>; awaiterKeys: Set<string>; listenerKeys: Set<string>; branchKeys: Set<string>; scheduleKeys: Set<string> },
  memo: TransactionMemo,
  locked: boolean,
): LoadedRows {
  const promises = new Map<string, PromiseRow>();
  const tasks = new Map<string, TaskRow>();
  const awaiters = new Map<string, string[]>([...keys.awaiterKeys].map((id) => [id, []]));
  const listeners = new Map<string, string[]>([...keys.listenerKeys].map((id) => [id, []]));
  // By branch, then id: a branch asked for both by name and by a promise's tag is read twice.
  const branches = new Map<string, Map<string, PromiseRow>>([...keys.branchKeys].map((b) => [b, new Map()]));
  const schedules = new Map<string, PromiseScheduleRow | null>([...keys.scheduleKeys].map((id) => [id, null]));
  for (const row of rows) {
    switch (row["k"]) {
      case "p": {
        const promise = decodePromise(row, LOAD_PROMISE);
        promises.set(promise.id, promise);
        memo.loaded.set(promise.id, promise);
        memo.promises.set(promise.id, storedOf(row, promise));
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
      case "b": {
        const branch = row["d"] as string;
        let byId = branches.get(branch);
        if (byId === undefined) branches.set(branch, (byId = new Map()));
        const promise = decodePromise(row, LOAD_PROMISE);
        byId.set(promise.id, promise);
        memo.branchRows.set(promise.id, storedOf(row, promise));
        break;
      }
      case "s":
        schedules.set(row["id"] as string, decodeScheduleAs(row, LOAD_SCHEDULE));
        break;
    }
  }
  if (!locked && (promises.size > 0 || tasks.size > 0 || [...schedules.values()].some((s) => s !== null))) memo.foundLockable = true;
  // Every promise locked (asked for, or the promise of an awaiters/listeners key, or an awaiter) is loaded, found or not.
  const known = new Set([...keys.promiseIds, ...keys.awaiterKeys, ...keys.listenerKeys, ...[...awaiters.values()].flat()]);
  for (const [id, list] of awaiters) memo.awaiterCounts.set(id, list.length);
  for (const [id, list] of listeners) memo.listenerCounts.set(id, list.length);
  for (const id of known) {
    if (!promises.has(id)) memo.promises.set(id, null);
    else memo.tasks.set(id, tasks.get(id) ?? null);
  }
  for (const [branch, byId] of branches) memo.branches.set(branch, [...byId.keys()]);
  const sorted = (list: string[]) => list.sort();
  return {
    promises: [...known].map((id) => ({ id, promise: promises.get(id) ?? null, task: tasks.get(id) ?? null })),
    awaiters: [...awaiters].map(([promiseId, ids]) => ({ promiseId, awaiters: sorted(ids) })),
    listeners: [...listeners].map(([promiseId, addresses]) => ({ promiseId, addresses: sorted(addresses) })),
    branches: [...branches].map(([branch, byId]) => ({ branch, promises: [...byId.values()] })),
    schedules: [...schedules].map(([id, schedule]) => ({ id, schedule })),
  };
}

/** The load statement of a shape (for the plan tests). */
export function loadStatement(sql: SqlCache, has: LoadShape): Shaped {
  return loadShape(sql, has);
}

// ------------------------------------------------------------------------------------------------
// the write

// The write: every effect of an operation in one statement, each kind of effect one
// data-modifying CTE over its rows — one row of scalars, or arrays unnested when there are several.

/** The lists of one write, each with its cardinality in the shape. */
const WRITE_LISTS = [
  "cbOn", "cbOf", "cbAdded", "lsDeleted", "lsAdded", "exDeleted", "ex", "ub", "pi", "pu", "bumped", "ti", "tu", "scDeleted", "si", "su",
  // The guards of a write decided on remembered rows (see `promise-row-cache.ts`): promises, tasks, absent tasks, a branch.
  "gp", "gt", "ga", "gb",
] as const;
type WriteList = (typeof WRITE_LISTS)[number];
type WriteShape = Readonly<Record<WriteList, Cardinality>>;

/**
 * The columns of a row kind the write sends (`name type, …`), as the row source of one part:
 * each column's values are the list `${prefix}_${name}` (see {@link rowLists}).
 */
type WriteRow = (prefix: string) => readonly (readonly [name: string, param: string, type: string])[];
const writeRow = (columns: string): WriteRow => {
  const parsed = columns.split(", ").map((column) => column.split(" ") as [name: string, type: string]);
  return (prefix) => parsed.map(([name, type]) => [name, `${prefix}_${name}`, type] as const);
};
const PROMISE_ROW = writeRow("id text, state smallint, param text, value text, tags text, timeout_at bigint, created_at bigint, settled_at bigint");
/** An inserted promise: its row and its first revision. */
const INSERTED_PROMISE_ROW = writeRow("id text, state smallint, param text, value text, tags text, timeout_at bigint, created_at bigint, settled_at bigint, revision bigint");
const TASK_ROW = writeRow("id text, state smallint, version bigint, resumes int, pid text, ttl int, timer_at bigint");
const SCHEDULE_ROW = writeRow(
  "id text, cron text, promise_id text, promise_timeout bigint, promise_param text, promise_tags text, created_at bigint, next_run_at bigint, last_run_at bigint",
);
const CALLBACK_ROW = [
  ["awaited", "cbAwaited", "text"],
  ["awaiter", "cbAwaiter", "text"],
] as const;
const LISTENER_ROW = [
  ["promise_id", "lsPromise", "text"],
  ["address", "lsAddress", "text"],
] as const;

/**
 * The write of one shape, all in one statement. The CTEs share one snapshot and never touch one
 * row twice (the workspace's effects are disjoint by construction: a task's execute is either
 * written or deleted, a schedule either written or deleted, and a promise's revision is raised
 * either by its update or by the bump). "Deletions, then rows" holds where both name one row: a
 * callback or listener both deleted (by promise) and added survives the delete and is inserted
 * unless present. Updates find their rows by `id = $1` or `id = ANY(ids)`, an index condition
 * whatever the estimates (joined with the row source alone, a generic plan guessing 10 rows
 * would hash-join a scan of the table).
 */
function writeShape(sql: SqlCache, has: WriteShape): Shaped {
  const key = `promiseWrite:${WRITE_LISTS.map((list) => has[list]).join("")}`;
  return shaped(sql, key, (S, p) => writeText(S, p, has));
}

/**
 * The guards of a write decided on remembered rows: CTEs that lock the remembered promises and
 * tasks (in the load's order: promises, then tasks, each by id) where they still match, and the
 * condition under which the statement aborts (BLY02, see promise migration 2). The final SELECT
 * reads them; PostgreSQL runs the data-modifying CTEs, which nothing reads, after it, so the
 * remembered rows are locked first, in the load's order. Correctness does not rest on that order:
 * the abort undoes the whole statement, whatever ran before it.
 */
function guardText(S: string, p: ShapeParams, has: WriteShape): { ctes: string[]; changed: string[] } {
  const ctes: string[] = [];
  const changed: string[] = [];
  const count = (card: Cardinality, list: string) => (card === 1 ? "1" : `cardinality(${p.list(list, "text")})`);
  if (has.gp) {
    const source = rowSource(p, has.gp, [
      ["id", "gp_id", "text"],
      ["revision", "gp_revision", "bigint"],
    ]);
    ctes.push(`guarded_promises AS MATERIALIZED (SELECT p.id FROM ${S}.promises p, ${source}
           WHERE ${among(p, "p.id", has.gp, "gp_id", "text")} AND p.id = u.id AND p.revision = u.revision ORDER BY p.id FOR UPDATE OF p)`);
    changed.push(`(SELECT count(*) FROM guarded_promises) <> ${count(has.gp, "gp_id")}`);
  }
  if (has.gt) {
    ctes.push(`guarded_tasks AS MATERIALIZED (SELECT t.id FROM ${S}.tasks t, ${rowSource(p, has.gt, TASK_ROW("gt"))}
           WHERE ${among(p, "t.id", has.gt, "gt_id", "text")} AND t.id = u.id AND t.state = u.state AND t.version = u.version
             AND t.resumes = u.resumes AND t.pid IS NOT DISTINCT FROM u.pid AND t.ttl IS NOT DISTINCT FROM u.ttl
             AND t.timer_at IS NOT DISTINCT FROM u.timer_at
           ORDER BY t.id FOR UPDATE OF t)`);
    changed.push(`(SELECT count(*) FROM guarded_tasks) <> ${count(has.gt, "gt_id")}`);
  }
  if (has.ga) changed.push(`EXISTS (SELECT 1 FROM ${S}.tasks t WHERE ${among(p, "t.id", has.ga, "ga", "text")})`);
  if (has.gb) {
    const member = `b.id || ':' || b.revision`;
    changed.push(`(SELECT coalesce(array_agg(${member} ORDER BY (${member}) COLLATE "C"), '{}') FROM ${S}.promises b WHERE b.branch = ${p.one("gb", "text")})
           IS DISTINCT FROM ARRAY(SELECT m FROM unnest(${p.one("gbMembers", "text[]")}) m ORDER BY m COLLATE "C")`);
  }
  return { ctes, changed };
}

function writeText(S: string, p: ShapeParams, has: WriteShape): string {
  const guards = guardText(S, p, has);
  const ctes: string[] = [...guards.ctes];
  if (has.cbOn || has.cbOf) {
    const on = [has.cbOn && among(p, "c.awaited", has.cbOn, "cbOn", "text"), has.cbOf && among(p, "c.awaiter", has.cbOf, "cbOf", "text")].filter(Boolean).join(" OR ");
    const keep = has.cbAdded ? ` AND NOT EXISTS (SELECT 1 FROM ${rowSource(p, has.cbAdded, CALLBACK_ROW)} WHERE u.awaited = c.awaited AND u.awaiter = c.awaiter)` : "";
    ctes.push(`callbacks_deleted AS (DELETE FROM ${S}.callbacks c WHERE (${on})${keep})`);
  }
  if (has.cbAdded) {
    ctes.push(`callbacks_added AS (INSERT INTO ${S}.callbacks (awaited, awaiter) SELECT u.awaited, u.awaiter FROM ${rowSource(p, has.cbAdded, CALLBACK_ROW)} ON CONFLICT DO NOTHING)`);
  }
  if (has.lsDeleted) {
    const keep = has.lsAdded ? ` AND NOT EXISTS (SELECT 1 FROM ${rowSource(p, has.lsAdded, LISTENER_ROW)} WHERE u.promise_id = l.promise_id AND u.address = l.address)` : "";
    ctes.push(`listeners_deleted AS (DELETE FROM ${S}.listeners l WHERE ${among(p, "l.promise_id", has.lsDeleted, "lsDeleted", "text")}${keep})`);
  }
  if (has.lsAdded) {
    ctes.push(`listeners_added AS (INSERT INTO ${S}.listeners (promise_id, address) SELECT u.promise_id, u.address FROM ${rowSource(p, has.lsAdded, LISTENER_ROW)} ON CONFLICT DO NOTHING)`);
  }
  if (has.exDeleted) {
    ctes.push(`executes_deleted AS (DELETE FROM ${S}.outbox o WHERE ${among(p, "o.id", has.exDeleted, "exDeleted", "text")} AND o.kind = ${OUTBOX_KIND_CODES.execute})`);
  }
  const revision = `nextval('${S}.outbox_revision')`;
  if (has.ex) {
    const source = rowSource(p, has.ex, [
      ["id", "exId", "text"],
      ["address", "exAddress", "text"],
      ["version", "exVersion", "bigint"],
      ["available_at", "exAt", "bigint"],
    ]);
    ctes.push(
      `executes AS (INSERT INTO ${S}.outbox (kind, id, address, version, available_at, revision, created_at)
           SELECT ${OUTBOX_KIND_CODES.execute}, u.id, u.address, u.version, u.available_at, ${revision}, u.available_at FROM ${source}
           ON CONFLICT (id, kind, address_key) DO UPDATE SET version = EXCLUDED.version, available_at = EXCLUDED.available_at,
             revision = EXCLUDED.revision, created_at = EXCLUDED.created_at, takes = 0)`,
    );
  }
  if (has.ub) {
    const source = rowSource(p, has.ub, [
      ["id", "ubId", "text"],
      ["address", "ubAddress", "text"],
      ["available_at", "ubAt", "bigint"],
    ]);
    ctes.push(
      `unblocks AS (INSERT INTO ${S}.outbox (kind, id, address, version, available_at, revision, created_at)
           SELECT ${OUTBOX_KIND_CODES.unblock}, u.id, u.address, 0, u.available_at, ${revision}, u.available_at FROM ${source}
           ON CONFLICT DO NOTHING)`,
    );
  }
  if (has.pi) {
    // A plain insert: a concurrent creator of the same id makes it fail (23505), and the operation runs again.
    ctes.push(
      `promises_inserted AS (INSERT INTO ${S}.promises (id, state, param, value, tags, timeout_at, created_at, settled_at, revision)
           SELECT u.id, u.state, u.param, u.value, u.tags::jsonb, u.timeout_at, u.created_at, u.settled_at, u.revision
           FROM ${rowSource(p, has.pi, INSERTED_PROMISE_ROW("pi"))})`,
    );
  }
  if (has.pu) {
    // A null param or tags is "as loaded": a settle does not send (or rewrite) a large param again.
    ctes.push(
      `promises_updated AS (UPDATE ${S}.promises p SET state = u.state, param = coalesce(u.param, p.param), value = u.value,
             tags = coalesce(u.tags::jsonb, p.tags), timeout_at = u.timeout_at, created_at = u.created_at, settled_at = u.settled_at,
             revision = p.revision + 1
           FROM ${rowSource(p, has.pu, PROMISE_ROW("pu"))} WHERE ${among(p, "p.id", has.pu, "pu_id", "text")} AND p.id = u.id)`,
    );
  }
  if (has.bumped) ctes.push(`promises_bumped AS (UPDATE ${S}.promises p SET revision = p.revision + 1 WHERE ${among(p, "p.id", has.bumped, "bumped", "text")})`);
  if (has.ti) {
    ctes.push(
      `tasks_inserted AS (INSERT INTO ${S}.tasks (id, state, version, resumes, pid, ttl, timer_at)
           SELECT u.id, u.state, u.version, u.resumes, u.pid, u.ttl, u.timer_at FROM ${rowSource(p, has.ti, TASK_ROW("ti"))})`,
    );
  }
  if (has.tu) {
    ctes.push(
      `tasks_updated AS (UPDATE ${S}.tasks t SET state = u.state, version = u.version, resumes = u.resumes, pid = u.pid, ttl = u.ttl, timer_at = u.timer_at
           FROM ${rowSource(p, has.tu, TASK_ROW("tu"))} WHERE ${among(p, "t.id", has.tu, "tu_id", "text")} AND t.id = u.id)`,
    );
  }
  if (has.scDeleted) ctes.push(`schedules_deleted AS (DELETE FROM ${S}.promise_schedules s WHERE ${among(p, "s.id", has.scDeleted, "scDeleted", "text")})`);
  if (has.si) {
    ctes.push(
      `schedules_inserted AS (INSERT INTO ${S}.promise_schedules (id, cron, promise_id, promise_timeout, promise_param, promise_tags, created_at, next_run_at, last_run_at)
           SELECT u.id, u.cron, u.promise_id, u.promise_timeout, u.promise_param, u.promise_tags::jsonb, u.created_at, u.next_run_at, u.last_run_at
           FROM ${rowSource(p, has.si, SCHEDULE_ROW("si"))})`,
    );
  }
  if (has.su) {
    ctes.push(
      `schedules_updated AS (UPDATE ${S}.promise_schedules s SET cron = u.cron, promise_id = u.promise_id, promise_timeout = u.promise_timeout,
             promise_param = u.promise_param, promise_tags = u.promise_tags::jsonb, created_at = u.created_at, next_run_at = u.next_run_at,
             last_run_at = u.last_run_at
           FROM ${rowSource(p, has.su, SCHEDULE_ROW("su"))} WHERE ${among(p, "s.id", has.su, "su_id", "text")} AND s.id = u.id)`,
    );
  }
  const written = guards.changed.length === 0 ? "1" : `${S}.promise_rows_changed(${guards.changed.join("\n  OR ")})`;
  return `${ctes.length > 0 ? `WITH ${ctes.join(",\n")}\n` : ""}SELECT ${written} AS written`;
}

type Lists = Record<string, readonly unknown[]>;

/**
 * The lists of one part of `row`'s kind: `values[i]` holds row i's values, in the order of the
 * kind's columns. A part with no rows is left out of the shape, so its lists are never read.
 */
function rowLists(row: WriteRow, prefix: string, values: readonly (readonly unknown[])[], out: Lists): void {
  if (values.length === 0) return;
  row(prefix).forEach(([, list], i) => (out[list] = values.map((v) => v[i])));
}

// A row's values in its kind's column order. A promise's param or tags that are the very objects
// loaded go as null ("as loaded"): a settle does not send them again.
const promiseValues = (r: PromiseRow, loaded: PromiseRow | undefined): unknown[] => [
  r.id, PROMISE_STATE_CODES[r.state], loaded?.param === r.param ? null : JSON.stringify(r.param), JSON.stringify(r.value),
  loaded?.tags === r.tags ? null : JSON.stringify(r.tags), r.timeoutAt, r.createdAt, r.settledAt,
];
const taskValues = (r: TaskRow): unknown[] => [r.id, TASK_STATE_CODES[r.state], r.version, r.resumes, r.pid, r.ttl, r.timerAt];
const scheduleValues = (r: PromiseScheduleRow): unknown[] => [
  r.id, r.cron, r.promiseId, r.promiseTimeout, JSON.stringify(r.promiseParam), JSON.stringify(r.promiseTags), r.createdAt, r.nextRunAt, r.lastRunAt,
];

/**
 * The ids of the rows a write locks or changes (promises, tasks, schedules, and the callbacks,
 * listeners and outbox entries keyed by them), and the branches it writes into or its guard
 * reads: what the commit group keeps apart (see `commit-group.ts`). Ids of different kinds share
 * one namespace; a clash only delays a statement to a later transaction.
 */
function rowIds(effects: PromiseEffects, guards: RowGuards | null, bumped: readonly string[]): string[] {
  const ids = [
    ...effects.promises.map((w) => w.row.id),
    ...effects.tasks.map((w) => w.row.id),
    ...effects.schedules.map((w) => w.row.id),
    ...effects.schedulesDeleted,
    ...effects.callbacksOnDeleted,
    ...effects.callbacksOfDeleted,
    ...effects.callbacksAdded.flatMap((c) => [c.awaited, c.awaiter]),
    ...effects.listenersDeleted,
    ...effects.listenersAdded.map((l) => l.promiseId),
    ...effects.executesDeleted,
    ...effects.outbox.map((m) => m.id),
    ...bumped,
  ];
  // A promise written joins (or stays in) its branch, which another statement's guard may read.
  for (const w of effects.promises) {
    const branch = branchOfTags(w.row.tags);
    if (branch !== null) ids.push(`branch:${branch}`);
  }
  if (guards !== null) {
    for (const g of guards.promises) ids.push(g.id);
    for (const t of guards.tasks) ids.push(t.id);
    ids.push(...guards.absentTasks);
    if (guards.branch !== null) ids.push(`branch:${guards.branch.name}`);
  }
  return [...new Set(ids)];
}

/**
 * See `PromiseTransaction.apply`: every effect in one statement. A promise that gains a callback
 * or a listener without being written has its revision raised (the "bump"), which tells a
 * concurrent load that waited for its lock to read its callbacks and listeners again; so does
 * the awaiter of a new callback whose task the write leaves alone (see `raisedRevisions`: what a
 * store remembers of that awaiter is then out of date). The statement goes out through
 * `session.write` when the session has it (with the COMMIT, in one round trip: its failure then
 * surfaces at commit); decided on remembered rows, through `session.finish`.
 */
export async function applyPromiseEffects(session: PromiseSession, sql: SqlCache, effects: PromiseEffects, memo: TransactionMemo): Promise<void> {
  const guards: RowGuards | null = memo.guards;
  // Deletions of sets the locked load found empty delete nothing (what this operation adds is in the added lists).
  const callbacksOnDeleted = effects.callbacksOnDeleted.filter((id) => memo.awaiterCounts.get(id) !== 0);
  const listenersDeleted = effects.listenersDeleted.filter((id) => memo.listenerCounts.get(id) !== 0);
  const inserted = effects.promises.filter((w) => w.insert).map((w) => w.row);
  const updated = effects.promises.filter((w) => !w.insert).map((w) => w.row);
  const bumped = raisedRevisions(effects);
  const executes = effects.outbox.filter((m) => m.kind === "execute");
  const unblocks = effects.outbox.filter((m) => m.kind === "unblock");
  const tasksInserted = effects.tasks.filter((w) => w.insert).map((w) => w.row);
  const tasksUpdated = effects.tasks.filter((w) => !w.insert).map((w) => w.row);
  const schedulesInserted = effects.schedules.filter((w) => w.insert).map((w) => w.row);
  const schedulesUpdated = effects.schedules.filter((w) => !w.insert).map((w) => w.row);
  const has: WriteShape = {
    cbOn: cardinality(callbacksOnDeleted.length),
    cbOf: cardinality(effects.callbacksOfDeleted.length),
    cbAdded: cardinality(effects.callbacksAdded.length),
    lsDeleted: cardinality(listenersDeleted.length),
    lsAdded: cardinality(effects.listenersAdded.length),
    exDeleted: cardinality(effects.executesDeleted.length),
    ex: cardinality(executes.length),
    ub: cardinality(unblocks.length),
    pi: cardinality(inserted.length),
    pu: cardinality(updated.length),
    bumped: cardinality(bumped.length),
    ti: cardinality(tasksInserted.length),
    tu: cardinality(tasksUpdated.length),
    scDeleted: cardinality(effects.schedulesDeleted.length),
    si: cardinality(schedulesInserted.length),
    su: cardinality(schedulesUpdated.length),
    gp: cardinality(guards?.promises.length ?? 0),
    gt: cardinality(guards?.tasks.length ?? 0),
    ga: cardinality(guards?.absentTasks.length ?? 0),
    gb: guards?.branch != null ? 1 : 0,
  };
  if (!WRITE_LISTS.some((list) => has[list] > 0)) return;
  const values: Lists = {
    cbOn: callbacksOnDeleted,
    cbOf: effects.callbacksOfDeleted,
    cbAwaited: effects.callbacksAdded.map((c) => c.awaited),
    cbAwaiter: effects.callbacksAdded.map((c) => c.awaiter),
    lsDeleted: listenersDeleted,
    lsPromise: effects.listenersAdded.map((l) => l.promiseId),
    lsAddress: effects.listenersAdded.map((l) => l.address),
    exDeleted: effects.executesDeleted,
    exId: executes.map((m) => m.id),
    exAddress: executes.map((m) => m.address),
    exVersion: executes.map((m) => (m.kind === "execute" ? m.version : 0)),
    exAt: executes.map((m) => m.availableAt),
    ubId: unblocks.map((m) => m.id),
    ubAddress: unblocks.map((m) => m.address),
    ubAt: unblocks.map((m) => m.availableAt),
    bumped,
    scDeleted: effects.schedulesDeleted,
    gp_id: guards?.promises.map((g) => g.id) ?? [],
    gp_revision: guards?.promises.map((g) => g.revision) ?? [],
    ga: guards?.absentTasks ?? [],
    gb: [guards?.branch?.name ?? null],
    gbMembers: [guards?.branch?.members ?? null],
  };
  const sent: WrittenPromises = {
    inserted: inserted.map((r) => [...promiseValues(r, undefined), firstRevision()]),
    updated: updated.map((r) => promiseValues(r, memo.loaded.get(r.id))),
  };
  rowLists(INSERTED_PROMISE_ROW, "pi", sent.inserted, values);
  rowLists(PROMISE_ROW, "pu", sent.updated, values);
  rowLists(TASK_ROW, "gt", (guards?.tasks ?? []).map(taskValues), values);
  rowLists(TASK_ROW, "ti", tasksInserted.map(taskValues), values);
  rowLists(TASK_ROW, "tu", tasksUpdated.map(taskValues), values);
  rowLists(SCHEDULE_ROW, "si", schedulesInserted.map(scheduleValues), values);
  rowLists(SCHEDULE_ROW, "su", schedulesUpdated.map(scheduleValues), values);
  const shape = writeShape(sql, has);
  const args = shapeValues(shape, values);
  memo.written = sent;
  // Decided on remembered rows, or outside a transaction: a statement that stands on its own (the
  // one statement of the operation when nothing went out before it).
  if (guards !== null || !session.transactional) await session.finish(shape.statement, args, rowIds(effects, guards, bumped));
  else if (session.write !== undefined) await session.write(shape.statement, args);
  else await session.query(shape.statement, args);
}
