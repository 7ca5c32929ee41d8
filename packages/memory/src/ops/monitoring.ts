import {
  type DependencyEdges,
  type FacetRequest,
  type FacetValue,
  type JobCount,
  type JobFilter,
  type JobPage,
  type JobState,
  type JobSummary,
  type ListJobsRequest,
  type SuggestTagsRequest,
  type TagPredicate,
  type TagSuggestion,
  type TagSuggestionPage,
  JOB_STATE_CODES,
  clampToBound,
  compareCodePoints,
  compareSuggestionText,
  decodeSeqCursor,
  decodeSuggestCursor,
  encodeSeqCursor,
  encodeSuggestCursor,
  foldAscii,
  isTerminalState,
} from "@belay/contract";
import { toSummary } from "../jobs.js";
import type { JobRow, MemoryState } from "../state.js";

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

/** See `JobStore.listJobs`. */
export function listJobs(state: MemoryState, request: ListJobsRequest): JobPage {
  const limit = clampToBound(request.limit ?? state.bounds.monitorPage, state.bounds.monitorPage);
  const descending = request.order === "newestFirst";
  const after = request.after === undefined ? undefined : { at: 0, seq: decodeSeqCursor(request.after) };
  const jobs: JobSummary[] = [];
  let more = false;
  for (const entry of state.bySeq.after(after, descending)) {
    const row = state.jobs.get(entry.id)!;
    if (!matchesFilter(row, request)) continue;
    if (jobs.length === limit) {
      more = true;
      break;
    }
    jobs.push(toSummary(row));
  }
  const last = jobs.at(-1);
  return { jobs, nextCursor: more && last ? encodeSeqCursor(last.seq) : null };
}

/** See `JobStore.countJobs`. */
export function countJobs(state: MemoryState): JobCount[] {
  const counts: JobCount[] = [];
  for (const [key, count] of state.counts) {
    const [queue, jobState] = key.split("\u0000") as [string, JobState];
    counts.push({ queue, state: jobState, count });
  }
  return counts.sort(
    (a, b) => compareCodePoints(a.queue, b.queue) || JOB_STATE_CODES[a.state] - JOB_STATE_CODES[b.state],
  );
}

/** See `JobStore.getDependencies`. */
export function getDependencies(state: MemoryState, jobId: string): DependencyEdges | null {
  const row = state.jobs.get(jobId);
  if (row === undefined) return null;
  const parents = row.parentIds.flatMap((id) => {
    const parent = state.jobs.get(id);
    return parent ? [{ jobId: id, state: parent.state, gating: !isTerminalState(parent.state) }] : [];
  });
  const children = row.children.flatMap((id) => {
    const child = state.jobs.get(id);
    return child ? [{ jobId: id, state: child.state }] : [];
  });
  return { parents, children };
}

/** See `JobStore.facetTags`. */
export function facetTags(state: MemoryState, request: FacetRequest): FacetValue[] {
  const counts = new Map<string, number>();
  for (const row of state.jobs.values()) {
    if (request.scope && !matchesFilter(row, request.scope)) continue;
    for (const tag of row.tags) {
      if (tag.key === request.key) counts.set(tag.value, (counts.get(tag.value) ?? 0) + 1);
    }
  }
  const values = [...counts].map(([value, count]) => ({ value, count }));
  values.sort((a, b) => b.count - a.count || compareCodePoints(a.value, b.value));
  return request.max === undefined ? values : values.slice(0, Math.max(0, Math.floor(request.max)));
}

/** See `JobStore.suggestTags`. */
export function suggestTags(state: MemoryState, request: SuggestTagsRequest): TagSuggestionPage {
  const max = clampToBound(request.max ?? state.bounds.suggestWindow, state.bounds.suggestWindow);
  const prefix = foldAscii(request.prefix);
  const cursor = request.after === undefined ? undefined : decodeSuggestCursor(request.after);
  const labels = new Set<string>();
  const keys = new Set<string>();
  const values = new Set<string>();
  for (const key of state.tagJobs.keys()) {
    const [tagKey, value] = key.split("\u0000") as [string, string];
    if (request.key !== undefined) {
      if (tagKey === request.key && foldAscii(value).startsWith(prefix)) values.add(value);
    } else if (tagKey === "") {
      if (foldAscii(value).startsWith(prefix)) labels.add(value);
    } else if (foldAscii(tagKey).startsWith(prefix)) keys.add(tagKey);
  }
  const stages: { stage: 0 | 1 | 2; texts: string[]; make: (text: string) => TagSuggestion }[] =
    request.key !== undefined
      ? [{ stage: 2, texts: [...values], make: (value) => ({ kind: "value", key: request.key!, value }) }]
      : [
          { stage: 0, texts: [...labels], make: (value) => ({ kind: "label", value }) },
          { stage: 1, texts: [...keys], make: (key) => ({ kind: "key", key }) },
        ];
  const suggestions: TagSuggestion[] = [];
  let last: { stage: 0 | 1 | 2; text: string } | undefined;
  let more = false;
  outer: for (const { stage, texts, make } of stages) {
    if (cursor && stage < cursor.stage) continue;
    texts.sort(compareSuggestionText);
    for (const text of texts) {
      if (cursor && stage === cursor.stage && compareSuggestionText(text, cursor.text) <= 0) continue;
      if (suggestions.length === max) {
        more = true;
        break outer;
      }
      suggestions.push(make(text));
      last = { stage, text };
    }
  }
  return { suggestions, nextCursor: more && last ? encodeSuggestCursor(last.stage, last.text) : null };
}
