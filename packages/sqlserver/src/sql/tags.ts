import {
  type FacetRequest, type FacetValue, type SuggestTagsRequest, type TagSuggestion, type TagSuggestionPage, clampToBound,
  decodeSuggestCursor, encodeSuggestCursor, foldAscii,
} from "@belay/contract";
import type { StoreContext } from "../context.js";
import { key, textOfKey, toInt } from "../keys.js";
import { COLUMN_BYTES } from "../sqlserver-store-config.js";
import { statement } from "../statements.js";
import { FILTER_PARAMS, FILTER_SQL, filterValues } from "./filters.js";

const TAG_KEY = `varbinary(${COLUMN_BYTES.tagKey})`;
const TAG_VALUE = `varbinary(${COLUMN_BYTES.tagValue})`;

/** Distinct jobs per value of one key within the scope; count descending, then value in code point order (binary). */
const FACET = statement(
  "facetTags",
  { ...FILTER_PARAMS, key: TAG_KEY, max: "int" },
  (S) => `SELECT TOP (@max) t.tag_value AS value, COUNT_BIG(*) AS n
FROM ${S}.job_tags AS t INNER JOIN ${S}.jobs AS j ON j.seq = t.job_seq
WHERE t.tag_key = @key AND ${FILTER_SQL(S)}
GROUP BY t.tag_value ORDER BY COUNT_BIG(*) DESC, t.tag_value`,
);

/** See `JobStore.facetTags`. */
export async function facetTags(ctx: StoreContext, request: FacetRequest): Promise<FacetValue[]> {
  if (Buffer.byteLength(request.key, "utf8") > COLUMN_BYTES.tagKey) return [];
  const filter = filterValues(request.scope ?? {});
  if (filter === null) return [];
  const max = request.max === undefined ? 2_147_483_647 : Math.min(Math.floor(request.max), 2_147_483_647);
  const rows = await ctx.executor.read("facetTags", (s) => s.rows(FACET, { ...filter, key: key(request.key), max }));
  return rows.map((row) => ({ value: textOfKey(row["value"]), count: toInt(row["n"]) }));
}

// Stage 0: labels; 1: keys; 2: values of one key. Ordered by ASCII-folded text, then exact text,
// both as UTF-8 bytes (code point order); the folded prefix is matched literally on the folded bytes.
const suggest = (stage: 0 | 1 | 2) => {
  const text = stage === 1 ? "t.tag_key" : "t.tag_value";
  const folded = stage === 1 ? "t.key_folded" : "t.value_folded";
  const scope = stage === 0 ? "t.tag_key = 0x" : stage === 1 ? "t.tag_key <> 0x" : "t.tag_key = @key";
  return statement(
    `suggestTags${stage}`,
    { prefix: TAG_VALUE, afterFolded: TAG_VALUE, afterText: TAG_VALUE, n: "int", ...(stage === 2 ? { key: TAG_KEY } : {}) },
    (S) => `SELECT DISTINCT TOP (@n) ${text} AS text, ${folded} AS folded FROM ${S}.job_tags AS t
WHERE ${scope} AND SUBSTRING(${folded}, 1, DATALENGTH(@prefix)) = @prefix
  AND (@afterText IS NULL OR ${folded} > @afterFolded OR (${folded} = @afterFolded AND ${text} > @afterText))
ORDER BY folded, text`,
  );
};
const SUGGEST = [suggest(0), suggest(1), suggest(2)] as const;

/** See `JobStore.suggestTags`. */
export async function suggestTags(ctx: StoreContext, request: SuggestTagsRequest): Promise<TagSuggestionPage> {
  const max = clampToBound(request.max ?? ctx.bounds.suggestWindow, ctx.bounds.suggestWindow);
  const cursor = request.after === undefined ? undefined : decodeSuggestCursor(request.after);
  const stages: (0 | 1 | 2)[] = request.key !== undefined ? [2] : [0, 1];
  const suggestions: TagSuggestion[] = [];
  let last: { stage: 0 | 1 | 2; text: string } | undefined;
  let more = false;
  if (Buffer.byteLength(request.prefix, "utf8") > COLUMN_BYTES.tagValue) return { suggestions, nextCursor: null };
  if (request.key !== undefined && Buffer.byteLength(request.key, "utf8") > COLUMN_BYTES.tagKey) return { suggestions, nextCursor: null };
  await ctx.executor.read("suggestTags", async (session) => {
    for (const stage of stages) {
      if (cursor && stage < cursor.stage) continue;
      const after = cursor && stage === cursor.stage ? cursor.text : null;
      const values: Record<string, unknown> = {
        prefix: key(foldAscii(request.prefix)),
        afterFolded: after === null ? null : key(foldAscii(after)),
        afterText: after === null ? null : key(after),
        n: max + 1 - suggestions.length,
      };
      if (stage === 2) values["key"] = key(request.key!);
      for (const row of await session.rows(SUGGEST[stage], values)) {
        if (suggestions.length === max) {
          more = true;
          return;
        }
        const text = textOfKey(row["text"]);
        suggestions.push(stage === 0 ? { kind: "label", value: text } : stage === 1 ? { kind: "key", key: text } : { kind: "value", key: request.key!, value: text });
        last = { stage, text };
      }
    }
  });
  return { suggestions, nextCursor: more && last ? encodeSuggestCursor(last.stage, last.text) : null };
}
