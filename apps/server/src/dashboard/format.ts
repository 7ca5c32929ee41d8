import type { JobState, Tag } from "@belay/contract";

/** How each state is named on screen. */
export const STATE_LABELS: Readonly<Record<JobState, string>> = {
  scheduled: "Scheduled",
  awaitingParents: "Awaiting parents",
  leased: "Executing",
  succeeded: "Succeeded",
  cancelled: "Cancelled",
  deadLettered: "Dead-lettered",
  quarantined: "Quarantined",
};

/** The CSS class suffix of each state's colour. */
export const STATE_CLASS: Readonly<Record<JobState, string>> = {
  scheduled: "scheduled",
  awaitingParents: "awaiting",
  leased: "leased",
  succeeded: "succeeded",
  cancelled: "cancelled",
  deadLettered: "dead",
  quarantined: "quarantined",
};

const numberFormat = new Intl.NumberFormat("en-US");

/** `12,345`. */
export function formatCount(n: number): string {
  return numberFormat.format(n);
}

/** `2024-05-01 14:03:07 UTC`. */
export function formatInstant(ms: number): string {
  return `${new Date(ms).toISOString().replace("T", " ").slice(0, 19)} UTC`;
}

/** A duration in the largest sensible unit: `850 ms`, `42 s`, `3 min`, `5 h 12 min`, `2 d 4 h`. */
export function formatDuration(ms: number): string {
  const abs = Math.abs(ms);
  if (abs < 1_000) return `${Math.round(abs)} ms`;
  const s = Math.round(abs / 1_000);
  if (s < 60) return `${s} s`;
  const min = Math.floor(s / 60);
  if (min < 60) return s % 60 === 0 || min >= 10 ? `${min} min` : `${min} min ${s % 60} s`;
  const h = Math.floor(min / 60);
  if (h < 24) return min % 60 === 0 ? `${h} h` : `${h} h ${min % 60} min`;
  const d = Math.floor(h / 24);
  return h % 24 === 0 ? `${d} d` : `${d} d ${h % 24} h`;
}

/** `3 min ago` / `in 42 s` / `just now`, relative to `now`. */
export function formatRelative(ms: number, now: number): string {
  const delta = ms - now;
  if (Math.abs(delta) < 1_000) return "just now";
  return delta < 0 ? `${formatDuration(delta)} ago` : `in ${formatDuration(delta)}`;
}

/** `label` or `key=value`. */
export function tagText(tag: Tag): string {
  return tag.key === "" ? tag.value : `${tag.key}=${tag.value}`;
}

/** A long id shortened in the middle for dense tables (the full id stays in the title and link). */
export function shortId(id: string, max = 26): string {
  if (id.length <= max) return id;
  const head = Math.ceil((max - 1) / 2);
  return `${id.slice(0, head)}…${id.slice(id.length - (max - 1 - head))}`;
}

const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

/** A fire time, compactly: `14:03:10` within a day of `now`, else `May 1 03:00` (UTC). */
export function formatTick(ms: number, now: number): string {
  const d = new Date(ms);
  const clock = d.toISOString().slice(11, 19);
  if (Math.abs(ms - now) < 86_400_000) return clock;
  return `${MONTHS[d.getUTCMonth()]} ${d.getUTCDate()} ${clock.slice(0, 5)}`;
}
