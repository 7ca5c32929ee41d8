import { describe, expect, it } from "vitest";
import { ThroughputRing } from "./throughput.js";

const T = Date.UTC(2024, 0, 1, 12, 0, 0);

describe("ThroughputRing", () => {
  it("sums per-second counts into buckets, oldest first, the last holding now", () => {
    const ring = new ThroughputRing(60);
    ring.add(T, "succeeded", 2);
    ring.add(T + 1_500, "succeeded");
    ring.add(T + 4_999, "failed", 3);
    ring.add(T + 5_000, "succeeded", 7);
    const series = ring.series(T + 6_000, 5, 3);
    expect(series).toEqual([
      { at: T - 5_000, succeeded: 0, failed: 0 },
      { at: T, succeeded: 3, failed: 3 },
      { at: T + 5_000, succeeded: 7, failed: 0 },
    ]);
  });

  it("forgets seconds older than its window, even when their slot was not reused", () => {
    const ring = new ThroughputRing(10);
    ring.add(T, "succeeded", 5);
    expect(ring.series(T + 9_000, 1, 10).reduce((n, b) => n + b.succeeded, 0)).toBe(5);
    expect(ring.series(T + 10_000, 1, 20).reduce((n, b) => n + b.succeeded, 0)).toBe(0);
    ring.add(T + 10_000, "failed", 1); // same slot as T: the old count is replaced
    expect(ring.series(T + 10_000, 1, 1)).toEqual([{ at: T + 10_000, succeeded: 0, failed: 1 }]);
  });

  it("ignores non-positive amounts", () => {
    const ring = new ThroughputRing(10);
    ring.add(T, "succeeded", -4);
    ring.add(T, "succeeded", 0);
    expect(ring.series(T, 1, 1)[0]).toEqual({ at: T, succeeded: 0, failed: 0 });
  });
});
