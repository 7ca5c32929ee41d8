import { type Instant, InvalidInputError, type MintDecision, type ScheduleRecord } from "@belay/contract";
import { Cron } from "croner";

/** A tick older than this when it is planned counts as missed (downtime), not fresh. */
export const MISSED_TICK_THRESHOLD_MS = 60_000;
/** Most ticks minted for one schedule in one planning pass; the rest wait for the next pass. */
export const MAX_TICKS_PER_PASS = 32;
/** Most ticks enumerated forward from the cursor; a longer backlog is skipped in bulk. */
const MAX_TICKS_ENUMERATED = 1_000;

/** A parsed cron expression in its time zone. Parse once per schedule definition. */
export interface CronSchedule {
  readonly expression: string;
  readonly timeZone: string;
  /** Fire times strictly after `after`, up to `count` of them, in order. */
  nextTicks(after: Instant, count: number): Instant[];
  /** The last `count` fire times at or before `atOrBefore`, in order (oldest first). */
  previousTicks(atOrBefore: Instant, count: number): Instant[];
}

/**
 * Parses a cron expression — 5 fields (minute precision) or 6 with seconds first — in an IANA
 * time zone. Day-of-month and day-of-week both restricted means either matches (Vixie cron).
 * In a DST gap a tick fires once at the first valid instant; in an overlap, on its first
 * occurrence. Throws `InvalidInputError` naming `cron` or `timeZone`.
 */
export function parseCron(expression: string, timeZone = "UTC"): CronSchedule {
  if (typeof expression !== "string" || expression.trim().length === 0) {
    throw new InvalidInputError("cron", "must be a cron expression of 5 or 6 fields");
  }
  if (!isTimeZone(timeZone)) throw new InvalidInputError("timeZone", `unknown IANA time zone ${String(timeZone)}`);
  let cron: Cron;
  try {
    cron = new Cron(expression, { timezone: timeZone, mode: "5-or-6-parts", paused: true, domAndDow: false });
    cron.nextRun(new Date(0)); // surfaces errors croner defers to the first evaluation
  } catch (error) {
    throw new InvalidInputError("cron", error instanceof Error ? error.message : String(error));
  }
  return {
    expression,
    timeZone,
    nextTicks(after, count) {
      return cron.nextRuns(count, new Date(after)).map((d) => d.getTime());
    },
    previousTicks(atOrBefore, count) {
      return cron
        .previousRuns(count, new Date(atOrBefore + 1))
        .map((d) => d.getTime())
        .reverse();
    },
  };
}

function isTimeZone(zone: unknown): zone is string {
  if (typeof zone !== "string" || zone.length === 0) return false;
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

/** The schedule facts the planner reads. */
export type PlannableSchedule = Pick<ScheduleRecord, "id" | "cursor" | "catchUp" | "noOverlap" | "hasLiveInstance">;

/**
 * Plans one schedule at `now`: which ticks after its cursor to mint and which to record as
 * skipped, and where the cursor moves. `null` when no tick is due. Pure: the same inputs give the
 * same decision.
 *
 * - Fresh ticks (within a minute of `now`) are minted; missed ones (older: downtime) are skipped
 *   under `skip`, while `coalesce` mints the latest missed tick as one make-up run.
 * - `noOverlap`: while an earlier instance is live every due tick is skipped; otherwise at most
 *   one (the latest) is minted.
 * - At most 32 ticks are minted per pass; the cursor stops after the last tick considered.
 */
export function planSchedule(schedule: PlannableSchedule, cron: CronSchedule, now: Instant): MintDecision | null {
  let due: Instant[] = [];
  // Ask for a few ticks first (usually none or one is due), more only while all of them are due.
  let complete = false;
  for (let after = schedule.cursor, chunk = 2; due.length < MAX_TICKS_ENUMERATED; chunk = Math.min(chunk * 4, 512)) {
    const ticks = cron.nextTicks(after, chunk);
    const batch = ticks.filter((t) => t <= now);
    due.push(...batch);
    if (batch.length < ticks.length || ticks.length < chunk) {
      complete = true;
      break;
    }
    after = batch.at(-1)!;
  }
  if (!complete) {
    // A long backlog (downtime): take the newest ticks instead — every fresh one plus enough
    // missed ones to record — and skip the older rest in bulk, so one pass catches up and
    // `coalesce` makes up exactly once.
    for (let count = 64; ; count *= 2) {
      due = cron.previousTicks(now, count).filter((t) => t > schedule.cursor);
      const missed = due.filter((t) => now - t > MISSED_TICK_THRESHOLD_MS).length;
      if (due.length < count || missed > MAX_TICKS_PER_PASS) break;
    }
  }
  if (due.length === 0) return null;

  const fresh = due.filter((t) => now - t <= MISSED_TICK_THRESHOLD_MS);
  const missed = due.filter((t) => now - t > MISSED_TICK_THRESHOLD_MS);
  let mint = schedule.catchUp === "coalesce" && missed.length > 0 ? [missed.at(-1)!, ...fresh] : fresh;
  if (schedule.noOverlap) mint = schedule.hasLiveInstance ? [] : mint.slice(-1);
  let considered = due;
  if (mint.length > MAX_TICKS_PER_PASS) {
    mint = mint.slice(0, MAX_TICKS_PER_PASS);
    considered = due.filter((t) => t <= mint.at(-1)!);
  }
  const minted = new Set(mint);
  return {
    scheduleId: schedule.id,
    expectedCursor: schedule.cursor,
    newCursor: considered.at(-1)!,
    mint,
    skip: considered.filter((t) => !minted.has(t)).slice(-MAX_TICKS_PER_PASS),
  };
}
