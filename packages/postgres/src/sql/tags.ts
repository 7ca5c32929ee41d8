import {
  type FacetRequest, type FacetValue, type SuggestTagsRequest, type TagSuggestion, type TagSuggestionPage, clampToBound,
  decodeSuggestCursor, encodeSuggestCursor, foldAscii,
} from "@belay/contract";
import type { StoreContext } from "../context.js";
import { adHoc } from "../session.js";
import { filterSql } from "./filters.js";

/** The statement of a facet: distinct jobs per value of `request.key` within the scope (built per call, never prepared). */
export function facetTagsQuery(S: string, request: FacetRequest): { text: string; values: unknown[] } {
  const values: unknown[] = [request.key];
  const { from, conditions } = request.scope === undefined ? { from: `${S}.jobs j`, conditions: [] } : filterSql(S, request.scope, values);
  let limit = "";
  if (request.max !== undefined) {
    values.push(Math.floor(request.max));
    limit = `LIMIT $${values.length}`;
  }
  const text = `SELECT t.value, count(*) AS count
    FROM ${S}.job_tags t JOIN ${from} ON j.seq = t.job_seq
    WHERE t.key = $1 ${conditions.map((c) => `AND ${c}`).join(" ")}
    GROUP BY t.value ORDER BY count(*) DESC, t.value ${limit}`;
  return { text, values };
}

/** See `JobStore.facetTags`: distinct jobs per value, count descending then value in code-point order. */
export async function facetTags(ctx: StoreContext, request: FacetRequest): Promise<FacetValue[]> {
  const { text, values } = facetTagsQuery(ctx.sql.schema, request);
  const rows = await ctx.executor.run("facetTags", "autocommit", (s) => s.query(adHoc(text), values));
  return rows.map((row) => ({ value: row["value"] as string, count: row["count"] as number }));
}

// ASCII-only case folding in SQL, the same as `foldAscii` (lower() would fold other letters too).
const FOLD = (expr: string) => `translate(${expr}, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz')`;

// Stage 0: labels; 1: keys; 2: values of one key. Ordered by folded text, then exact text, both
// in code-point order (the columns use the "C" collation); the prefix is literal.
const SUGGEST = (S: string, stage: 0 | 1 | 2): string => {
  const column = stage === 1 ? "key" : "value";
  const scope = stage === 0 ? "key = ''" : stage === 1 ? "key <> ''" : "key = $4";
  return `SELECT DISTINCT ${column} AS text, ${FOLD(column)} AS folded FROM ${S}.job_tags
    WHERE ${scope} AND starts_with(${FOLD(column)}, $1)
      AND ($2::text IS NULL OR (${FOLD(column)}, ${column}) > (${FOLD("$2::text")} COLLATE "C", $2::text COLLATE "C"))
    ORDER BY folded, text LIMIT $3`;
};

/** See `JobStore.suggestTags`. */
export async function suggestTags(ctx: StoreContext, request: SuggestTagsRequest): Promise<TagSuggestionPage> {
  const max = clampToBound(request.max ?? ctx.bounds.suggestWindow, ctx.bounds.suggestWindow);
  const prefix = foldAscii(request.prefix);
  const cursor = request.after === undefined ? undefined : decodeSuggestCursor(request.after);
  const stages: (0 | 1 | 2)[] = request.key !== undefined ? [2] : [0, 1];
  const suggestions: TagSuggestion[] = [];
  let last: { stage: 0 | 1 | 2; text: string } | undefined;
  let more = false;
  await ctx.executor.run("suggestTags", "autocommit", async (session) => {
    for (const stage of stages) {
      if (cursor && stage < cursor.stage) continue;
      const after = cursor && stage === cursor.stage ? cursor.text : null;
      const values: unknown[] = [prefix, after, max + 1 - suggestions.length];
      if (stage === 2) values.push(request.key);
      const rows = await session.query(
        ctx.sql.get(`suggest${stage}`, (S) => SUGGEST(S, stage)),
        values,
      );
      for (const row of rows) {
        if (suggestions.length === max) {
          more = true;
          return;
        }
        const text = row["text"] as string;
        suggestions.push(
          stage === 0 ? { kind: "label", value: text } : stage === 1 ? { kind: "key", key: text } : { kind: "value", key: request.key!, value: text },
        );
        last = { stage, text };
      }
    }
  });
  return { suggestions, nextCursor: more && last ? encodeSuggestCursor(last.stage, last.text) : null };
}
