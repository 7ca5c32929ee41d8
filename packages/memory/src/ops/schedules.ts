import {
  type Instant, type MintDueRequest, type MintResult, type RemoveScheduleResult, type RetryDisposition, type ScheduleRecord,
  type ScheduleWithPayload, type TriggerScheduleRequest, type TriggerScheduleResult, type UpsertScheduleRequest,
  type UpsertScheduleResult, compareCodePoints, mintsOverLiveInstance, scheduledJobId,
} from "@belay/contract";
import type { MemoryState, ScheduleRow } from "../state.js";
import type { UndoLog } from "../undo-log.js";
import { appendAudit } from "./audit.js";
import { insertJob } from "./enqueue.js";

/** See `JobStore.upsertSchedule`. */
export async function upsertSchedule(state: MemoryState, undo: UndoLog, request: UpsertScheduleRequest): Promise<UpsertScheduleResult> {
  const { schedule: definition, now } = request;
  const fields = {
    cron: definition.cron,
    timeZone: definition.timeZone,
    jobName: definition.jobName,
    queue: definition.queue,
    payload: definition.payload,
    tags: definition.tags ?? [],
    catchUp: definition.catchUp,
    noOverlap: definition.noOverlap,
    retry: frozenRetry(definition.retry ?? null),
    updatedAt: now,
  };
  const existing = state.schedules.get(definition.id);
  let result: UpsertScheduleResult;
  if (existing !== undefined) {
    undo.patch(existing, fields);
    result = { status: "updated", cursor: existing.cursor };
  } else {
    const row: ScheduleRow = { id: definition.id, ...fields, cursor: now, skippedTicks: [], createdAt: now };
    undo.mapSet(state.schedules, row.id, row);
    result = { status: "created", cursor: now };
  }
  await undo.step("schedule written");
  if (request.actor !== undefined) {
    appendAudit(state, undo, { actor: request.actor, action: "upsertSchedule", targetKind: "schedule", target: definition.id, detail: result.status, at: now });
  }
  return result;
}

/** See `JobStore.removeSchedule`. */
export function removeSchedule(state: MemoryState, undo: UndoLog, request: { readonly scheduleId: string }): RemoveScheduleResult {
  if (!state.schedules.has(request.scheduleId)) return { status: "notFound" };
  undo.mapDelete(state.schedules, request.scheduleId);
  return { status: "removed" };
}

/** See `JobStore.listSchedules`. */
export function listSchedules(state: MemoryState): ScheduleRecord[] {
  return [...state.schedules.values()].sort((a, b) => compareCodePoints(a.id, b.id)).map((row) => toScheduleRecord(state, row));
}

/** See `JobStore.getSchedule`. */
export function getSchedule(state: MemoryState, scheduleId: string): ScheduleWithPayload | null {
  const row = state.schedules.get(scheduleId);
  return row ? { ...toScheduleRecord(state, row), payload: row.payload } : null;
}

function toScheduleRecord(state: MemoryState, row: ScheduleRow): ScheduleRecord {
  return {
    id: row.id,
    cron: row.cron,
    timeZone: row.timeZone,
    jobName: row.jobName,
    queue: row.queue,
    tags: row.tags,
    catchUp: row.catchUp,
    noOverlap: row.noOverlap,
    retry: row.retry,
    cursor: row.cursor,
    skippedTicks: row.skippedTicks,
    hasLiveInstance: (state.liveInstances.get(row.id) ?? 0) > 0,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
  };
}

/**
 * A copy of a (checked) retry policy the caller cannot change afterwards, so every job the
 * schedule mints reads the policy it had when it was stored.
 */
function frozenRetry(retry: RetryDisposition | null): RetryDisposition | null {
  return retry === null ? null : Object.freeze({ maxAttempts: retry.maxAttempts, delaysMs: Object.freeze([...retry.delaysMs]) });
}

/** Inserts one instance of a schedule unless a job with that id exists; returns whether it did. */
function mintOne(
  state: MemoryState,
  undo: UndoLog,
  schedule: ScheduleRow,
  id: string,
  dueAt: Instant,
  now: Instant,
  createdBy: "minted" | "triggered",
): boolean {
  if (state.jobs.has(id)) return false;
  insertJob(
    state,
    undo,
    {
      id,
      jobName: schedule.jobName,
      queue: schedule.queue,
      payload: schedule.payload,
      dueAt,
      parentIds: [],
      dependencyMode: "onSuccess",
      tags: schedule.tags,
      traceContext: null,
      retry: schedule.retry,
    },
    { state: "scheduled", parentsRemaining: 0, terminalCause: null },
    now,
    { scheduleId: schedule.id, workflowId: null },
    createdBy,
  );
  return true;
}

/** See `JobStore.mintDue`. */
export async function mintDue(state: MemoryState, undo: UndoLog, request: MintDueRequest): Promise<MintResult[]> {
  const { now } = request;
  const results: MintResult[] = [];
  for (const decision of request.decisions) {
    const schedule = state.schedules.get(decision.scheduleId);
    if (schedule === undefined) {
      results.push({ scheduleId: decision.scheduleId, status: "notFound" });
      continue;
    }
    if (schedule.cursor !== decision.expectedCursor || mintsOverLiveInstance(schedule.noOverlap, decision, (state.liveInstances.get(schedule.id) ?? 0) > 0)) {
      results.push({ scheduleId: schedule.id, status: "stale", cursor: schedule.cursor });
      continue;
    }
    const skippedTicks = [...schedule.skippedTicks, ...decision.skip].slice(-state.bounds.skippedTicksKept);
    undo.patch(schedule, { cursor: decision.newCursor, skippedTicks });
    await undo.step(`cursor of ${schedule.id} moved`);
    const jobIds: string[] = [];
    for (const tick of decision.mint) {
      const id = scheduledJobId(schedule.id, tick);
      if (mintOne(state, undo, schedule, id, tick, now, "minted")) jobIds.push(id);
      await undo.step(`tick ${tick} of ${schedule.id} minted`);
    }
    results.push({ scheduleId: schedule.id, status: "minted", jobIds });
  }
  return results;
}

/** See `JobStore.triggerSchedule`. */
export async function triggerSchedule(
  state: MemoryState,
  undo: UndoLog,
  request: TriggerScheduleRequest,
): Promise<TriggerScheduleResult> {
  const schedule = state.schedules.get(request.scheduleId);
  if (schedule === undefined) return { status: "notFound" };
  if (!mintOne(state, undo, schedule, request.jobId, request.now, request.now, "triggered")) {
    return { status: "triggered", jobId: request.jobId };
  }
  await undo.step("instance minted");
  appendAudit(state, undo, {
    actor: request.actor,
    action: "triggerSchedule",
    targetKind: "schedule",
    target: schedule.id,
    detail: request.jobId,
    at: request.now,
  });
  return { status: "triggered", jobId: request.jobId };
}
