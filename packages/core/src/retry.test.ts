import { retryDelayMs, seededUnit } from "@belay/contract";
import { describe, expect, it } from "vitest";
import {
  DEFAULT_DELAYS_MS, DEFAULT_RETRY_POLICY, type RetryOptions, decideFailure, jitteredDelay, retryPolicy, toDisposition,
  effectiveRetryPolicy,
} from "./retry.js";

const NOW = 1_750_000_000_000;

/** The `InvalidInputError` `retryPolicy(options)` throws, or a failure if it does not throw. */
function invalid(options: RetryOptions): { code: string; field: string; message: string } {
  try {
    retryPolicy(options);
  } catch (error) {
    return error as { code: string; field: string; message: string };
  }
  throw new Error(`retryPolicy(${JSON.stringify(options)}) did not throw`);
}

describe("retry: defaults", () => {
  it("defaults: 10 attempts", () => {
    expect(DEFAULT_RETRY_POLICY.maxAttempts).toBe(10);
    expect(retryPolicy().maxAttempts).toBe(10);
    expect(DEFAULT_RETRY_POLICY.jitter).toBe(0);
  });

  it("defaults: delays are min(2^n, 300) seconds: 2, 4, 8, …, 256, 300", () => {
    const expected = [2, 4, 8, 16, 32, 64, 128, 256, 300, 300].map((s) => s * 1_000);
    expect([...DEFAULT_DELAYS_MS]).toEqual(expected);
    expect([...retryPolicy().delaysMs]).toEqual(expected);
    for (let n = 1; n <= 20; n++) {
      expect(jitteredDelay(DEFAULT_RETRY_POLICY, "job", n)).toBe(Math.min(2 ** n, 300) * 1_000);
    }
  });

  it("defaults: the policy objects are frozen", () => {
    expect(Object.isFrozen(DEFAULT_RETRY_POLICY)).toBe(true);
    expect(Object.isFrozen(DEFAULT_DELAYS_MS)).toBe(true);
    expect(Object.isFrozen(retryPolicy().delaysMs)).toBe(true);
  });
});

describe("retry: decideFailure", () => {
  it("decideFailure: retries below the ceiling at now + the attempt's delay", () => {
    expect(decideFailure(DEFAULT_RETRY_POLICY, "j1", 1, NOW)).toEqual({ type: "retry", retryAt: NOW + 2_000 });
    expect(decideFailure(DEFAULT_RETRY_POLICY, "j1", 3, NOW)).toEqual({ type: "retry", retryAt: NOW + 8_000 });
    expect(decideFailure(DEFAULT_RETRY_POLICY, "j1", 8, NOW)).toEqual({ type: "retry", retryAt: NOW + 256_000 });
    expect(decideFailure(DEFAULT_RETRY_POLICY, "j1", 9, NOW)).toEqual({ type: "retry", retryAt: NOW + 300_000 });
  });

  it("decideFailure: dead-letters at and past the ceiling", () => {
    expect(decideFailure(DEFAULT_RETRY_POLICY, "j1", 10, NOW)).toEqual({ type: "deadLetter" });
    expect(decideFailure(DEFAULT_RETRY_POLICY, "j1", 11, NOW)).toEqual({ type: "deadLetter" });
    const once = retryPolicy({ maxAttempts: 1 });
    expect(decideFailure(once, "j1", 1, NOW)).toEqual({ type: "deadLetter" });
    const three = retryPolicy({ maxAttempts: 3 });
    expect(decideFailure(three, "j1", 2, NOW).type).toBe("retry");
    expect(decideFailure(three, "j1", 3, NOW).type).toBe("deadLetter");
  });

  it("decideFailure: the last delay repeats past the end of the array", () => {
    const policy = retryPolicy({ maxAttempts: 100, delaysMs: [1_000, 5_000, 30_000] });
    expect(decideFailure(policy, "j", 1, NOW)).toEqual({ type: "retry", retryAt: NOW + 1_000 });
    expect(decideFailure(policy, "j", 2, NOW)).toEqual({ type: "retry", retryAt: NOW + 5_000 });
    expect(decideFailure(policy, "j", 3, NOW)).toEqual({ type: "retry", retryAt: NOW + 30_000 });
    expect(decideFailure(policy, "j", 4, NOW)).toEqual({ type: "retry", retryAt: NOW + 30_000 });
    expect(decideFailure(policy, "j", 99, NOW)).toEqual({ type: "retry", retryAt: NOW + 30_000 });
  });
});

describe("retry: custom policies", () => {
  it("custom delaysMs: used in order, copied and frozen", () => {
    const delays = [10, 20, 0];
    const policy = retryPolicy({ maxAttempts: 4, delaysMs: delays });
    delays[0] = 999;
    expect(policy).toEqual({ maxAttempts: 4, delaysMs: [10, 20, 0], jitter: 0 });
    expect(jitteredDelay(policy, "j", 1)).toBe(10);
    expect(jitteredDelay(policy, "j", 2)).toBe(20);
    expect(jitteredDelay(policy, "j", 3)).toBe(0);
  });

  it("backoff shorthand: min(base * 2^(n-1), max) per attempt", () => {
    const policy = retryPolicy({ maxAttempts: 6, backoff: { baseMs: 1_000, maxMs: 5_000 } });
    expect([...policy.delaysMs]).toEqual([1_000, 2_000, 4_000, 5_000, 5_000, 5_000]);
    expect(decideFailure(policy, "j", 1, NOW)).toEqual({ type: "retry", retryAt: NOW + 1_000 });
    expect(decideFailure(policy, "j", 3, NOW)).toEqual({ type: "retry", retryAt: NOW + 4_000 });
    expect(decideFailure(policy, "j", 5, NOW)).toEqual({ type: "retry", retryAt: NOW + 5_000 });
    expect(decideFailure(policy, "j", 6, NOW)).toEqual({ type: "deadLetter" });
  });
});

describe("retry: jitter", () => {
  const policy = retryPolicy({ maxAttempts: 1_000, delaysMs: [100_000], jitter: 0.5 });

  it("jitter: deterministic per (jobId, attempt)", () => {
    for (let attempt = 1; attempt <= 5; attempt++) {
      const a = jitteredDelay(policy, "job-42", attempt);
      expect(jitteredDelay(policy, "job-42", attempt)).toBe(a);
      expect(retryPolicy({ maxAttempts: 1_000, delaysMs: [100_000], jitter: 0.5 })).toEqual(policy);
      expect(decideFailure(policy, "job-42", attempt, NOW)).toEqual({ type: "retry", retryAt: NOW + a });
    }
  });

  it("jitter: stays within ± jitter of the base delay", () => {
    for (let i = 0; i < 500; i++) {
      const delay = jitteredDelay(policy, `job-${i}`, 1 + (i % 7));
      expect(delay).toBeGreaterThanOrEqual(50_000);
      expect(delay).toBeLessThanOrEqual(150_000);
      expect(Number.isInteger(delay)).toBe(true);
    }
  });

  it("jitter: differs across attempts and across jobs, and actually spreads", () => {
    const byAttempt = new Set(Array.from({ length: 20 }, (_, i) => jitteredDelay(policy, "job-1", i + 1)));
    const byJob = new Set(Array.from({ length: 20 }, (_, i) => jitteredDelay(policy, `job-${i}`, 1)));
    expect(byAttempt.size).toBeGreaterThanOrEqual(18);
    expect(byJob.size).toBeGreaterThanOrEqual(18);
    expect(jitteredDelay(policy, "job-1", 1)).not.toBe(jitteredDelay(policy, "job-1", 2));
    expect(jitteredDelay(policy, "job-1", 1)).not.toBe(jitteredDelay(policy, "job-2", 1));
    // Both halves of the band are used: the spread is symmetric, not one-sided.
    const all = Array.from({ length: 400 }, (_, i) => jitteredDelay(policy, `j${i}`, 1));
    expect(all.filter((d) => d < 100_000).length).toBeGreaterThan(100);
    expect(all.filter((d) => d > 100_000).length).toBeGreaterThan(100);
  });

  it("jitter: zero jitter and zero delays are exact", () => {
    expect(jitteredDelay(retryPolicy({ delaysMs: [7_000] }), "j", 1)).toBe(7_000);
    expect(jitteredDelay(retryPolicy({ delaysMs: [0], jitter: 1 }), "j", 1)).toBe(0);
  });

  it("seededUnit: in [0, 1) and stable", () => {
    expect(seededUnit("abc")).toBe(seededUnit("abc"));
    for (let i = 0; i < 1_000; i++) {
      const u = seededUnit(`s${i}`);
      expect(u).toBeGreaterThanOrEqual(0);
      expect(u).toBeLessThan(1);
    }
  });
});

describe("retry: validation", () => {
  it.each<[string, RetryOptions, string]>([
    ["maxAttempts 0", { maxAttempts: 0 }, "retry.maxAttempts"],
    ["maxAttempts 1001", { maxAttempts: 1_001 }, "retry.maxAttempts"],
    ["maxAttempts 2.5", { maxAttempts: 2.5 }, "retry.maxAttempts"],
    ["a negative delay", { delaysMs: [1_000, -1] }, "retry.delaysMs[1]"],
    ["a fractional delay", { delaysMs: [1.5] }, "retry.delaysMs[0]"],
    ["no delays", { delaysMs: [] }, "retry.delaysMs"],
    ["jitter 2", { jitter: 2 }, "retry.jitter"],
    ["jitter -0.1", { jitter: -0.1 }, "retry.jitter"],
    ["jitter NaN", { jitter: Number.NaN }, "retry.jitter"],
    ["both delaysMs and backoff", { delaysMs: [1_000], backoff: { baseMs: 1_000, maxMs: 2_000 } }, "retry.backoff"],
    ["backoff max below base", { backoff: { baseMs: 2_000, maxMs: 1_000 } }, "retry.backoff.maxMs"],
    ["backoff negative base", { backoff: { baseMs: -1, maxMs: 1_000 } }, "retry.backoff.baseMs"],
  ])("validation: %s is rejected naming %s", (_, options, field) => {
    const error = invalid(options);
    expect(error.code).toBe("BELAY_INVALID_INPUT");
    expect(error.field).toBe(field);
    expect(error.message).toContain(field);
  });

  it("validation: the bounds themselves are accepted", () => {
    expect(retryPolicy({ maxAttempts: 1 }).maxAttempts).toBe(1);
    expect(retryPolicy({ maxAttempts: 1_000 }).maxAttempts).toBe(1_000);
    expect(retryPolicy({ jitter: 1 }).jitter).toBe(1);
    expect(retryPolicy({ delaysMs: [0] }).delaysMs).toEqual([0]);
  });
});

describe("retry: toDisposition", () => {
  it("toDisposition: the ceiling and delays as data, without jitter", () => {
    const policy = retryPolicy({ maxAttempts: 5, delaysMs: [1_000, 3_000], jitter: 0.3 });
    const disposition = toDisposition(policy);
    expect(disposition).toEqual({ maxAttempts: 5, delaysMs: [1_000, 3_000] });
    expect("jitter" in disposition).toBe(false);
    expect(toDisposition(DEFAULT_RETRY_POLICY)).toEqual({ maxAttempts: 10, delaysMs: [...DEFAULT_DELAYS_MS] });
  });

  it("toDisposition: a store applying it gets the Core's unjittered delays", () => {
    const disposition = toDisposition(DEFAULT_RETRY_POLICY);
    for (let n = 1; n <= 15; n++) {
      expect(retryDelayMs(disposition, n)).toBe(jitteredDelay(DEFAULT_RETRY_POLICY, "j", n));
    }
  });
});

describe("retry: the policy of a claimed job", () => {
  const local = retryPolicy({ maxAttempts: 5, delaysMs: [100], jitter: 0.5 });

  it("is the one stored with the job, keeping the job type's jitter", () => {
    expect(effectiveRetryPolicy({ maxAttempts: 1, delaysMs: [9, 8] }, local)).toEqual({ maxAttempts: 1, delaysMs: [9, 8], jitter: 0.5 });
  });

  it("is the job type's (or group's) when the job carries none", () => {
    expect(effectiveRetryPolicy(null, local)).toBe(local);
  });
});
