import { InvalidInputError } from "./errors.js";
import type { JobState, JobSummary } from "./job.js";

/**
 * A tag predicate. `{ label }` — has the label; `{ key, value }` — has that keyed tag;
 * `{ key }` — has some value under the key. Predicates in one filter are AND-ed.
 */
export type TagPredicate =
  | { readonly label: string }
  | { readonly key: string; readonly value: string }
  | { readonly key: string };

/** Which jobs a listing, count or facet looks at. Every field narrows; lists are OR-ed within a field. */
export interface JobFilter {
  /** Only these jobs (at most `bounds.monitorPage` ids; unknown ids match nothing). */
  readonly ids?: readonly string[];
  readonly states?: readonly JobState[];
  readonly queues?: readonly string[];
  readonly jobNames?: readonly string[];
  readonly scheduleId?: string;
  readonly workflowId?: string;
  readonly tags?: readonly TagPredicate[];
}

export interface ListJobsRequest extends JobFilter {
  /** Default `oldestFirst` (ascending `seq`). */
  readonly order?: "oldestFirst" | "newestFirst";
  /** Keyset cursor from a previous page's `nextCursor`, relative to `order`. */
  readonly after?: string;
  /** Clamped to `bounds.monitorPage`; default the bound. */
  readonly limit?: number;
}

export interface JobPage {
  readonly jobs: readonly JobSummary[];
  /** Pass as `after` for the next page; `null` when this page is the last. */
  readonly nextCursor: string | null;
}

/** Jobs per (queue, state); only non-zero counts are listed. */
export interface JobCount {
  readonly queue: string;
  readonly state: JobState;
  readonly count: number;
}

/** A job's dependency edges (immutable once enqueued) with the current states at both ends. */
export interface DependencyEdges {
  readonly parents: readonly {
    readonly jobId: string;
    readonly state: JobState;
    /** The parent is not terminal yet, so it still holds the child back. */
    readonly gating: boolean;
  }[];
  readonly children: readonly { readonly jobId: string; readonly state: JobState }[];
}

export interface FacetRequest {
  /** `""` facets labels; any other key facets that key's values. */
  readonly key: string;
  /** Restrict the population first; the same filter `listJobs` takes. */
  readonly scope?: JobFilter;
  /** Keep the top `max` values by count (after counting). */
  readonly max?: number;
}

/** Distinct jobs per value, count descending then value ascending (code-point order). */
export interface FacetValue {
  readonly value: string;
  readonly count: number;
}

export interface SuggestTagsRequest {
  /** Literal prefix (no wildcards; `%`, `_` and `\` are ordinary characters), ASCII case-insensitive. */
  readonly prefix: string;
  /** Omit: labels, then keys. Given: that key's values. */
  readonly key?: string;
  /** Keyset cursor from a previous page's `nextCursor`. */
  readonly after?: string;
  /** An integer ≥ 1 (else `InvalidInputError`), clamped to `bounds.suggestWindow`; default the window. */
  readonly max?: number;
}

/** One completion. Ordered by ASCII-folded text, then by exact text; labels before keys. */
export type TagSuggestion =
  | { readonly kind: "label"; readonly value: string }
  | { readonly kind: "key"; readonly key: string }
  | { readonly kind: "value"; readonly key: string; readonly value: string };

export interface TagSuggestionPage {
  readonly suggestions: readonly TagSuggestion[];
  readonly nextCursor: string | null;
}

/** The cursor after the row with `seq`. */
export function encodeSeqCursor(seq: number): string {
  return `s${seq.toString(36)}`;
}

/** The `seq` a cursor from {@link encodeSeqCursor} points after; throws `InvalidInputError` for any other text. */
export function decodeSeqCursor(cursor: string, field = "after"): number {
  if (typeof cursor !== "string" || !/^s[0-9a-z]{1,11}$/.test(cursor)) {
    throw new InvalidInputError(field, "not a cursor this store issued");
  }
  const seq = Number.parseInt(cursor.slice(1), 36);
  if (!Number.isSafeInteger(seq)) throw new InvalidInputError(field, "not a cursor this store issued");
  return seq;
}

/** ASCII-only lower-casing: the case folding of tag suggestions (other characters compare exactly). */
export function foldAscii(text: string): string {
  return text.replace(/[A-Z]+/g, (upper) => upper.toLowerCase());
}

/** The order of suggestions: ASCII-folded text first, then exact text, both by code point. */
export function compareSuggestionText(a: string, b: string): number {
  return compareCodePoints(foldAscii(a), foldAscii(b)) || compareCodePoints(a, b);
}

/**
 * Orders strings by Unicode code point — the order of UTF-8 bytes, which is what SQL stores
 * compare under a binary collation (JavaScript's `<` compares UTF-16 code units instead).
 */
export function compareCodePoints(a: string, b: string): number {
  if (a === b) return 0;
  const length = Math.min(a.length, b.length);
  for (let i = 0; i < length; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x === y) continue;
    // Surrogates (U+D800..U+DFFF) encode code points above U+FFFF: they sort after U+E000..U+FFFF.
    const xs = x >= 0xd800 && x <= 0xdfff;
    const ys = y >= 0xd800 && y <= 0xdfff;
    if (xs !== ys) return xs ? 1 : -1;
    return x < y ? -1 : 1;
  }
  return a.length - b.length;
}

/** The cursor after a suggestion. Stage 0 = labels, 1 = keys, 2 = values of one key. */
export function encodeSuggestCursor(stage: 0 | 1 | 2, text: string): string {
  return `t${stage}${encodeURIComponent(text)}`;
}

/** Decodes {@link encodeSuggestCursor}; throws `InvalidInputError` for any other text. */
export function decodeSuggestCursor(cursor: string, field = "after"): { stage: 0 | 1 | 2; text: string } {
  if (typeof cursor !== "string" || !/^t[012]/.test(cursor)) {
    throw new InvalidInputError(field, "not a cursor this store issued");
  }
  try {
    return { stage: Number(cursor[1]) as 0 | 1 | 2, text: decodeURIComponent(cursor.slice(2)) };
  } catch {
    throw new InvalidInputError(field, "not a cursor this store issued");
  }
}
