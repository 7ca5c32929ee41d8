// The number formatting and tables the promise benchmarks' summaries share.

/** A number with as many decimals as its size deserves (2 below 10, 1 below 100, none above); `–` for none. */
export const fmt = (x: number | null | undefined): string =>
  x == null ? "–" : Math.abs(x) >= 100 ? String(Math.round(x)) : Math.abs(x) >= 10 ? (Math.round(x * 10) / 10).toFixed(1) : (Math.round(x * 100) / 100).toFixed(2);

/** The finite number at a dotted `path` of a record, or `null`. */
export function num(record: object | undefined, path: string): number | null {
  let v: unknown = record;
  for (const k of path.split(".")) v = v == null ? undefined : (v as Record<string, unknown>)[k];
  return typeof v === "number" && Number.isFinite(v) ? v : null;
}

/** `min–max` of the numbers present, or `–`. */
export function spread(xs: readonly (number | null)[]): string {
  const s = xs.filter((x): x is number => x !== null);
  return s.length ? `${fmt(Math.min(...s))}–${fmt(Math.max(...s))}` : "–";
}

/** A markdown table, its first column left-aligned and the others right-aligned. */
export const table = (head: readonly string[], rows: readonly (readonly string[])[]): string =>
  [`| ${head.join(" | ")} |`, `| ${head.map((_, i) => (i === 0 ? "---" : "---:")).join(" | ")} |`, ...rows.map((r) => `| ${r.join(" | ")} |`)].join("\n");
