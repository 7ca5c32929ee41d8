import type { JobFilter, TagPredicate } from "@belay/contract";
import type { JobRow, MemoryState } from "../state.js";

// The job filters of listings, facets and scopes, as predicates over a row. The front has
// checked the filter's shape, so every field present here is well-formed.

function matchesTag(row: JobRow, predicate: TagPredicate): boolean {
  if ("label" in predicate) return row.tags.some((t) => t.key === "" && t.value === predicate.label);
  if ("value" in predicate) return row.tags.some((t) => t.key === predicate.key && t.value === predicate.value);
  return row.tags.some((t) => t.key === predicate.key);
}

/** Whether a job passes every part of a filter. */
export function matchesFilter(row: JobRow, filter: JobFilter): boolean {
  if (filter.ids && !filter.ids.includes(row.id)) return false;
  if (filter.states && !filter.states.includes(row.state)) return false;
  if (filter.queues && !filter.queues.includes(row.queue)) return false;
  if (filter.jobNames && !filter.jobNames.includes(row.jobName)) return false;
  if (filter.scheduleId !== undefined && row.scheduleId !== filter.scheduleId) return false;
  if (filter.workflowId !== undefined && row.workflowId !== filter.workflowId) return false;
  return (filter.tags ?? []).every((p) => matchesTag(row, p));
}

/**
 * The jobs a filter's `ids` names (at most a page of them), each once, in listing order (`seq`,
 * oldest first); `undefined` without `ids`. A read with `ids` looks at these instead of every
 * job, so its cost follows the page, not the store.
 */
export function namedJobs(state: MemoryState, filter: JobFilter): JobRow[] | undefined {
  if (filter.ids === undefined) return undefined;
  const rows: JobRow[] = [];
  for (const id of new Set(filter.ids)) {
    const row = state.jobs.get(id);
    if (row !== undefined) rows.push(row);
  }
  return rows.sort((a, b) => a.seq - b.seq);
}
