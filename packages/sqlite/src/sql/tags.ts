import {
  type Bounds,
  type SuggestTagsRequest,
  type TagSuggestion,
  type TagSuggestionPage,
  clampToBound,
  decodeSuggestCursor,
  encodeSuggestCursor,
  foldAscii,
} from "@belay/contract";
import type { Statements } from "../connection.js";

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
  q: Statements,
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
  const rows = q
    .shaped(
      `suggest:${stage}:${range.upper !== null}:${after !== null}`,
      (t) => `SELECT DISTINCT ${fold} AS fold, ${text} AS text FROM ${t.tagCounts}
        WHERE ${conditions.join(" AND ")} ORDER BY fold, text LIMIT ?`,
    )
    .all(...params, limit) as { text: string }[];
  return rows.map((row) => row.text);
}

/** See `JobStore.suggestTags`: labels then keys (or one key's values), with a keyset cursor. */
export function suggestTags(q: Statements, bounds: Readonly<Bounds>, request: SuggestTagsRequest): TagSuggestionPage {
  const max = clampToBound(request.max ?? bounds.suggestWindow, bounds.suggestWindow);
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
    const texts = stageRows(q, stage, key, range, after, max - suggestions.length + 1);
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
