import {
  type CatchUpPolicy, JOB_STATE_CODES, type MintDueRequest, type MintResult, type PlannedInsert, type QueryRow, type RemoveScheduleResult,
  type ScheduleRecord, type ScheduleWithPayload, type TriggerScheduleRequest, type TriggerScheduleResult, type UpsertScheduleRequest,
  type UpsertScheduleResult, mintsOverLiveInstance, normalizeTags, scheduleInstance, scheduledJobId,
} from "@belay/contract";
import { DueQueues, type StoreContext } from "../context.js";
import { appendAudit } from "./audit.js";
import { insertJobs } from "./enqueue.js";
import { decodeRetry, decodeTags, encodeRetry } from "./jobs.js";

const STATE = JOB_STATE_CODES;

// A new schedule starts its cursor at now; a redefinition replaces every field (the retry policy
// too: omitted or null is none) but the cursor, the skipped ticks and the creation time.
const UPSERT_SCHEDULE = (S: string) => `
INSERT INTO ${S}.schedules AS s (id, cron, time_zone, job_name, queue, payload, tags, catch_up, no_overlap, retry, cursor,
                                  created_at, updated_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $11, $10, $10, $10)
ON CONFLICT (id) DO UPDATE SET cron = EXCLUDED.cron, time_zone = EXCLUDED.time_zone, job_name = EXCLUDED.job_name,
  queue = EXCLUDED.queue, payload = EXCLUDED.payload, tags = EXCLUDED.tags, catch_up = EXCLUDED.catch_up,
  no_overlap = EXCLUDED.no_overlap, retry = EXCLUDED.retry, updated_at = EXCLUDED.updated_at
RETURNING s.cursor, (s.xmax = 0) AS created`;

/** See `JobStore.upsertSchedule`; the definition is already validated. */
export async function upsertSchedule(ctx: StoreContext, request: UpsertScheduleRequest): Promise<UpsertScheduleResult> {
  const { schedule, now } = request;
  const tags = normalizeTags(schedule.tags ?? [], "schedule.tags", ctx.bounds);
  const audited = request.actor !== undefined;
  const [row] = await ctx.executor.run("upsertSchedule", audited ? "transaction" : "autocommit", async (session) => {
    const rows = await session.query(ctx.sql.get("upsertSchedule", UPSERT_SCHEDULE), [
      schedule.id,
      schedule.cron,
      schedule.timeZone,
      schedule.jobName,
      schedule.queue,
      schedule.payload,
      JSON.stringify(tags.ok ? tags.tags.map((t) => [t.key, t.value]) : []),
      schedule.catchUp,
      schedule.noOverlap,
      now,
      encodeRetry(schedule.retry),
    ]);
    await session.step("schedule written");
    if (audited) {
      const detail = rows[0]!["created"] === true ? "created" : "updated";
      await appendAudit(session, ctx, { at: now, actor: request.actor!, action: "upsertSchedule", targetKind: "schedule", target: schedule.id, detail });
    }
    return rows;
  });
  return { status: row!["created"] === true ? "created" : "updated", cursor: row!["cursor"] as number };
}

const REMOVE_SCHEDULE = (S: string) => `DELETE FROM ${S}.schedules WHERE id = $1 RETURNING id`;

/** See `JobStore.removeSchedule`. */
export async function removeSchedule(ctx: StoreContext, request: { readonly scheduleId: string }): Promise<RemoveScheduleResult> {
  return ctx.executor.run("removeSchedule", "autocommit", async (session) => {
    const rows = await session.query(ctx.sql.get("removeSchedule", REMOVE_SCHEDULE), [request.scheduleId]);
    await session.step("schedule removed");
    return { status: rows.length > 0 ? "removed" : "notFound" };
  });
}

// hasLiveInstance probes the (schedule_id, state) index once per schedule for a job that is not
// terminal — a scalar subquery with LIMIT, which the planner cannot turn into a scan of all jobs.
const SCHEDULE_COLUMNS = (S: string) => `s.id, s.cron, s.time_zone, s.job_name, s.queue, s.tags, s.catch_up, s.no_overlap, s.retry,
  s.cursor, array_to_json(s.skipped_ticks)::text AS skipped_ticks, s.created_at, s.updated_at,
  (SELECT true FROM ${S}.jobs j WHERE j.schedule_id = s.id AND j.state < ${STATE.succeeded} LIMIT 1) IS NOT NULL AS live`;

/** Every schedule without its payload, with its live-instance probe. */
export const LIST_SCHEDULES = (S: string) => `SELECT ${SCHEDULE_COLUMNS(S)} FROM ${S}.schedules s ORDER BY s.id`;

const GET_SCHEDULE = (S: string) => `SELECT ${SCHEDULE_COLUMNS(S)}, s.payload FROM ${S}.schedules s WHERE s.id = $1`;

function toScheduleRecord(row: QueryRow): ScheduleRecord {
  return {
    id: row["id"] as string,
    cron: row["cron"] as string,
    timeZone: row["time_zone"] as string,
    jobName: row["job_name"] as string,
    queue: row["queue"] as string,
    tags: decodeTags(row["tags"]),
    catchUp: row["catch_up"] as CatchUpPolicy,
    noOverlap: row["no_overlap"] as boolean,
    retry: decodeRetry(row["retry"]),
    cursor: row["cursor"] as number,
    skippedTicks: JSON.parse(row["skipped_ticks"] as string) as number[],
    hasLiveInstance: row["live"] as boolean,
    createdAt: row["created_at"] as number,
    updatedAt: row["updated_at"] as number,
  };
}

/** See `JobStore.listSchedules`. */
export async function listSchedules(ctx: StoreContext): Promise<ScheduleRecord[]> {
  const rows = await ctx.executor.run("listSchedules", "autocommit", (s) => s.query(ctx.sql.get("listSchedules", LIST_SCHEDULES)));
  return rows.map(toScheduleRecord);
}

/** See `JobStore.getSchedule`. */
export async function getSchedule(ctx: StoreContext, scheduleId: string): Promise<ScheduleWithPayload | null> {
  const [row] = await ctx.executor.run("getSchedule", "autocommit", (s) => s.query(ctx.sql.get("getSchedule", GET_SCHEDULE), [scheduleId]));
  return row === undefined ? null : { ...toScheduleRecord(row), payload: row["payload"] as string };
}

/**
 * Compare-and-set of the cursor: concurrent mints of one decision serialize on the schedule
 * row and the second finds the cursor moved. Skipped ticks keep the newest `$5`.
 */
export const MOVE_CURSOR = (S: string) => `
UPDATE ${S}.schedules SET cursor = $3,
  skipped_ticks = (skipped_ticks || $4::bigint[])[greatest(1, cardinality(skipped_ticks || $4::bigint[]) - $5 + 1):]
WHERE id = $1 AND cursor = $2
RETURNING id, job_name, queue, payload, tags, retry`;

const CURSOR_OF = (S: string) => `SELECT cursor FROM ${S}.schedules WHERE id = $1`;

/** A minting decision first locks its schedule: a trigger holding it (FOR SHARE) commits first. */
const LOCK_FOR_MINT = (S: string) => `SELECT cursor, no_overlap FROM ${S}.schedules WHERE id = $1 FOR UPDATE`;

/** Read by a statement of its own after the lock, so it sees what a trigger committed meanwhile. */
const LIVE_INSTANCE = (S: string) => `SELECT EXISTS (SELECT 1 FROM ${S}.jobs j WHERE j.schedule_id = $1 AND j.state < ${STATE.succeeded}) AS live`;

function instance(schedule: QueryRow, id: string, dueAt: number): PlannedInsert {
  const [scheduleId, jobName, queue] = [schedule["id"] as string, schedule["job_name"] as string, schedule["queue"] as string];
  const template = { scheduleId, jobName, queue, payload: schedule["payload"] as string, tags: decodeTags(schedule["tags"]), retry: decodeRetry(schedule["retry"]) };
  return scheduleInstance(template, id, dueAt);
}

/** See `JobStore.mintDue`: every decision in one transaction, each applied whole or not at all. */
export async function mintDue(ctx: StoreContext, request: MintDueRequest): Promise<MintResult[]> {
  const { decisions, now } = request;
  if (decisions.length === 0) return [];
  const due = new DueQueues(now);
  const results = await ctx.executor.run("mintDue", "transaction", async (session) => {
    const results: MintResult[] = [];
    for (const decision of decisions) {
      const { scheduleId } = decision;
      if (decision.mint.length > 0) {
        const [locked] = await session.query(ctx.sql.get("lockForMint", LOCK_FOR_MINT), [scheduleId]);
        if (locked?.["no_overlap"] === true) {
          const [probe] = await session.query(ctx.sql.get("liveInstance", LIVE_INSTANCE), [scheduleId]);
          if (mintsOverLiveInstance(true, decision, probe!["live"] as boolean)) {
            results.push({ scheduleId, status: "stale", cursor: locked["cursor"] as number });
            continue;
          }
        }
      }
      const [schedule] = await session.query(ctx.sql.get("moveCursor", MOVE_CURSOR), [
        scheduleId,
        decision.expectedCursor,
        decision.newCursor,
        decision.skip,
        ctx.bounds.skippedTicksKept,
      ]);
      if (schedule === undefined) {
        const [current] = await session.query(ctx.sql.get("cursorOf", CURSOR_OF), [scheduleId]);
        results.push(current === undefined ? { scheduleId, status: "notFound" } : { scheduleId, status: "stale", cursor: current["cursor"] as number });
        continue;
      }
      await session.step(`cursor of ${scheduleId} moved`);
      const planned = [...new Set(decision.mint)].map((tick) => instance(schedule, scheduledJobId(scheduleId, tick), tick));
      const outcomes = await insertJobs(session, ctx.sql, planned, now, ctx.history, "minted");
      const jobIds = planned.filter((_, i) => outcomes[i]!.seq !== null).map((p) => p.job.id);
      for (const p of planned) due.add(p.job.queue, STATE.scheduled, p.job.dueAt);
      await session.step(`ticks of ${scheduleId} minted`);
      results.push({ scheduleId, status: "minted", jobIds });
    }
    return results;
  });
  ctx.hint(due.queues);
  return results;
}

const SCHEDULE_FOR_TRIGGER = (S: string) => `SELECT id, job_name, queue, payload, tags, retry FROM ${S}.schedules WHERE id = $1 FOR SHARE`;

/** See `JobStore.triggerSchedule`. */
export async function triggerSchedule(
  ctx: StoreContext,
  request: TriggerScheduleRequest,
): Promise<TriggerScheduleResult> {
  const { scheduleId, jobId, now } = request;
  let queue: string | null = null;
  const result = await ctx.executor.run("triggerSchedule", "transaction", async (session): Promise<TriggerScheduleResult> => {
    const [schedule] = await session.query(ctx.sql.get("scheduleForTrigger", SCHEDULE_FOR_TRIGGER), [scheduleId]);
    if (schedule === undefined) return { status: "notFound" };
    const [outcome] = await insertJobs(session, ctx.sql, [instance(schedule, jobId, now)], now, ctx.history, "triggered");
    if (outcome!.seq === null) return { status: "triggered", jobId };
    queue = schedule["queue"] as string;
    await session.step("instance minted");
    await appendAudit(session, ctx, {
      at: now,
      actor: request.actor,
      action: "triggerSchedule",
      targetKind: "schedule",
      target: scheduleId,
      detail: jobId,
    });
    return { status: "triggered", jobId };
  });
  if (queue !== null) ctx.hint([queue]);
  return result;
}
