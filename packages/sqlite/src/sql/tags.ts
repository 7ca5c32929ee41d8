import {
  type FacetRequest, type FacetValue, type SuggestTagsRequest, type Tag, type TagSuggestion, type TagSuggestionPage,
  clampToBound, decodeSuggestCursor, encodeSuggestCursor, foldAscii,
} from "@belay/contract";
import { type Io, exec } from "../io.js";
import type { Tables } from "../tables.js";
import type { ReadContext } from "../transaction.js";
import { filterSql } from "./filters.js";

// A job's tags are rows of the tags table in the order they were added; the tag counts table
// keeps one row per distinct (key, value) with its ASCII-folded text, what suggestions read.

const INSERT_TAG = (t: Tables) => `INSERT INTO ${t.tags} (job_seq, ordinal, key, value) VALUES (?, ?, ?, ?)`;

const COUNT_TAG = (t: Tables) => `INSERT INTO ${t.tagCounts} (key, value, key_fold, value_fold, jobs)
  VALUES (?, ?, ?, ?, 1) ON CONFLICT (key, value) DO UPDATE SET jobs = jobs + 1`;

const TAGS_OF = (t: Tables) => `SELECT key, value FROM ${t.tags} WHERE job_seq = ? ORDER BY ordinal`;

/** Appends tags to a job (de-duplicated against it already), numbering them after `existing`. */
export function* insertTags(seq: number, existing: number, tags: readonly Tag[]): Io<void> {
  for (const [i, tag] of tags.entries()) {
    yield* exec(INSERT_TAG, seq, existing + i + 1, tag.key, tag.value);
    yield* exec(COUNT_TAG, tag.key, tag.value, foldAscii(tag.key), foldAscii(tag.value));
  }
}

/** The tags a job carries, in order. */
export function tagsOf(ctx: ReadContext, seq: number): Tag[] {
  return ctx.q.get(TAGS_OF).all(seq) as Tag[];
}

/**
 * See `JobStore.facetTags`: distinct jobs per value (a job carries a tag at most once), count
 * descending, then value by code point (SQLite's binary collation compares UTF-8 bytes).
 */
export function facetTags(ctx: ReadContext, request: FacetRequest): FacetValue[] {
  const filter = filterSql(ctx.q.t.tags, request.scope ?? {});
  // Scoped to named jobs, the read starts from them (see `filterSql`), not from every tag of the key.
  const conditions = [filter.byIds ? "+f.key = ?" : "f.key = ?", ...filter.conditions];
  const limited = request.max !== undefined;
  const rows = ctx.q
    .shaped(
      `facet:${filter.shape}:${limited}`,
      (t) => `SELECT f.value, count(*) AS count FROM ${t.tags} f JOIN ${t.jobs} j ON j.seq = f.job_seq
        WHERE ${conditions.join(" AND ")} GROUP BY f.value ORDER BY count DESC, f.value ${limited ? "LIMIT ?" : ""}`,
    )
    .all(request.key, ...filter.params, ...(limited ? [Math.floor(request.max!)] : [])) as FacetValue[];
  return rows.map((row) => ({ value: row.value, count: row.count }));
}

/**
 * The smallest string greater than every string that starts with `prefix` (in code-point order),
 * or `null` when there is none: the last code point raised by one (skipping the surrogate range),
 * dropping trailing U+10FFFF. With it a literal prefix becomes an index range — no LIKE, so `%`,
 * `_` and `\` are ordinary characters.
 */
export function prefixUpperBound(prefix: string): string | null {
  const points = [...prefix];
  while (points.length > 0) {
    const last = points.pop()!.codePointAt(0)!;
    if (last < 0x10ffff) {
      points.push(String.fromCodePoint(last === 0xd7ff ? 0xe000 : last + 1));
      return points.join("");
    }
  }
  return null;
}

type Stage = 0 | 1 | 2;

/**
 * One stage of suggestions from the tag counts table: labels (0), keys (1) or one key's values
 * (2), whose ASCII-folded text starts with the folded prefix, ordered by folded then exact text
 * (binary collation: code-point order), after the cursor.
 */
function stageRows(
  ctx: ReadContext,
  stage: Stage,
  key: string | undefined,
  range: { lower: string; upper: string | null },
  after: string | null,
  limit: number,
): string[] {
  const text = stage === 1 ? "key" : "value";
  const fold = stage === 1 ? "key_fold" : "value_fold";
  const conditions = [stage === 0 ? "key = ''" : stage === 1 ? "key <> ''" : "key = ?", `${fold} >= ?`];
  const params: unknown[] = stage === 2 ? [key, range.lower] : [range.lower];
  if (range.upper !== null) {
    conditions.push(`${fold} < ?`);
    params.push(range.upper);
  }
  if (after !== null) {
    conditions.push(`(${fold} > ? OR (${fold} = ? AND ${text} > ?))`);
    const afterFold = foldAscii(after);
    params.push(afterFold, afterFold, after);
  }
  const rows = ctx.q
    .shaped(
      `suggest:${stage}:${range.upper !== null}:${after !== null}`,
      (t) => `SELECT DISTINCT ${fold} AS fold, ${text} AS text FROM ${t.tagCounts}
        WHERE ${conditions.join(" AND ")} ORDER BY fold, text LIMIT ?`,
    )
    .all(...params, limit) as { text: string }[];
  return rows.map((row) => row.text);
}

/** See `JobStore.suggestTags`: labels then keys (or one key's values), with a keyset cursor. */
export function suggestTags(ctx: ReadContext, request: SuggestTagsRequest): TagSuggestionPage {
  const { suggestWindow } = ctx.bounds;
  const max = clampToBound(request.max ?? suggestWindow, suggestWindow);
  const lower = foldAscii(request.prefix);
  const range = { lower, upper: prefixUpperBound(lower) };
  const cursor = request.after === undefined ? undefined : decodeSuggestCursor(request.after);
  const { key } = request;
  const stages: { stage: Stage; make: (text: string) => TagSuggestion }[] =
    key !== undefined
      ? [{ stage: 2, make: (value) => ({ kind: "value", key, value }) }]
      : [
          { stage: 0, make: (value) => ({ kind: "label", value }) },
          { stage: 1, make: (k) => ({ kind: "key", key: k }) },
        ];
  const suggestions: TagSuggestion[] = [];
  let last: { stage: Stage; text: string } | undefined;
  let more = false;
  for (const { stage, make } of stages) {
    if (cursor && stage < cursor.stage) continue;
    const after = cursor && stage === cursor.stage ? cursor.text : null;
    // One row past what fits tells whether another page follows.
    const texts = stageRows(ctx, stage, key, range, after, max - suggestions.length + 1);
    for (const text of texts) {
      if (suggestions.length === max) {
        more = true;
        break;
      }
      suggestions.push(make(text));
      last = { stage, text };
    }
    if (more) break;
  }
  return { suggestions, nextCursor: more && last ? encodeSuggestCursor(last.stage, last.text) : null };
}
