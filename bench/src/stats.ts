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

/** p50, p95, p99 and the maximum of a latency sample, in ms to two decimals (sorts `latencies` in place). */
export function latencyPercentiles(latencies: number[]): { p50_ms: number | null; p95_ms: number | null; p99_ms: number | null; max_ms: number | null } {
  const sorted = latencies.sort((a, b) => a - b);
  return { p50_ms: round2(percentile(sorted, 50)), p95_ms: round2(percentile(sorted, 95)), p99_ms: round2(percentile(sorted, 99)), max_ms: round2(sorted.at(-1) ?? null) };
}

/** Each operation kind's median time, in ms to two decimals (sorts the lists in place). */
export function p50PerKind(times: ReadonlyMap<string, number[]>): Record<string, number | null> {
  const out: Record<string, number | null> = {};
  for (const [kind, list] of times) out[kind] = round2(percentile(list.sort((a, b) => a - b), 50));
  return out;
}
