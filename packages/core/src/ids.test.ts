import { describe, expect, it } from "vitest";
import { createJobId } from "./ids.js";

describe("createJobId", () => {
  it("gives 26 Crockford base-32 characters, unique across many ids (past the entropy pool's refill)", () => {
    const ids = Array.from({ length: 10_000 }, () => createJobId(1_700_000_000_000));
    for (const id of ids.slice(0, 300)) expect(id).toMatch(/^[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("sorts ids of later milliseconds after earlier ones", () => {
    const earlier = createJobId(1_700_000_000_000);
    const later = createJobId(1_700_000_000_001);
    expect(earlier < later).toBe(true);
    expect(earlier.slice(0, 10)).toBe(createJobId(1_700_000_000_000).slice(0, 10));
  });
});
