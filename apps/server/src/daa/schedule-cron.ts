import { type Instant, InvalidInputError, MAX_INSTANT } from "@belay/contract";
import { Cron } from "croner";

// Calendar maths of promise schedules, which the promise store leaves to its caller: cron
// expressions of 5 fields (minute precision), 6 (seconds first) or 7 (a year last), in UTC. When
// day-of-month and day-of-week are both restricted, either matches (as in Vixie cron and the
// job schedules' planner).

const CACHE_LIMIT = 1_000;
const parsed = new Map<string, Cron>();

function cronOf(expression: string, field: string): Cron {
  const cached = parsed.get(expression);
  if (cached !== undefined) return cached;
  if (typeof expression !== "string" || expression.trim().length === 0) throw new InvalidInputError(field, "must be a cron expression of 5 to 7 fields");
  const fields = expression.trim().split(/\s+/).length;
  if (fields < 5 || fields > 7) throw new InvalidInputError(field, `must be a cron expression of 5 to 7 fields, got ${fields}`);
  let cron: Cron;
  try {
    cron = new Cron(expression, { timezone: "UTC", mode: "auto", paused: true, domAndDow: false });
    // croner defers some errors to the first evaluation.
    cron.nextRun(new Date(0));
  } catch (error) {
    throw new InvalidInputError(field, error instanceof Error ? error.message : String(error));
  }
  if (parsed.size >= CACHE_LIMIT) parsed.delete(parsed.keys().next().value!);
  parsed.set(expression, cron);
  return cron;
}

/**
 * The first occurrence of `expression` strictly after `after`, or `null` when there is none
 * before the end of the representable range (a 7-field expression whose years are past).
 * Throws `InvalidInputError` naming `field` for an expression that does not parse.
 */
export function nextOccurrence(expression: string, after: Instant, field = "cron"): Instant | null {
  const next = cronOf(expression, field).nextRun(new Date(after));
  if (next === null) return null;
  const at = next.getTime();
  return at > MAX_INSTANT ? null : at;
}
