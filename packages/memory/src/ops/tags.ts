import {
  type FacetRequest, type FacetValue, type SuggestTagsRequest, type Tag, type TagSuggestion, type TagSuggestionPage,
  clampToBound, compareCodePoints, compareSuggestionText, decodeSuggestCursor, encodeSuggestCursor, foldAscii,
} from "@belay/contract";
import type { JobRow, MemoryState } from "../state.js";
import type { UndoLog } from "../undo-log.js";
import { matchesFilter, namedJobs } from "./filters.js";

/** Adds `delta` to the jobs carrying `tag` (what suggestions read). */
export function countTag(state: MemoryState, undo: UndoLog, tag: Tag, delta: number): void {
  const key = `${tag.key}\u0000${tag.value}`;
  const next = (state.tagJobs.get(key) ?? 0) + delta;
  if (next === 0) undo.mapDelete(state.tagJobs, key);
  else undo.mapSet(state.tagJobs, key, next);
}

/** Adds tags to a job (already validated and de-duplicated against themselves). */
export function addTags(state: MemoryState, undo: UndoLog, row: JobRow, tags: readonly Tag[]): void {
  const fresh = tags.filter((t) => !row.tags.some((o) => o.key === t.key && o.value === t.value));
  if (fresh.length === 0) return;
  undo.patch(row, { tags: [...row.tags, ...fresh] });
  for (const tag of fresh) countTag(state, undo, tag, 1);
}

/** The tags `row` would carry with `tags` added (for checking the per-job bound first). */
export function unionTagCount(row: JobRow, tags: readonly Tag[]): number {
  return row.tags.length + tags.filter((t) => !row.tags.some((o) => o.key === t.key && o.value === t.value)).length;
}

/** See `JobStore.facetTags`. */
export function facetTags(state: MemoryState, request: FacetRequest): FacetValue[] {
  const counts = new Map<string, number>();
  const scoped = request.scope === undefined ? undefined : namedJobs(state, request.scope);
  for (const row of scoped ?? state.jobs.values()) {
    if (request.scope && !matchesFilter(row, request.scope)) continue;
    for (const tag of row.tags) {
      if (tag.key === request.key) counts.set(tag.value, (counts.get(tag.value) ?? 0) + 1);
    }
  }
  const values = [...counts].map(([value, count]) => ({ value, count }));
  values.sort((a, b) => b.count - a.count || compareCodePoints(a.value, b.value));
  return request.max === undefined ? values : values.slice(0, request.max);
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
