import {
  type CatchUpPolicy, JOB_STATE_CODES, type MintDueRequest, type MintResult, type PlannedInsert, type QueryRow, type RemoveScheduleResult,
  type ScheduleRecord, type ScheduleWithPayload, type TriggerScheduleRequest, type TriggerScheduleResult, type UpsertScheduleRequest,
  type UpsertScheduleResult, mintsOverLiveInstance, normalizeTags, scheduleInstance, scheduledJobId,
} from "@belay/contract";
import type { StoreContext } from "../context.js";
import { key, textOfKey, toBool, toInt } from "../keys.js";
import { COLUMN_BYTES } from "../sqlserver-store-config.js";
import { statement } from "../statements.js";
import { appendAudit } from "./audit.js";
import { insertJobs, lockStates } from "./enqueue.js";
import { decodeRetry, decodeTags, encodeRetry } from "./jobs.js";

const STATE = JOB_STATE_CODES;
const ID = `varbinary(${COLUMN_BYTES.id})`;

// A new schedule starts its cursor at now; a redefinition replaces every field (the retry policy
// too: omitted or null is none) but the cursor, the skipped ticks and the creation time.
const UPSERT_SCHEDULE = statement(
  "upsertSchedule",
  {
    id: ID,
    cron: "nvarchar(max)",
    timeZone: "nvarchar(max)",
    jobName: `varbinary(${COLUMN_BYTES.jobName})`,
    queue: `varbinary(${COLUMN_BYTES.queue})`,
    payload: "nvarchar(max)",
    tags: "nvarchar(max)",
    catchUp: "nvarchar(16)",
    noOverlap: "bit",
    retry: "nvarchar(max)",
    now: "bigint",
  },
  (S) => `DECLARE @created bit = 0;
UPDATE s SET cron = @cron, time_zone = @timeZone, job_name = @jobName, queue = @queue, payload = @payload, tags = @tags, catch_up = @catchUp,
  no_overlap = @noOverlap, retry = @retry, updated_at = @now
FROM ${S}.schedules AS s WITH (UPDLOCK, HOLDLOCK) WHERE s.id = @id;
IF @@ROWCOUNT = 0
BEGIN
  INSERT INTO ${S}.schedules (id, cron, time_zone, job_name, queue, payload, tags, catch_up, no_overlap, retry, cursor_at, skipped_ticks, created_at, updated_at)
  VALUES (@id, @cron, @timeZone, @jobName, @queue, @payload, @tags, @catchUp, @noOverlap, @retry, @now, N'[]', @now, @now);
  SET @created = 1;
END;
SELECT @created AS created, s.cursor_at FROM ${S}.schedules AS s WHERE s.id = @id`,
);

/** See `JobStore.upsertSchedule`; the definition is already validated. */
export async function upsertSchedule(ctx: StoreContext, request: UpsertScheduleRequest): Promise<UpsertScheduleResult> {
  const { schedule, now } = request;
  const tags = normalizeTags(schedule.tags ?? [], "schedule.tags", ctx.bounds);
  const [row] = await ctx.executor.transaction(
    "upsertSchedule",
    async (session) => {
      const rows = await session.rows(UPSERT_SCHEDULE, {
        id: key(schedule.id),
        cron: schedule.cron,
        timeZone: schedule.timeZone,
        jobName: key(schedule.jobName),
        queue: key(schedule.queue),
        payload: schedule.payload,
        tags: JSON.stringify(tags.ok ? tags.tags.map((t) => [t.key, t.value]) : []),
        catchUp: schedule.catchUp,
        noOverlap: schedule.noOverlap,
        retry: encodeRetry(schedule.retry),
        now,
      });
      await session.step("schedule written");
      if (request.actor !== undefined) {
        const detail = toBool(rows[0]!["created"]) ? "created" : "updated";
        await appendAudit(session, { at: now, actor: request.actor, action: "upsertSchedule", targetKind: "schedule", target: schedule.id, detail });
      }
      return rows;
    },
    { rerunOnUnique: true },
  );
  return { status: toBool(row!["created"]) ? "created" : "updated", cursor: toInt(row!["cursor_at"]) };
}

const REMOVE_SCHEDULE = statement("removeSchedule", { id: ID }, (S) => `DELETE FROM ${S}.schedules OUTPUT deleted.id WHERE id = @id`);

/** See `JobStore.removeSchedule`. */
export async function removeSchedule(ctx: StoreContext, request: { readonly scheduleId: string }): Promise<RemoveScheduleResult> {
  return ctx.executor.transaction("removeSchedule", async (session) => {
    const rows = await session.rows(REMOVE_SCHEDULE, { id: key(request.scheduleId) });
    await session.step("schedule removed");
    return { status: rows.length > 0 ? "removed" : "notFound" };
  });
}

// hasLiveInstance probes the (schedule_id, state) index once per schedule for a job that is not terminal.
const SCHEDULE_COLUMNS = (S: string) => `s.id, s.cron, s.time_zone, s.job_name, s.queue, s.tags, s.catch_up, s.no_overlap, s.retry,
  s.cursor_at, s.skipped_ticks, s.created_at, s.updated_at,
  CASE WHEN EXISTS (SELECT 1 FROM ${S}.jobs AS j WHERE j.schedule_id = s.id AND j.state < ${STATE.succeeded}) THEN 1 ELSE 0 END AS live`;

const LIST_SCHEDULES = statement("listSchedules", {}, (S) => `SELECT ${SCHEDULE_COLUMNS(S)} FROM ${S}.schedules AS s ORDER BY s.id`);
const GET_SCHEDULE = statement("getSchedule", { id: ID }, (S) => `SELECT ${SCHEDULE_COLUMNS(S)}, s.payload FROM ${S}.schedules AS s WHERE s.id = @id`);

function toScheduleRecord(row: QueryRow): ScheduleRecord {
  return {
    id: textOfKey(row["id"]),
    cron: row["cron"] as string,
    timeZone: row["time_zone"] as string,
    jobName: textOfKey(row["job_name"]),
    queue: textOfKey(row["queue"]),
    tags: decodeTags(row["tags"]),
    catchUp: row["catch_up"] as CatchUpPolicy,
    noOverlap: toBool(row["no_overlap"]),
    retry: decodeRetry(row["retry"]),
    cursor: toInt(row["cursor_at"]),
    skippedTicks: JSON.parse(row["skipped_ticks"] as string) as number[],
    hasLiveInstance: toInt(row["live"]) === 1,
    createdAt: toInt(row["created_at"]),
    updatedAt: toInt(row["updated_at"]),
  };
}

export async function listSchedules(ctx: StoreContext): Promise<ScheduleRecord[]> {
  return (await ctx.executor.read("listSchedules", (s) => s.rows(LIST_SCHEDULES))).map(toScheduleRecord);
}

export async function getSchedule(ctx: StoreContext, scheduleId: string): Promise<ScheduleWithPayload | null> {
  if (Buffer.byteLength(scheduleId, "utf8") > COLUMN_BYTES.id) return null;
  const [row] = await ctx.executor.read("getSchedule", (s) => s.rows(GET_SCHEDULE, { id: key(scheduleId) }));
  return row === undefined ? null : { ...toScheduleRecord(row), payload: row["payload"] as string };
}

/** Locks a schedule's row for the rest of the transaction (the cursor's compare-and-set, a trigger). */
const LOCK_SCHEDULE = statement(
  "lockSchedule",
  { id: ID },
  (S) => `SELECT s.id, s.job_name, s.queue, s.payload, s.tags, s.retry, s.cursor_at, s.skipped_ticks, s.no_overlap FROM ${S}.schedules AS s WITH (UPDLOCK, ROWLOCK) WHERE s.id = @id`,
);

/** Whether the schedule has a live instance: a statement of its own after the lock, so it sees a trigger that committed meanwhile. */
const LIVE_INSTANCE = statement(
  "liveInstance",
  { id: ID },
  (S) => `SELECT CASE WHEN EXISTS (SELECT 1 FROM ${S}.jobs AS j WHERE j.schedule_id = @id AND j.state < ${STATE.succeeded}) THEN 1 ELSE 0 END AS live`,
);

const MOVE_CURSOR = statement(
  "moveCursor",
  { id: ID, cursor: "bigint", skipped: "nvarchar(max)" },
  (S) => `UPDATE ${S}.schedules SET cursor_at = @cursor, skipped_ticks = @skipped WHERE id = @id`,
);

function instance(schedule: QueryRow, id: string, dueAt: number): PlannedInsert {
  const [scheduleId, jobName, queue] = [textOfKey(schedule["id"]), textOfKey(schedule["job_name"]), textOfKey(schedule["queue"])];
  const template = { scheduleId, jobName, queue, payload: schedule["payload"] as string, tags: decodeTags(schedule["tags"]), retry: decodeRetry(schedule["retry"]) };
  return scheduleInstance(template, id, dueAt);
}

/**
 * See `JobStore.mintDue`: every decision in one transaction, each applied whole or not at all.
 * The cursor's compare-and-set is made on the schedule's locked row: a concurrent mint of the same
 * decision waits for the lock and then finds the cursor moved.
 */
export async function mintDue(ctx: StoreContext, request: MintDueRequest): Promise<MintResult[]> {
  const { decisions, now } = request;
  if (decisions.length === 0) return [];
  return ctx.executor.transaction(
    "mintDue",
    async (session) => {
      const results: MintResult[] = [];
      for (const decision of decisions) {
        const { scheduleId } = decision;
        const [schedule] = Buffer.byteLength(scheduleId, "utf8") > COLUMN_BYTES.id ? [] : await session.rows(LOCK_SCHEDULE, { id: key(scheduleId) });
        if (schedule === undefined) {
          results.push({ scheduleId, status: "notFound" });
          continue;
        }
        const cursor = toInt(schedule["cursor_at"]);
        if (cursor !== decision.expectedCursor) {
          results.push({ scheduleId, status: "stale", cursor });
          continue;
        }
        if (decision.mint.length > 0 && toBool(schedule["no_overlap"])) {
          const [probe] = await session.rows(LIVE_INSTANCE, { id: key(scheduleId) });
          if (mintsOverLiveInstance(true, decision, toInt(probe!["live"]) === 1)) {
            results.push({ scheduleId, status: "stale", cursor });
            continue;
          }
        }
        const skipped = [...(JSON.parse(schedule["skipped_ticks"] as string) as number[]), ...decision.skip].slice(-ctx.bounds.skippedTicksKept);
        await session.query(MOVE_CURSOR, { id: key(scheduleId), cursor: decision.newCursor, skipped: JSON.stringify(skipped) });
        await session.step(`cursor of ${scheduleId} moved`);
        const planned = [...new Set(decision.mint)].map((tick) => instance(schedule, scheduledJobId(scheduleId, tick), tick));
        const existing = await lockStates(session, planned.map((p) => p.job.id));
        const fresh = planned.filter((p) => !existing.has(p.job.id));
        const seqs = await insertJobs(session, ctx, fresh, now, "minted");
        await session.step(`ticks of ${scheduleId} minted`);
        results.push({ scheduleId, status: "minted", jobIds: fresh.filter((_, i) => seqs[i] !== null).map((p) => p.job.id) });
      }
      return results;
    },
    { rerunOnUnique: true },
  );
}

/** See `JobStore.triggerSchedule`. */
export async function triggerSchedule(ctx: StoreContext, request: TriggerScheduleRequest): Promise<TriggerScheduleResult> {
  const { scheduleId, jobId, now } = request;
  return ctx.executor.transaction(
    "triggerSchedule",
    async (session): Promise<TriggerScheduleResult> => {
      const [schedule] = Buffer.byteLength(scheduleId, "utf8") > COLUMN_BYTES.id ? [] : await session.rows(LOCK_SCHEDULE, { id: key(scheduleId) });
      if (schedule === undefined) return { status: "notFound" };
      if ((await lockStates(session, [jobId])).has(jobId)) return { status: "triggered", jobId };
      await insertJobs(session, ctx, [instance(schedule, jobId, now)], now, "triggered");
      await session.step("instance minted");
      await appendAudit(session, { at: now, actor: request.actor, action: "triggerSchedule", targetKind: "schedule", target: scheduleId, detail: jobId });
      return { status: "triggered", jobId };
    },
    { rerunOnUnique: true },
  );
}
