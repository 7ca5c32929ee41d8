import type { CatchUpPolicy, Instant, JobStore, ScheduleRecord, UpsertScheduleResult } from "@belay/contract";
import { encodePayload, parseCron, parseTags, toDisposition } from "@belay/core";
import { toHttpError } from "../http/errors.js";
import type { JobCatalog } from "./catalog.js";
import { checkJobName } from "./enqueue.js";

/** A schedule definition as the API receives it (`PUT /schedules/:id`). */
export interface ScheduleInput {
  /** 5 fields, or 6 with seconds first. */
  readonly cron: string;
  /** IANA time zone; default UTC. */
  readonly timeZone?: string | undefined;
  readonly jobName: string;
  readonly queue?: string | undefined;
  readonly payload?: unknown;
  readonly tags?: readonly string[] | undefined;
  readonly catchUp?: CatchUpPolicy | undefined;
  readonly noOverlap?: boolean | undefined;
}

/**
 * Creates or redefines a schedule, keeping its cursor. The cron expression and time zone are
 * validated by the Core's parser first, and the payload by the job's schema when the server
 * knows the definitions, so a refused definition writes nothing.
 */
export async function upsertSchedule(
  store: JobStore,
  catalog: JobCatalog,
  id: string,
  input: ScheduleInput,
  now: Instant,
  actor: string,
): Promise<UpsertScheduleResult> {
  const mapField = (f: string) => (f === "schedule.id" ? "id" : f.replace(/^schedule\./, ""));
  try {
    const timeZone = input.timeZone ?? "UTC";
    parseCron(input.cron, timeZone);
    checkJobName(input.jobName, store.capabilities.bounds);
    const job = catalog.resolve(input.jobName);
    const payload = job === null ? JSON.stringify(input.payload ?? null) : await encodePayload(job, input.payload);
    return await store.upsertSchedule({
      schedule: {
        id,
        cron: input.cron,
        timeZone,
        jobName: input.jobName,
        queue: input.queue ?? job?.queue ?? "default",
        payload,
        tags: [...(job?.tags ?? []), ...parseTags(input.tags ?? [], "tags")],
        catchUp: input.catchUp ?? "skip",
        noOverlap: input.noOverlap ?? false,
        retry: job?.retry === undefined ? null : toDisposition(job.retry),
      },
      now,
      actor,
    });
  } catch (error) {
    throw toHttpError(error, mapField);
  }
}

/** The next `count` fire times of a stored schedule after `now`; empty if its cron no longer parses. */
export function nextTicks(schedule: Pick<ScheduleRecord, "cron" | "timeZone">, now: Instant, count: number): Instant[] {
  try {
    return parseCron(schedule.cron, schedule.timeZone).nextTicks(now, count);
  } catch {
    return [];
  }
}
