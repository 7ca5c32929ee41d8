import { createHash } from "node:crypto";
import {
  type LoadedRows, PROMISE_STATES, PROMISE_TAGS, type PromiseEffects, type PromiseRow, type PromiseScheduleRow,
  type PromiseState, type QueryRow, type RowKey, TASK_STATES, type TaskRow, type TaskState, keysByKind,
} from "@belay/contract";
import { fromHex, hex, textOfKey, toInt, toIntOrNull } from "../keys.js";
import type { Session } from "../session.js";
import { statement } from "../statements.js";

// The rows of the promise surface: one batch loads (and locks) every row of an operation's keys,
// one batch writes every effect. Nothing here decides anything: the contract's machine does, on
// the rows loaded here.

/** Promise states as stored (never renumbered: the filtered index of pending promises names 0). */
export const PROMISE_STATE_CODES: Readonly<Record<PromiseState, number>> = Object.freeze({ pending: 0, resolved: 1, rejected: 2, rejected_canceled: 3, rejected_timedout: 4 });
export const TASK_STATE_CODES: Readonly<Record<TaskState, number>> = Object.freeze({ pending: 0, acquired: 1, suspended: 2, halted: 3, fulfilled: 4 });
export const OUTBOX_KIND_CODES = Object.freeze({ execute: 0, unblock: 1 });

const PROMISE_STATE_OF = PROMISE_STATES.reduce<PromiseState[]>((out, s) => ((out[PROMISE_STATE_CODES[s]] = s), out), []);
const TASK_STATE_OF = TASK_STATES.reduce<TaskState[]>((out, s) => ((out[TASK_STATE_CODES[s]] = s), out), []);
export const promiseStateOf = (code: unknown): PromiseState => PROMISE_STATE_OF[toInt(code)]!;
export const taskStateOf = (code: unknown): TaskState => TASK_STATE_OF[toInt(code)]!;

/** Promise ids and other promise keys: at most 1,024 UTF-8 bytes (the contract's `idLength` default). */
export const PROMISE_ID_BYTES = 1024;
export const PID = `varbinary(${PROMISE_ID_BYTES})`;
export const PID_HEX = `varchar(${PROMISE_ID_BYTES * 2})`;
export const pidOf = (expression: string) => fromHex(expression, PROMISE_ID_BYTES);

/** The SHA-256 of a text's UTF-8 bytes, as hex: the short key of a long address or awaiter. */
export function sha256Hex(text: string): string {
  return createHash("sha256").update(text, "utf8").digest("hex");
}

/** An outbox message's address key: none (zeros) for an `execute`, the address's SHA-256 for an `unblock`. */
export function outboxAddressKey(kind: "execute" | "unblock", address: string): string {
  return kind === "execute" ? "0".repeat(64) : sha256Hex(address);
}

export const PROMISE_COLUMNS = (p: string) => `${p}.id, ${p}.state, ${p}.param, ${p}.value, ${p}.tags, ${p}.timeout_at, ${p}.created_at, ${p}.settled_at`;
export const TASK_COLUMNS = (t: string) => `${t}.id, ${t}.state, ${t}.version, ${t}.resumes, ${t}.pid, ${t}.ttl, ${t}.timer_at`;
export const SCHEDULE_COLUMNS = (s: string) =>
  `${s}.id, ${s}.cron, ${s}.promise_id, ${s}.promise_timeout, ${s}.promise_param, ${s}.promise_tags, ${s}.created_at, ${s}.next_run_at, ${s}.last_run_at`;

const json = (text: unknown) => JSON.parse(text as string) as never;

/** A promise row from {@link PROMISE_COLUMNS} (optionally under a prefix, e.g. `p_`). */
export function decodePromise(row: QueryRow, prefix = ""): PromiseRow {
  return {
    id: textOfKey(row[`${prefix}id`]),
    state: promiseStateOf(row[`${prefix}state`]),
    param: json(row[`${prefix}param`]),
    value: json(row[`${prefix}value`]),
    tags: json(row[`${prefix}tags`]),
    timeoutAt: toInt(row[`${prefix}timeout_at`]),
    createdAt: toInt(row[`${prefix}created_at`]),
    settledAt: toIntOrNull(row[`${prefix}settled_at`]),
  };
}

export function decodeTask(row: QueryRow): TaskRow {
  return {
    id: textOfKey(row["id"]),
    state: taskStateOf(row["state"]),
    version: toInt(row["version"]),
    resumes: toInt(row["resumes"]),
    pid: (row["pid"] as string | null) ?? null,
    ttl: toIntOrNull(row["ttl"]),
    timerAt: toIntOrNull(row["timer_at"]),
  };
}

export function decodeSchedule(row: QueryRow): PromiseScheduleRow {
  return {
    id: textOfKey(row["id"]),
    cron: row["cron"] as string,
    promiseId: row["promise_id"] as string,
    promiseTimeout: toInt(row["promise_timeout"]),
    promiseParam: json(row["promise_param"]),
    promiseTags: json(row["promise_tags"]),
    createdAt: toInt(row["created_at"]),
    nextRunAt: toInt(row["next_run_at"]),
    lastRunAt: toIntOrNull(row["last_run_at"]),
  };
}

/**
 * The load of an operation, one batch. The named promises (of `promise`, `awaiters` and
 * `listeners` keys) are locked first (update locks held to commit); the callbacks and listeners
 * on them are read by later statements, each reading as of its own start — after those locks
 * were granted, so nothing added by an earlier lock holder is missed, and nobody can add one
 * before this transaction ends. Each awaiter found is locked with its task next; branches read
 * unlocked (they only feed preloads); schedules are locked. Six result sets: promises, tasks,
 * callbacks, listeners, branch members, schedules.
 */
export const LOAD = statement(
  "promiseLoad",
  { named: "nvarchar(max)", awaiters: "nvarchar(max)", listeners: "nvarchar(max)", branches: "nvarchar(max)", schedules: "nvarchar(max)" },
  (S) => `DECLARE @ids TABLE (id ${PID} NOT NULL PRIMARY KEY);
INSERT INTO @ids (id) SELECT DISTINCT ${pidOf("x.value")} FROM OPENJSON(@named) AS x;
DECLARE @locked TABLE (id ${PID} NOT NULL PRIMARY KEY);
INSERT INTO @locked (id) SELECT p.id FROM ${S}.promises AS p WITH (UPDLOCK, ROWLOCK) INNER JOIN @ids AS i ON i.id = p.id;
DECLARE @aw TABLE (awaited ${PID} NOT NULL, awaiter ${PID} NOT NULL);
INSERT INTO @aw (awaited, awaiter) SELECT c.awaited, c.awaiter FROM ${S}.callbacks AS c WHERE c.awaited IN (SELECT ${pidOf("x.value")} FROM OPENJSON(@awaiters) AS x);
INSERT INTO @ids (id) SELECT DISTINCT a.awaiter FROM @aw AS a WHERE NOT EXISTS (SELECT 1 FROM @ids AS i WHERE i.id = a.awaiter);
SELECT ${PROMISE_COLUMNS("p")} FROM ${S}.promises AS p WITH (UPDLOCK, ROWLOCK) INNER JOIN @ids AS i ON i.id = p.id;
SELECT ${TASK_COLUMNS("t")} FROM ${S}.tasks AS t WITH (UPDLOCK, ROWLOCK) INNER JOIN @ids AS i ON i.id = t.id;
SELECT a.awaited, a.awaiter FROM @aw AS a;
SELECT l.promise_id, l.address FROM ${S}.listeners AS l WHERE l.promise_id IN (SELECT ${pidOf("x.value")} FROM OPENJSON(@listeners) AS x);
SELECT ${PROMISE_COLUMNS("b")} FROM ${S}.promises AS b WHERE b.branch_key IN (SELECT CONVERT(binary(32), x.value, 2) FROM OPENJSON(@branches) AS x);
SELECT ${SCHEDULE_COLUMNS("s")} FROM ${S}.promise_schedules AS s WITH (UPDLOCK, ROWLOCK) WHERE s.id IN (SELECT ${pidOf("x.value")} FROM OPENJSON(@schedules) AS x)`,
);

/** See `PromiseTransaction.load`. */
export async function loadPromiseRows(session: Session, keys: readonly RowKey[]): Promise<LoadedRows> {
  const { promise: promiseIds, awaiters: awaiterKeys, listeners: listenerKeys, branch: branchKeys } = keysByKind(keys);
  // A `branchOf` key is looked up as a schedule id, as this load always has: it answers no branch for one.
  const scheduleKeys = new Set(keys.flatMap((k) => (k.kind === "schedule" || k.kind === "branchOf" ? [k.id] : [])));
  const named = [...new Set([...promiseIds, ...awaiterKeys, ...listenerKeys])];
  const sets = await session.query(LOAD, {
    named: JSON.stringify(named.map(hex)),
    awaiters: JSON.stringify([...awaiterKeys].map(hex)),
    listeners: JSON.stringify([...listenerKeys].map(hex)),
    branches: JSON.stringify([...branchKeys].map(sha256Hex)),
    schedules: JSON.stringify([...scheduleKeys].map(hex)),
  });
  const [promiseRows = [], taskRows = [], callbackRows = [], listenerRows = [], branchRows = [], scheduleRows = []] = sets;
  const promises = new Map(promiseRows.map((r) => [textOfKey(r["id"]), decodePromise(r)]));
  const tasks = new Map(taskRows.map((r) => [textOfKey(r["id"]), decodeTask(r)]));
  const awaiters = new Map<string, string[]>([...awaiterKeys].map((id) => [id, []]));
  for (const r of callbackRows) awaiters.get(textOfKey(r["awaited"]))?.push(textOfKey(r["awaiter"]));
  const listeners = new Map<string, string[]>([...listenerKeys].map((id) => [id, []]));
  for (const r of listenerRows) listeners.get(textOfKey(r["promise_id"]))?.push(r["address"] as string);
  const branches = new Map<string, PromiseRow[]>([...branchKeys].map((b) => [b, []]));
  for (const r of branchRows) {
    const row = decodePromise(r);
    // The index holds the branch's hash: the tag itself decides.
    const branch = row.tags[PROMISE_TAGS.branch];
    if (branch !== undefined) branches.get(branch)?.push(row);
  }
  const schedules = new Map<string, PromiseScheduleRow | null>([...scheduleKeys].map((id) => [id, null]));
  for (const r of scheduleRows) schedules.set(textOfKey(r["id"]), decodeSchedule(r));
  const everyId = new Set([...promiseIds, ...[...awaiters.values()].flat()]);
  const sorted = (list: readonly string[]) => [...list].sort();
  return {
    promises: [...everyId].map((id) => ({ id, promise: promises.get(id) ?? null, task: tasks.get(id) ?? null })),
    awaiters: [...awaiters].map(([promiseId, ids]) => ({ promiseId, awaiters: sorted(ids) })),
    listeners: [...listeners].map(([promiseId, addresses]) => ({ promiseId, addresses: sorted(addresses) })),
    branches: [...branches].map(([branch, rows]) => ({ branch, promises: rows })),
    schedules: [...schedules].map(([id, schedule]) => ({ id, schedule })),
  };
}

/**
 * The writes of one operation, one batch, in the contract's order: deletions, then rows. A
 * callback or listener both deleted (by promise) and added survives the delete and is inserted
 * unless present. A plain insert of a promise, task or schedule fails on its unique index when a
 * concurrent creator won: the backend runs the operation again.
 */
export const APPLY = statement(
  "promiseApply",
  {
    cbOn: "nvarchar(max)",
    cbOf: "nvarchar(max)",
    cbAdded: "nvarchar(max)",
    lsDeleted: "nvarchar(max)",
    lsAdded: "nvarchar(max)",
    exDeleted: "nvarchar(max)",
    executes: "nvarchar(max)",
    unblocks: "nvarchar(max)",
    promisesInserted: "nvarchar(max)",
    promisesUpdated: "nvarchar(max)",
    tasksInserted: "nvarchar(max)",
    tasksUpdated: "nvarchar(max)",
    scDeleted: "nvarchar(max)",
    schedulesInserted: "nvarchar(max)",
    schedulesUpdated: "nvarchar(max)",
  },
  (S) => `DELETE c FROM ${S}.callbacks AS c
WHERE (c.awaited IN (SELECT ${pidOf("x.value")} FROM OPENJSON(@cbOn) AS x) OR c.awaiter IN (SELECT ${pidOf("x.value")} FROM OPENJSON(@cbOf) AS x))
  AND NOT EXISTS (SELECT 1 FROM OPENJSON(@cbAdded) WITH (awaited ${PID_HEX} '$[0]', awaiter ${PID_HEX} '$[1]') AS a
                  WHERE ${pidOf("a.awaited")} = c.awaited AND ${pidOf("a.awaiter")} = c.awaiter);
INSERT INTO ${S}.callbacks (awaited, awaiter, awaiter_key)
SELECT ${pidOf("a.awaited")}, ${pidOf("a.awaiter")}, CONVERT(binary(32), a.awaiter_key, 2)
FROM OPENJSON(@cbAdded) WITH (awaited ${PID_HEX} '$[0]', awaiter ${PID_HEX} '$[1]', awaiter_key varchar(64) '$[2]') AS a
WHERE NOT EXISTS (SELECT 1 FROM ${S}.callbacks AS c WHERE c.awaited = ${pidOf("a.awaited")} AND c.awaiter_key = CONVERT(binary(32), a.awaiter_key, 2));
DELETE l FROM ${S}.listeners AS l
WHERE l.promise_id IN (SELECT ${pidOf("x.value")} FROM OPENJSON(@lsDeleted) AS x)
  AND NOT EXISTS (SELECT 1 FROM OPENJSON(@lsAdded) WITH (promise_id ${PID_HEX} '$[0]', address_key varchar(64) '$[2]') AS a
                  WHERE ${pidOf("a.promise_id")} = l.promise_id AND CONVERT(binary(32), a.address_key, 2) = l.address_key);
INSERT INTO ${S}.listeners (promise_id, address, address_key)
SELECT ${pidOf("a.promise_id")}, a.address, CONVERT(binary(32), a.address_key, 2)
FROM OPENJSON(@lsAdded) WITH (promise_id ${PID_HEX} '$[0]', address nvarchar(max) '$[1]', address_key varchar(64) '$[2]') AS a
WHERE NOT EXISTS (SELECT 1 FROM ${S}.listeners AS l WHERE l.promise_id = ${pidOf("a.promise_id")} AND l.address_key = CONVERT(binary(32), a.address_key, 2));
DELETE o FROM ${S}.outbox AS o WHERE o.kind = ${OUTBOX_KIND_CODES.execute} AND o.id IN (SELECT ${pidOf("x.value")} FROM OPENJSON(@exDeleted) AS x);
UPDATE o SET address = e.address, address_bytes = CONVERT(varbinary(8000), e.address_bytes, 2), version = e.version, available_at = e.available_at,
  created_at = e.available_at, takes = 0
FROM ${S}.outbox AS o
INNER JOIN OPENJSON(@executes) WITH (id ${PID_HEX} '$[0]', address nvarchar(max) '$[1]', address_bytes varchar(max) '$[2]', version bigint '$[3]', available_at bigint '$[4]') AS e
  ON o.id = ${pidOf("e.id")} AND o.kind = ${OUTBOX_KIND_CODES.execute} AND o.address_key = 0x${"00".repeat(32)};
INSERT INTO ${S}.outbox (kind, id, address, address_bytes, address_key, version, available_at, created_at, takes)
SELECT ${OUTBOX_KIND_CODES.execute}, ${pidOf("e.id")}, e.address, CONVERT(varbinary(8000), e.address_bytes, 2), 0x${"00".repeat(32)}, e.version, e.available_at, e.available_at, 0
FROM OPENJSON(@executes) WITH (id ${PID_HEX} '$[0]', address nvarchar(max) '$[1]', address_bytes varchar(max) '$[2]', version bigint '$[3]', available_at bigint '$[4]') AS e
WHERE NOT EXISTS (SELECT 1 FROM ${S}.outbox AS o WHERE o.id = ${pidOf("e.id")} AND o.kind = ${OUTBOX_KIND_CODES.execute} AND o.address_key = 0x${"00".repeat(32)});
INSERT INTO ${S}.outbox (kind, id, address, address_bytes, address_key, version, available_at, created_at, takes)
SELECT ${OUTBOX_KIND_CODES.unblock}, ${pidOf("u.id")}, u.address, CONVERT(varbinary(8000), u.address_bytes, 2), CONVERT(binary(32), u.address_key, 2), 0, u.available_at, u.available_at, 0
FROM OPENJSON(@unblocks) WITH (id ${PID_HEX} '$[0]', address nvarchar(max) '$[1]', address_bytes varchar(max) '$[2]', address_key varchar(64) '$[3]', available_at bigint '$[4]') AS u
WHERE NOT EXISTS (SELECT 1 FROM ${S}.outbox AS o WHERE o.id = ${pidOf("u.id")} AND o.kind = ${OUTBOX_KIND_CODES.unblock} AND o.address_key = CONVERT(binary(32), u.address_key, 2));
INSERT INTO ${S}.promises (id, state, param, value, tags, branch_key, timeout_at, created_at, settled_at)
SELECT ${pidOf("p.id")}, p.state, p.param, p.value, p.tags, CONVERT(binary(32), p.branch_key, 2), p.timeout_at, p.created_at, p.settled_at
FROM OPENJSON(@promisesInserted) WITH (id ${PID_HEX} '$[0]', state tinyint '$[1]', param nvarchar(max) '$[2]', value nvarchar(max) '$[3]', tags nvarchar(max) '$[4]',
  branch_key varchar(64) '$[5]', timeout_at bigint '$[6]', created_at bigint '$[7]', settled_at bigint '$[8]') AS p;
UPDATE p SET state = u.state, param = u.param, value = u.value, tags = u.tags, branch_key = CONVERT(binary(32), u.branch_key, 2), timeout_at = u.timeout_at,
  created_at = u.created_at, settled_at = u.settled_at
FROM ${S}.promises AS p
INNER JOIN OPENJSON(@promisesUpdated) WITH (id ${PID_HEX} '$[0]', state tinyint '$[1]', param nvarchar(max) '$[2]', value nvarchar(max) '$[3]', tags nvarchar(max) '$[4]',
  branch_key varchar(64) '$[5]', timeout_at bigint '$[6]', created_at bigint '$[7]', settled_at bigint '$[8]') AS u ON p.id = ${pidOf("u.id")};
INSERT INTO ${S}.tasks (id, state, version, resumes, pid, ttl, timer_at)
SELECT ${pidOf("t.id")}, t.state, t.version, t.resumes, t.pid, t.ttl, t.timer_at
FROM OPENJSON(@tasksInserted) WITH (id ${PID_HEX} '$[0]', state tinyint '$[1]', version bigint '$[2]', resumes int '$[3]', pid nvarchar(max) '$[4]', ttl int '$[5]', timer_at bigint '$[6]') AS t;
UPDATE t SET state = u.state, version = u.version, resumes = u.resumes, pid = u.pid, ttl = u.ttl, timer_at = u.timer_at
FROM ${S}.tasks AS t
INNER JOIN OPENJSON(@tasksUpdated) WITH (id ${PID_HEX} '$[0]', state tinyint '$[1]', version bigint '$[2]', resumes int '$[3]', pid nvarchar(max) '$[4]', ttl int '$[5]', timer_at bigint '$[6]') AS u
  ON t.id = ${pidOf("u.id")};
DELETE s FROM ${S}.promise_schedules AS s WHERE s.id IN (SELECT ${pidOf("x.value")} FROM OPENJSON(@scDeleted) AS x);
INSERT INTO ${S}.promise_schedules (id, cron, promise_id, promise_timeout, promise_param, promise_tags, created_at, next_run_at, last_run_at)
SELECT ${pidOf("s.id")}, s.cron, s.promise_id, s.promise_timeout, s.promise_param, s.promise_tags, s.created_at, s.next_run_at, s.last_run_at
FROM OPENJSON(@schedulesInserted) WITH (id ${PID_HEX} '$[0]', cron nvarchar(max) '$[1]', promise_id nvarchar(max) '$[2]', promise_timeout bigint '$[3]',
  promise_param nvarchar(max) '$[4]', promise_tags nvarchar(max) '$[5]', created_at bigint '$[6]', next_run_at bigint '$[7]', last_run_at bigint '$[8]') AS s;
UPDATE s SET cron = u.cron, promise_id = u.promise_id, promise_timeout = u.promise_timeout, promise_param = u.promise_param, promise_tags = u.promise_tags,
  created_at = u.created_at, next_run_at = u.next_run_at, last_run_at = u.last_run_at
FROM ${S}.promise_schedules AS s
INNER JOIN OPENJSON(@schedulesUpdated) WITH (id ${PID_HEX} '$[0]', cron nvarchar(max) '$[1]', promise_id nvarchar(max) '$[2]', promise_timeout bigint '$[3]',
  promise_param nvarchar(max) '$[4]', promise_tags nvarchar(max) '$[5]', created_at bigint '$[6]', next_run_at bigint '$[7]', last_run_at bigint '$[8]') AS u
  ON s.id = ${pidOf("u.id")}`,
);

const promiseTuple = (r: PromiseRow) => {
  const branch = r.tags[PROMISE_TAGS.branch];
  return [hex(r.id), PROMISE_STATE_CODES[r.state], JSON.stringify(r.param), JSON.stringify(r.value), JSON.stringify(r.tags), branch === undefined ? null : sha256Hex(branch), r.timeoutAt, r.createdAt, r.settledAt];
};
const taskTuple = (r: TaskRow) => [hex(r.id), TASK_STATE_CODES[r.state], r.version, r.resumes, r.pid, r.ttl, r.timerAt];
const scheduleTuple = (r: PromiseScheduleRow) => [
  hex(r.id),
  r.cron,
  r.promiseId,
  r.promiseTimeout,
  JSON.stringify(r.promiseParam),
  JSON.stringify(r.promiseTags),
  r.createdAt,
  r.nextRunAt,
  r.lastRunAt,
];

/** See `PromiseTransaction.apply`: every effect in one batch. */
export async function applyPromiseEffects(session: Session, effects: PromiseEffects): Promise<void> {
  const list = (values: readonly unknown[]) => JSON.stringify(values);
  const executes = effects.outbox.filter((m) => m.kind === "execute");
  const unblocks = effects.outbox.filter((m) => m.kind === "unblock");
  await session.query(APPLY, {
    cbOn: list(effects.callbacksOnDeleted.map(hex)),
    cbOf: list(effects.callbacksOfDeleted.map(hex)),
    cbAdded: list(effects.callbacksAdded.map((c) => [hex(c.awaited), hex(c.awaiter), sha256Hex(c.awaiter)])),
    lsDeleted: list(effects.listenersDeleted.map(hex)),
    lsAdded: list(effects.listenersAdded.map((l) => [hex(l.promiseId), l.address, sha256Hex(l.address)])),
    exDeleted: list(effects.executesDeleted.map(hex)),
    executes: list(executes.map((m) => [hex(m.id), m.address, hex(m.address), m.kind === "execute" ? m.version : 0, m.availableAt])),
    unblocks: list(unblocks.map((m) => [hex(m.id), m.address, hex(m.address), sha256Hex(m.address), m.availableAt])),
    promisesInserted: list(effects.promises.filter((w) => w.insert).map((w) => promiseTuple(w.row))),
    promisesUpdated: list(effects.promises.filter((w) => !w.insert).map((w) => promiseTuple(w.row))),
    tasksInserted: list(effects.tasks.filter((w) => w.insert).map((w) => taskTuple(w.row))),
    tasksUpdated: list(effects.tasks.filter((w) => !w.insert).map((w) => taskTuple(w.row))),
    scDeleted: list(effects.schedulesDeleted.map(hex)),
    schedulesInserted: list(effects.schedules.filter((w) => w.insert).map((w) => scheduleTuple(w.row))),
    schedulesUpdated: list(effects.schedules.filter((w) => !w.insert).map((w) => scheduleTuple(w.row))),
  });
}
