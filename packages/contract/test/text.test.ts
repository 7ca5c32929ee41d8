import { describe, expect, it } from "vitest";
import { DEFAULT_BOUNDS, MAX_INSTANT, failureDetailText, isInstant, storableText, textProblem, validateNewJob } from "../src/index.js";

describe("storable text", () => {
  it("accepts any well-formed text, surrogate pairs included, and refuses NUL and lone surrogates", () => {
    expect(textProblem("plain ✓ 😀")).toBeNull();
    expect(textProblem("")).toBeNull();
    expect(textProblem("a\u0000b")).toMatch(/NUL/);
    expect(textProblem("a\ud800")).toMatch(/surrogate/);
    expect(textProblem("\udc00a")).toMatch(/surrogate/);
    expect(textProblem("\ud83d\ude00")).toBeNull();
  });

  it("rewrites only what cannot be stored, and failure detail is truncated after", () => {
    expect(storableText("ok")).toBe("ok");
    expect(storableText("a\u0000b\ud800")).toBe("a\ufffdb\ufffd");
    expect(failureDetailText("\u0000abcdef", 4)).toBe("\ufffda");
  });

  it("an instant is an integer of epoch milliseconds from 1970 to 9999", () => {
    expect(isInstant(0)).toBe(true);
    expect(isInstant(MAX_INSTANT)).toBe(true);
    expect(new Date(MAX_INSTANT).toISOString()).toBe("9999-12-31T23:59:59.999Z");
    for (const bad of [-1, MAX_INSTANT + 1, 1.5, Number.NaN, Infinity, "1"]) expect(isInstant(bad), String(bad)).toBe(false);
  });

  it("a job is checked field by field, text included", () => {
    const job = { id: "j", jobName: "n", queue: "q", payload: "{}", dueAt: 0 };
    expect(validateNewJob(job, DEFAULT_BOUNDS).ok).toBe(true);
    expect(validateNewJob({ ...job, queue: "q\u0000" }, DEFAULT_BOUNDS)).toMatchObject({ ok: false, rejection: { field: "queue" } });
    expect(validateNewJob({ ...job, payload: '"\ud800"' }, DEFAULT_BOUNDS)).toMatchObject({ ok: false, rejection: { field: "payload" } });
  });
});
