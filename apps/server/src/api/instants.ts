import { type Instant, MAX_INSTANT } from "@belay/contract";

// Times the API reads as text. Only one form is accepted: ISO 8601 with a date, a time to the
// second and an explicit offset, `YYYY-MM-DDTHH:mm:ss[.fraction](Z|±HH:mm)`. `Date.parse` is not
// used because it reads far more than that ("1" as 2001-01-01, free-form dates) and rolls
// impossible dates over (Feb 31 to March 3rd); here every field is checked against its range.

/** The text form of a time, as a regular expression (also the `pattern` in the OpenAPI document). */
export const ISO_INSTANT_PATTERN = "^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d{1,9})?(Z|[+-]\\d{2}:\\d{2})$";

const FORM = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?:(Z)|([+-])(\d{2}):(\d{2}))$/;

/** How the text form reads, for messages. */
export const ISO_INSTANT_FORM = "YYYY-MM-DDTHH:mm:ss[.sss](Z|±HH:mm)";

function daysInMonth(year: number, month: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}

/**
 * The instant `text` names, or why it names none: the form is strict ISO 8601 (see
 * {@link ISO_INSTANT_FORM}), each field in its range (no February 31st, hour 24 or leap second),
 * the result in [0, `MAX_INSTANT`]. A fraction finer than milliseconds is truncated.
 */
export function parseIsoInstant(text: string): { readonly ok: true; readonly at: Instant } | { readonly ok: false; readonly problem: string } {
  const m = FORM.exec(text);
  if (m === null) return { ok: false, problem: `must be epoch milliseconds or an ISO 8601 time ${ISO_INSTANT_FORM}` };
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  if (month < 1 || month > 12) return { ok: false, problem: `month ${month} does not exist` };
  if (day < 1 || day > daysInMonth(year, month)) return { ok: false, problem: `${m[1]}-${m[2]} has no day ${day}` };
  if (hour > 23 || minute > 59 || second > 59) return { ok: false, problem: `${m[4]}:${m[5]}:${m[6]} is not a time of day` };
  let offsetMinutes = 0;
  if (m[8] !== "Z") {
    const offsetHours = Number(m[10]);
    const offsetMins = Number(m[11]);
    if (offsetHours > 23 || offsetMins > 59) return { ok: false, problem: `${m[9]}${m[10]}:${m[11]} is not a UTC offset` };
    offsetMinutes = (m[9] === "-" ? -1 : 1) * (offsetHours * 60 + offsetMins);
  }
  const millis = m[7] === undefined ? 0 : Number(m[7].padEnd(3, "0").slice(0, 3));
  // Date.UTC maps years 0–99 to 1900–1999; set the full year explicitly.
  const date = new Date(Date.UTC(2000, month - 1, day, hour, minute, second, millis));
  date.setUTCFullYear(year);
  const at = date.getTime() - offsetMinutes * 60_000;
  if (!Number.isSafeInteger(at) || at < 0 || at > MAX_INSTANT) {
    return { ok: false, problem: "must be from 1970-01-01T00:00:00Z to 9999-12-31T23:59:59.999Z" };
  }
  return { ok: true, at };
}
