import {
  type CatchUpPolicy, type Instant, type MintDueRequest, type MintResult, type NormalizedNewJob, type RemoveScheduleResult,
  type ScheduleRecord, type ScheduleWithPayload, type Tag, type TriggerScheduleRequest, type TriggerScheduleResult,
  type UpsertScheduleRequest, type UpsertScheduleResult, checkRetryDisposition, mintsOverLiveInstance, normalizeTags,
  scheduledJobId,
} from "@belay/contract";
import { runNow } from "../io.js";
import { S, type Tables } from "../tables.js";
import type { OpContext, ReadContext, Steps } from "../transaction.js";
import { appendAudit } from "./audit.js";
import { type JobOrigin, insertJob } from "./enqueue.js";
import { findJob, parseRetry, parseTags, retryJson } from "./jobs.js";

const CATCH_UP: readonly CatchUpPolicy[] = ["skip", "coalesce"];

const CURSOR_OF = (t: Tables) => `SELECT cursor FROM ${t.schedules} WHERE id = ?`;

const INSERT_SCHEDULE = (t: Tables) => `INSERT INTO ${t.schedules} (id, cron, time_zone, job_name, queue, payload, tags,
  catch_up, no_overlap, retry, cursor, skipped_ticks, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, '[]', ?, ?)`;

const REDEFINE_SCHEDULE = (t: Tables) => `UPDATE ${t.schedules} SET cron = ?, time_zone = ?, job_name = ?, queue = ?,
  payload = ?, tags = ?, catch_up = ?, no_overlap = ?, retry = ?, updated_at = ? WHERE id = ?`;

const DELETE_SCHEDULE = (t: Tables) => `DELETE FROM ${t.schedules} WHERE id = ? RETURNING id`;

/** `hasLiveInstance` reads the partial index of scheduled jobs by (schedule, state). */
const scheduleColumns = (t: Tables) => `s.id, s.cron, s.time_zone, s.job_name, s.queue, s.tags, s.catch_up, s.no_overlap,
  s.retry, s.cursor, s.skipped_ticks, s.created_at, s.updated_at,
  EXISTS (SELECT 1 FROM ${t.jobs} j WHERE j.schedule_id = s.id AND j.state < ${S.succeeded}) AS live`;

const LIST_SCHEDULES = (t: Tables) => `SELECT ${scheduleColumns(t)} FROM ${t.schedules} s ORDER BY s.id`;

const GET_SCHEDULE = (t: Tables) => `SELECT ${scheduleColumns(t)}, s.payload FROM ${t.schedules} s WHERE s.id = ?`;

const SCHEDULE_FOR_MINT = (t: Tables) => `SELECT s.job_name, s.queue, s.payload, s.tags, s.cursor, s.skipped_ticks, s.retry, s.no_overlap,
  EXISTS (SELECT 1 FROM ${t.jobs} j WHERE j.schedule_id = s.id AND j.state < ${S.succeeded}) AS live FROM ${t.schedules} s WHERE s.id = ?`;

/** The cursor's compare-and-set: applies only if nobody moved the cursor since the Core planned. */
const MOVE_CURSOR = (t: Tables) => `UPDATE ${t.schedules} SET cursor = ?, skipped_ticks = ? WHERE id = ? AND cursor = ?`;

interface ScheduleRow {
  id: string;
  cron: string;
  time_zone: string;
  job_name: string;
  queue: string;
  tags: string;
  catch_up: number;
  no_overlap: number;
  retry: string | null;
  cursor: number;
  skipped_ticks: string;
  created_at: number;
  updated_at: number;
  live: number;
}

function toScheduleRecord(row: ScheduleRow): ScheduleRecord {
  return {
    id: row.id,
    cron: row.cron,
    timeZone: row.time_zone,
    jobName: row.job_name,
    queue: row.queue,
    tags: parseTags(row.tags),
    catchUp: CATCH_UP[row.catch_up]!,
    noOverlap: row.no_overlap === 1,
    retry: parseRetry(row.retry),
    cursor: row.cursor,
    skippedTicks: JSON.parse(row.skipped_ticks) as Instant[],
    hasLiveInstance: row.live === 1,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

const tagsJson = (tags: readonly Tag[]) => JSON.stringify(tags.map((tag) => [tag.key, tag.value]));

/** See `JobStore.upsertSchedule`. */
export function* upsertSchedule(ctx: OpContext, request: UpsertScheduleRequest): Steps<UpsertScheduleResult> {
  const { schedule: definition, now } = request;
  // The front checked the tags and the retry policy; normalizing again only de-duplicates the tags
  // and copies the policy's own fields for storage.
  const normalized = normalizeTags(definition.tags ?? [], "schedule.tags", ctx.bounds);
  const tags = tagsJson(normalized.ok ? normalized.tags : []);
  const retry = checkRetryDisposition(definition.retry ?? null, "schedule.retry");
  const fields = [
    definition.cron,
    definition.timeZone,
    definition.jobName,
    definition.queue,
    definition.payload,
    tags,
    CATCH_UP.indexOf(definition.catchUp),
    definition.noOverlap ? 1 : 0,
    retry === null || "code" in retry ? null : retryJson(retry),
  ];
  const existing = ctx.q.get(CURSOR_OF).get(definition.id) as { cursor: number } | undefined;
  let result: UpsertScheduleResult;
  if (existing !== undefined) {
    ctx.q.get(REDEFINE_SCHEDULE).run(...fields, now, definition.id);
    result = { status: "updated", cursor: existing.cursor };
  } else {
    ctx.q.get(INSERT_SCHEDULE).run(definition.id, ...fields, now, now, now);
    result = { status: "created", cursor: now };
  }
  yield "schedule written";
  if (request.actor !== undefined) {
    appendAudit(ctx, { actor: request.actor, action: "upsertSchedule", targetKind: "schedule", target: definition.id, detail: result.status, at: now });
  }
  return result;
}

/** See `JobStore.removeSchedule`. */
export function* removeSchedule(ctx: OpContext, request: { readonly scheduleId: string }): Steps<RemoveScheduleResult> {
  const removed = ctx.q.get(DELETE_SCHEDULE).get(request.scheduleId);
  return removed === undefined ? { status: "notFound" } : { status: "removed" };
}

/** See `JobStore.listSchedules`: ordered by id, by code point. */
export function listSchedules(ctx: ReadContext): ScheduleRecord[] {
  return (ctx.q.get(LIST_SCHEDULES).all() as ScheduleRow[]).map(toScheduleRecord);
}

/** See `JobStore.getSchedule`. */
export function getSchedule(ctx: ReadContext, scheduleId: string): ScheduleWithPayload | null {
  const row = ctx.q.get(GET_SCHEDULE).get(scheduleId) as (ScheduleRow & { payload: string }) | undefined;
  return row === undefined ? null : { ...toScheduleRecord(row), payload: row.payload };
}

interface MintSource {
  job_name: string;
  queue: string;
  payload: string;
  tags: string;
  cursor: number;
  skipped_ticks: string;
  retry: string | null;
  no_overlap: number;
  /** 1 when a job this schedule minted or triggered is not terminal. */
  live: number;
}

/**
 * Inserts one instance of a schedule, carrying the schedule's retry policy, unless a job with that
 * id exists; returns whether it did.
 */
function mintOne(
  ctx: OpContext,
  scheduleId: string,
  source: MintSource,
  id: string,
  dueAt: Instant,
  now: Instant,
  cause: JobOrigin["cause"],
): boolean {
  if (runNow(ctx.q, findJob(id)) !== undefined) return false;
  const job: NormalizedNewJob = {
    id,
    jobName: source.job_name,
    queue: source.queue,
    payload: source.payload,
    dueAt,
    parentIds: [],
    dependencyMode: "onSuccess",
    tags: parseTags(source.tags),
    traceContext: null,
    retry: parseRetry(source.retry),
  };
  const initial = { state: "scheduled" as const, parentsRemaining: 0, terminalCause: null, parentSeqs: [] };
  runNow(ctx.q, insertJob(ctx, job, initial, now, { cause, scheduleId, workflowId: null }));
  return true;
}

/** See `JobStore.mintDue`. */
export function* mintDue(ctx: OpContext, request: MintDueRequest): Steps<MintResult[]> {
  const { now } = request;
  const results: MintResult[] = [];
  for (const decision of request.decisions) {
    const { scheduleId } = decision;
    const source = ctx.q.get(SCHEDULE_FOR_MINT).get(scheduleId) as MintSource | undefined;
    if (source === undefined) {
      results.push({ scheduleId, status: "notFound" });
      continue;
    }
    if (mintsOverLiveInstance(source.no_overlap === 1, decision, source.live === 1)) {
      results.push({ scheduleId, status: "stale", cursor: source.cursor });
      continue;
    }
    const skipped = [...(JSON.parse(source.skipped_ticks) as Instant[]), ...decision.skip].slice(-ctx.bounds.skippedTicksKept);
    const moved = ctx.q.get(MOVE_CURSOR).run(decision.newCursor, JSON.stringify(skipped), scheduleId, decision.expectedCursor);
    if (moved.changes === 0) {
      results.push({ scheduleId, status: "stale", cursor: source.cursor });
      continue;
    }
    yield `cursor of ${scheduleId} moved`;
    const jobIds: string[] = [];
    for (const tick of decision.mint) {
      const id = scheduledJobId(scheduleId, tick);
      if (mintOne(ctx, scheduleId, source, id, tick, now, "minted")) jobIds.push(id);
      yield `tick ${tick} of ${scheduleId} minted`;
    }
    results.push({ scheduleId, status: "minted", jobIds });
  }
  return results;
}

/** See `JobStore.triggerSchedule`: one extra instance due now, cursor untouched, audited. */
export function* triggerSchedule(ctx: OpContext, request: TriggerScheduleRequest): Steps<TriggerScheduleResult> {
  const source = ctx.q.get(SCHEDULE_FOR_MINT).get(request.scheduleId) as MintSource | undefined;
  if (source === undefined) return { status: "notFound" };
  if (!mintOne(ctx, request.scheduleId, source, request.jobId, request.now, request.now, "triggered")) {
    return { status: "triggered", jobId: request.jobId };
  }
  yield "instance minted";
  appendAudit(ctx, {
    actor: request.actor,
    action: "triggerSchedule",
    targetKind: "schedule",
    target: request.scheduleId,
    detail: request.jobId,
    at: request.now,
  });
  return { status: "triggered", jobId: request.jobId };
}
