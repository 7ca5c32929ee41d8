// The order statistics the promise benchmarks report.

/** The `p`-th percentile (nearest rank) of an ascending list, or `null` for an empty one. */
export function percentile(sorted: readonly number[], p: number): number | null {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

/** Rounded to two decimals; `null` for none or a non-finite number. */
export const round2 = (x: number | null): number | null => (x === null || !Number.isFinite(x) ? null : Math.round(x * 100) / 100);

/** The median of the finite numbers present, or `null`. */
export function median(xs: readonly (number | null | undefined)[]): number | null {
  const s = xs.filter((x): x is number => typeof x === "number" && Number.isFinite(x)).sort((a, b) => a - b);
  if (s.length === 0) return null;
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}
