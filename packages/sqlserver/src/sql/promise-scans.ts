import {
  type CallbackRow, type Instant, type ListenerRow, type OutboxRef, type OutboxRow, type PromisePageQuery, type PromiseReader,
  type PromiseTransaction, type QueryRow, type TaskPageQuery, takesNothing,
} from "@belay/contract";
import { hex, key, textOfKey, toInt } from "../keys.js";
import type { Session } from "../session.js";
import { statement } from "../statements.js";
import {
  OUTBOX_KIND_CODES, PID, PID_HEX, PROMISE_COLUMNS, PROMISE_STATE_CODES, SCHEDULE_COLUMNS, TASK_COLUMNS, TASK_STATE_CODES,
  decodePromise, decodeSchedule, decodeTask, outboxAddressKey, pidOf,
} from "./promise-rows.js";

// The scans of the promise surface: due timers and the outbox take (bounded, oldest first, by
// their time-ordered indexes, `UPDLOCK, READPAST, ROWLOCK` so concurrent scanners split the work),
// and the reads behind searches and snapshots.

const PENDING = PROMISE_STATE_CODES.pending;

/**
 * Due deadlines and due task timers, oldest first, up to `@max` each. A task's timer is taken by
 * locking its promise's row, the row every task operation locks first; a row someone holds is
 * skipped. What a scan read is re-checked by the machine under the lock.
 */
export const DUE_TIMERS = statement(
  "promiseDueTimers",
  { now: "bigint", max: "int" },
  (S) => `SELECT TOP (@max) p.id FROM ${S}.promises AS p WITH (UPDLOCK, READPAST, ROWLOCK)
WHERE p.state = ${PENDING} AND p.timeout_at <= @now ORDER BY p.timeout_at, p.seq;
SELECT TOP (@max) t.id FROM ${S}.tasks AS t INNER JOIN ${S}.promises AS p WITH (UPDLOCK, READPAST, ROWLOCK) ON p.id = t.id
WHERE t.timer_at <= @now ORDER BY t.timer_at, t.seq`,
);

export async function dueTimers(session: Session, now: Instant, max: number): Promise<{ promises: string[]; tasks: string[] }> {
  const [promises = [], tasks = []] = await session.query(DUE_TIMERS, { now, max });
  return { promises: promises.map((r) => textOfKey(r["id"])), tasks: tasks.map((r) => textOfKey(r["id"])) };
}

/**
 * Takes the oldest available messages that pass the taker's filter (skipping rows other takers
 * hold), hides each until `@until` with one more take (its rowversion, the revision, moves with
 * the update), and returns them with the promise of each `unblock` (settled, so immutable: read
 * unlocked, it spares the front a load).
 */
export const TAKE_OUTBOX = statement(
  "promiseTakeOutbox",
  { now: "bigint", max: "int", until: "bigint", all: "bit", addresses: "nvarchar(max)", prefixes: "nvarchar(max)" },
  (S) => `DECLARE @due TABLE (seq bigint NOT NULL PRIMARY KEY, n int NOT NULL);
INSERT INTO @due (seq, n)
SELECT TOP (@max) o.seq, ROW_NUMBER() OVER (ORDER BY o.available_at, o.seq) FROM ${S}.outbox AS o WITH (UPDLOCK, READPAST, ROWLOCK)
WHERE o.available_at <= @now
  AND (@all = 1
    OR o.address_bytes IN (SELECT CONVERT(varbinary(8000), x.value, 2) FROM OPENJSON(@addresses) AS x)
    OR EXISTS (SELECT 1 FROM OPENJSON(@prefixes) AS x
               WHERE SUBSTRING(o.address_bytes, 1, DATALENGTH(CONVERT(varbinary(8000), x.value, 2))) = CONVERT(varbinary(8000), x.value, 2)))
ORDER BY o.available_at, o.seq;
DECLARE @taken TABLE (n int NOT NULL, kind tinyint NOT NULL, id ${PID} NOT NULL, address nvarchar(max) NOT NULL, version bigint NOT NULL,
  available_at bigint NOT NULL, revision bigint NOT NULL, created_at bigint NOT NULL, takes int NOT NULL);
UPDATE o SET available_at = @until, takes = o.takes + 1
OUTPUT d.n, inserted.kind, inserted.id, inserted.address, inserted.version, inserted.available_at, CAST(inserted.rv AS bigint), inserted.created_at, inserted.takes INTO @taken
FROM ${S}.outbox AS o INNER JOIN @due AS d ON d.seq = o.seq;
SELECT x.kind, x.id AS message_id, x.address, x.version, x.available_at AS message_available_at, x.revision, x.created_at AS message_created_at, x.takes,
  CASE WHEN p.id IS NULL THEN 0 ELSE 1 END AS found, ${PROMISE_COLUMNS("p")}
FROM @taken AS x LEFT JOIN ${S}.promises AS p ON x.kind = ${OUTBOX_KIND_CODES.unblock} AND p.id = x.id
ORDER BY x.n`,
);

function outboxRow(kind: unknown, id: string, address: string, version: number, availableAt: number, revision: number, createdAt: number, takes: number): OutboxRow {
  const common = { id, address, availableAt, revision, createdAt, takes };
  return toInt(kind) === OUTBOX_KIND_CODES.execute ? { kind: "execute", version, ...common } : { kind: "unblock", version: 0, ...common };
}

/** See `PromiseTransaction.takeOutbox`: each `unblock` comes with its promise (`null` when it is gone). */
export async function takeOutbox(session: Session, ...[now, max, until, filter]: Parameters<PromiseTransaction["takeOutbox"]>): ReturnType<PromiseTransaction["takeOutbox"]> {
  if (takesNothing(filter)) return [];
  const rows = await session.rows(TAKE_OUTBOX, {
    now,
    max,
    until,
    all: filter === null,
    addresses: JSON.stringify((filter?.addresses ?? []).map(hex)),
    prefixes: JSON.stringify((filter?.prefixes ?? []).map(hex)),
  });
  return rows.map((row) => {
    const taken = outboxRow(
      row["kind"],
      textOfKey(row["message_id"]),
      row["address"] as string,
      toInt(row["version"]),
      toInt(row["message_available_at"]),
      toInt(row["revision"]),
      toInt(row["message_created_at"]),
      toInt(row["takes"]),
    );
    if (taken.kind === "execute") return taken;
    return { ...taken, promise: toInt(row["found"]) === 1 ? decodePromise(row) : null };
  });
}

const REFS = `OPENJSON(@refs) WITH (kind tinyint '$[0]', id ${PID_HEX} '$[1]', address_key varchar(64) '$[2]', revision bigint '$[3]') AS a`;
const REF_MATCH = `o.id = ${pidOf("a.id")} AND o.kind = a.kind AND o.address_key = CONVERT(binary(32), a.address_key, 2) AND CAST(o.rv AS bigint) = a.revision`;

export const ACKNOWLEDGE_OUTBOX = statement("promiseAcknowledgeOutbox", { refs: "nvarchar(max)" }, (S) => `DELETE o FROM ${S}.outbox AS o INNER JOIN ${REFS} ON ${REF_MATCH}`);

/** Rows still at the revision of their take, available again at `@at` (their takes kept). */
export const RELEASE_OUTBOX = statement(
  "promiseReleaseOutbox",
  { refs: "nvarchar(max)", at: "bigint" },
  (S) => `UPDATE o SET available_at = @at OUTPUT inserted.seq FROM ${S}.outbox AS o INNER JOIN ${REFS} ON ${REF_MATCH}`,
);

const refs = (rows: readonly OutboxRef[]) => JSON.stringify(rows.map((r) => [OUTBOX_KIND_CODES[r.kind], hex(r.id), outboxAddressKey(r.kind, r.address), r.revision]));

export async function acknowledgeOutbox(session: Session, rows: readonly OutboxRef[]): Promise<void> {
  if (rows.length > 0) await session.query(ACKNOWLEDGE_OUTBOX, { refs: refs(rows) });
}

export async function releaseOutbox(session: Session, rows: readonly OutboxRef[], at: Instant): Promise<number> {
  if (rows.length === 0) return 0;
  return (await session.rows(RELEASE_OUTBOX, { refs: refs(rows), at })).length;
}

/** Row deletes (not TRUNCATE, whose schema locks would stall every other server on the schema). */
const RESET = statement(
  "promiseReset",
  {},
  (S) => `DELETE FROM ${S}.callbacks; DELETE FROM ${S}.listeners; DELETE FROM ${S}.outbox; DELETE FROM ${S}.tasks; DELETE FROM ${S}.promise_schedules; DELETE FROM ${S}.promises`,
);

export async function resetPromises(session: Session): Promise<void> {
  await session.query(RESET);
}

// ---- reads ---------------------------------------------------------------------------------

/** Tags matched exactly (as UTF-16 bytes: no collation, no padding): every tag asked for is on the row. */
const TAGS_MATCH = (column: string) => `NOT EXISTS (SELECT 1 FROM OPENJSON(@tags) AS f
  WHERE NOT EXISTS (SELECT 1 FROM OPENJSON(${column}) AS t
    WHERE CAST(t.[key] AS varbinary(max)) = CAST(f.[key] AS varbinary(max)) AND CAST(t.value AS varbinary(max)) = CAST(f.value AS varbinary(max))))`;

/**
 * A page of promises by id (binary: code point order). With states given, a pending promise whose
 * deadline is ≤ `@expiredBy` is included too (the front shows it settled by its deadline). Ids
 * start with `@prefix`: the key range [`@prefix`, `@successor`) of the id index (`@successor`
 * NULL: none needed), matched exactly on the bytes.
 */
export const PROMISE_PAGE = statement(
  "promisePage",
  { after: PID, prefix: PID, successor: PID, tags: "nvarchar(max)", states: "nvarchar(max)", expiredBy: "bigint", limit: "int" },
  (S) => `SELECT TOP (@limit) ${PROMISE_COLUMNS("p")} FROM ${S}.promises AS p
WHERE p.id > @after AND p.id >= @prefix AND (@successor IS NULL OR p.id < @successor) AND SUBSTRING(p.id, 1, DATALENGTH(@prefix)) = @prefix
  AND ${TAGS_MATCH("p.tags")}
  AND (@states IS NULL OR p.state IN (SELECT CAST(x.value AS tinyint) FROM OPENJSON(@states) AS x) OR (p.state = ${PENDING} AND p.timeout_at <= @expiredBy))
ORDER BY p.id`,
);

/** The least byte string above every string starting with `prefix`, or `null` (UTF-8 has no 0xFF byte: the last byte always rises). */
export function prefixSuccessor(prefix: Buffer): Buffer | null {
  const bytes = [...prefix];
  while (bytes.length > 0) {
    const last = bytes.pop()!;
    if (last < 0xff) return Buffer.from([...bytes, last + 1]);
  }
  return null;
}

export const TASK_PAGE = statement(
  "taskPage",
  { after: PID, states: "nvarchar(max)", fulfilled: "bit", now: "bigint", limit: "int" },
  (S) => `SELECT TOP (@limit) ${TASK_COLUMNS("t")}, p.id AS p_id, p.state AS p_state, p.param AS p_param, p.value AS p_value, p.tags AS p_tags,
  p.timeout_at AS p_timeout_at, p.created_at AS p_created_at, p.settled_at AS p_settled_at
FROM ${S}.tasks AS t LEFT JOIN ${S}.promises AS p ON p.id = t.id
WHERE t.id > @after
  AND (@states IS NULL OR t.state IN (SELECT CAST(x.value AS tinyint) FROM OPENJSON(@states) AS x) OR (@fulfilled = 1 AND p.state = ${PENDING} AND p.timeout_at <= @now))
ORDER BY t.id`,
);

export const SCHEDULE_PAGE = statement(
  "schedulePage",
  { after: PID, tags: "nvarchar(max)", limit: "int" },
  (S) => `SELECT TOP (@limit) ${SCHEDULE_COLUMNS("s")} FROM ${S}.promise_schedules AS s WHERE s.id > @after AND ${TAGS_MATCH("s.promise_tags")} ORDER BY s.id`,
);

/** Due schedules, oldest first, by the next-run index; a schedule a firing holds right now is skipped. */
export const DUE_SCHEDULES = statement(
  "dueSchedules",
  { now: "bigint", max: "int" },
  (S) => `SELECT TOP (@max) ${SCHEDULE_COLUMNS("s")} FROM ${S}.promise_schedules AS s WITH (UPDLOCK, READPAST, ROWLOCK)
WHERE s.next_run_at <= @now ORDER BY s.next_run_at, s.seq`,
);

/** One promise and everything around it, one result set per table, each by its key or index. */
export const DESCRIBE = statement(
  "promiseDescribe",
  { id: PID },
  (S) => `SELECT ${PROMISE_COLUMNS("p")} FROM ${S}.promises AS p WHERE p.id = @id;
SELECT ${TASK_COLUMNS("t")} FROM ${S}.tasks AS t WHERE t.id = @id;
SELECT c.awaiter FROM ${S}.callbacks AS c WHERE c.awaited = @id;
SELECT c.awaited FROM ${S}.callbacks AS c WHERE c.awaiter = @id;
SELECT l.address FROM ${S}.listeners AS l WHERE l.promise_id = @id;
SELECT o.kind, o.id, o.address, o.version, o.available_at, CAST(o.rv AS bigint) AS revision, o.created_at, o.takes FROM ${S}.outbox AS o WHERE o.id = @id ORDER BY o.kind, o.address_bytes`,
);

const EVERYTHING = statement(
  "promiseEverything",
  {},
  (S) => `SELECT ${PROMISE_COLUMNS("p")} FROM ${S}.promises AS p;
SELECT ${TASK_COLUMNS("t")} FROM ${S}.tasks AS t;
SELECT c.awaited, c.awaiter FROM ${S}.callbacks AS c;
SELECT l.promise_id, l.address FROM ${S}.listeners AS l;
SELECT ${SCHEDULE_COLUMNS("s")} FROM ${S}.promise_schedules AS s;
SELECT o.kind, o.id, o.address, o.version, o.available_at, CAST(o.rv AS bigint) AS revision, o.created_at, o.takes FROM ${S}.outbox AS o`,
);

const outboxOf = (r: QueryRow) =>
  outboxRow(r["kind"], textOfKey(r["id"]), r["address"] as string, toInt(r["version"]), toInt(r["available_at"]), toInt(r["revision"]), toInt(r["created_at"]), toInt(r["takes"]));

/** The read-only queries. `everything` and `describe` are one batch each; under READ_COMMITTED_SNAPSHOT each statement of a batch reads as of its own start. */
export function promiseReader(session: Session): PromiseReader {
  const fits = (id: string) => Buffer.byteLength(id, "utf8") <= 1024;
  return {
    async promisePage(query: PromisePageQuery) {
      const prefix = key(query.prefix ?? "");
      if (query.after !== null && !fits(query.after)) return [];
      if (!fits(query.prefix ?? "")) return [];
      const rows = await session.rows(PROMISE_PAGE, {
        after: key(query.after ?? ""),
        prefix,
        successor: prefix.length === 0 ? null : prefixSuccessor(prefix),
        tags: JSON.stringify(query.tags),
        states: query.states === null ? null : JSON.stringify(query.states.map((s) => PROMISE_STATE_CODES[s])),
        expiredBy: query.expiredBy,
        limit: query.limit,
      });
      return rows.map((row) => decodePromise(row));
    },
    async taskPage(query: TaskPageQuery) {
      if (query.after !== null && !fits(query.after)) return [];
      const rows = await session.rows(TASK_PAGE, {
        after: key(query.after ?? ""),
        states: query.states === null ? null : JSON.stringify(query.states.map((s) => TASK_STATE_CODES[s])),
        fulfilled: query.states?.includes("fulfilled") ?? false,
        now: query.now,
        limit: query.limit,
      });
      return rows.map((row) => ({ task: decodeTask(row), promise: row["p_id"] == null ? null : decodePromise(row, "p_") }));
    },
    async schedulePage(query) {
      if (query.after !== null && !fits(query.after)) return [];
      const rows = await session.rows(SCHEDULE_PAGE, { after: key(query.after ?? ""), tags: JSON.stringify(query.tags), limit: query.limit });
      return rows.map(decodeSchedule);
    },
    async dueSchedules(now: Instant, max: number) {
      return (await session.rows(DUE_SCHEDULES, { now, max })).map(decodeSchedule);
    },
    async describe(id: string) {
      if (!fits(id)) return null;
      const [promise = [], task = [], awaiters = [], awaiting = [], listeners = [], outbox = []] = await session.query(DESCRIBE, { id: key(id) });
      if (promise[0] === undefined) return null;
      return {
        promise: decodePromise(promise[0]),
        task: task[0] === undefined ? null : decodeTask(task[0]),
        awaiters: awaiters.map((r) => textOfKey(r["awaiter"])),
        awaiting: awaiting.map((r) => textOfKey(r["awaited"])),
        listeners: listeners.map((r) => r["address"] as string),
        outbox: outbox.map(outboxOf),
      };
    },
    async everything() {
      const [promises = [], tasks = [], callbacks = [], listeners = [], schedules = [], outbox = []] = await session.query(EVERYTHING);
      return {
        promises: promises.map((r) => decodePromise(r)),
        tasks: tasks.map(decodeTask),
        callbacks: callbacks.map((r): CallbackRow => ({ awaited: textOfKey(r["awaited"]), awaiter: textOfKey(r["awaiter"]) })),
        listeners: listeners.map((r): ListenerRow => ({ promiseId: textOfKey(r["promise_id"]), address: r["address"] as string })),
        schedules: schedules.map(decodeSchedule),
        outbox: outbox.map(outboxOf),
      };
    },
  };
}
