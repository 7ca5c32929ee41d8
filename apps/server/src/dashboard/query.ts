/** Query parameters as ordered pairs (repeatable keys kept). */
export type QueryPairs = readonly (readonly [string, string])[];

/** `path?a=1&b=2` from pairs (no `?` when there are none). */
export function href(path: string, pairs: QueryPairs): string {
  if (pairs.length === 0) return path;
  return `${path}?${pairs.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join("&")}`;
}

/** The pairs of a URL's query. */
export function pairsOf(url: URL): [string, string][] {
  return [...url.searchParams.entries()];
}

/** `pairs` without `keys` (and without any pair equal to `[key, value]` in `drop`). */
export function without(pairs: QueryPairs, keys: readonly string[], drop: readonly (readonly [string, string])[] = []): [string, string][] {
  return pairs.filter(([k, v]) => !keys.includes(k) && !drop.some(([dk, dv]) => dk === k && dv === v)).map(([k, v]) => [k, v]);
}

/** A path safe to redirect to: same-origin, absolute-path only; else `fallback`. */
export function safeBack(value: unknown, fallback = "/"): string {
  if (typeof value !== "string" || !value.startsWith("/") || value.startsWith("//") || value.startsWith("/\\")) return fallback;
  return value;
}
