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

// Browsers drop tabs and newlines from a URL and read a backslash as a slash, so "/\t/evil" or
// "/\\evil" would leave this origin; decoding may reveal the same ("/%2F/evil").
const UNSAFE_IN_PATH = /[\\\s\u0000-\u001f\u007f-\u009f]|\/\//;

/**
 * A path safe to redirect to, else `fallback`: it starts with a single "/" and, as given and
 * after percent-decoding, holds no "//", no backslash, no whitespace and no control character.
 */
export function safeBack(value: unknown, fallback = "/"): string {
  if (typeof value !== "string" || !value.startsWith("/") || value.length > 4096) return fallback;
  let decoded: string;
  try {
    decoded = decodeURIComponent(value);
  } catch {
    return fallback;
  }
  if (UNSAFE_IN_PATH.test(value) || !decoded.startsWith("/") || UNSAFE_IN_PATH.test(decoded)) return fallback;
  return value;
}
