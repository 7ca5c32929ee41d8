import { JOB_STATES, type JobCount, type JobState, type JobStore, type QueueSettings } from "@belay/contract";
import type { JobCatalog } from "../operations/catalog.js";

/** One queue as the dashboard and `GET /queues` show it: settings and depth per state. */
export interface QueueOverview {
  readonly queue: string;
  readonly paused: boolean;
  readonly concurrencyLimit: number | null;
  readonly counts: Readonly<Record<JobState, number>>;
  /** Jobs not yet terminal: scheduled, awaiting parents and leased. */
  readonly live: number;
  readonly total: number;
}

/** Zero for every state. */
export function emptyCounts(): Record<JobState, number> {
  return Object.fromEntries(JOB_STATES.map((s) => [s, 0])) as Record<JobState, number>;
}

/** Totals per state across queues. */
export function totalsOf(counts: readonly JobCount[]): Record<JobState, number> {
  const totals = emptyCounts();
  for (const row of counts) totals[row.state] += row.count;
  return totals;
}

/**
 * Every queue the server can name — with jobs, with stored settings, or defaulted to by a known
 * job type or a schedule — by name.
 */
export function queueOverviews(
  counts: readonly JobCount[],
  settings: readonly QueueSettings[],
  extraQueues: readonly string[] = [],
): QueueOverview[] {
  const byQueue = new Map<string, { settings: QueueSettings | null; counts: Record<JobState, number> }>();
  const entry = (queue: string) => {
    let found = byQueue.get(queue);
    if (found === undefined) {
      found = { settings: null, counts: emptyCounts() };
      byQueue.set(queue, found);
    }
    return found;
  };
  for (const row of counts) entry(row.queue).counts[row.state] += row.count;
  for (const row of settings) entry(row.queue).settings = row;
  for (const queue of extraQueues) entry(queue);
  return [...byQueue.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([queue, { settings: s, counts: c }]) => ({
      queue,
      paused: s?.paused ?? false,
      concurrencyLimit: s?.concurrencyLimit ?? null,
      counts: c,
      live: c.scheduled + c.awaitingParents + c.leased,
      total: JOB_STATES.reduce((n, state) => n + c[state], 0),
    }));
}

/** Reads counts, settings and schedules and merges them with the catalog's queues. */
export async function loadQueueOverviews(store: JobStore, catalog: JobCatalog): Promise<QueueOverview[]> {
  const [counts, settings, schedules] = await Promise.all([store.countJobs(), store.listQueueSettings(), store.listSchedules()]);
  return queueOverviews(counts, settings, [...catalog.queues, ...schedules.map((s) => s.queue)]);
}
