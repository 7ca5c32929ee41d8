import type { JobFilter, TagPredicate } from "@belay/contract";
import type { JobRow } from "../state.js";

// The job filters of listings, facets and scopes, as predicates over a row. The front has
// checked the filter's shape, so every field present here is well-formed.

function matchesTag(row: JobRow, predicate: TagPredicate): boolean {
  if ("label" in predicate) return row.tags.some((t) => t.key === "" && t.value === predicate.label);
  if ("value" in predicate) return row.tags.some((t) => t.key === predicate.key && t.value === predicate.value);
  return row.tags.some((t) => t.key === predicate.key);
}

/** Whether a job passes every part of a filter. */
export function matchesFilter(row: JobRow, filter: JobFilter): boolean {
  if (filter.states && !filter.states.includes(row.state)) return false;
  if (filter.queues && !filter.queues.includes(row.queue)) return false;
  if (filter.jobNames && !filter.jobNames.includes(row.jobName)) return false;
  if (filter.scheduleId !== undefined && row.scheduleId !== filter.scheduleId) return false;
  if (filter.workflowId !== undefined && row.workflowId !== filter.workflowId) return false;
  return (filter.tags ?? []).every((p) => matchesTag(row, p));
}
