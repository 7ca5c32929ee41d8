import { describe, expect, it } from "vitest";
import { nextOccurrence } from "./schedule-cron.js";

describe("nextOccurrence", () => {
  const at = Date.UTC(2030, 0, 1, 10, 7, 30);
  it.each([
    ["5 fields (minute precision)", "*/5 * * * *", Date.UTC(2030, 0, 1, 10, 10, 0)],
    ["6 fields (seconds first)", "*/20 * * * * *", Date.UTC(2030, 0, 1, 10, 7, 40)],
    ["7 fields (a year last)", "0 0 0 1 1 * 2032", Date.UTC(2032, 0, 1)],
    ["day-of-month or day-of-week", "0 0 15 * 1", Date.UTC(2030, 0, 7)],
  ])("%s", (_what, cron, next) => {
    expect(nextOccurrence(cron, at)).toBe(next);
  });

  it("is strictly after the instant given, in UTC", () => {
    expect(nextOccurrence("0 * * * *", Date.UTC(2030, 0, 1, 10, 0, 0))).toBe(Date.UTC(2030, 0, 1, 11, 0, 0));
  });

  it("has none for past years, and refuses what does not parse naming the field", () => {
    expect(nextOccurrence("0 0 0 1 1 * 2001", at)).toBeNull();
    for (const cron of ["", "* * * *", "* * * * * * * *", "61 * * * *", "* * * * banana"]) {
      expect(() => nextOccurrence(cron, at, "data.cron"), cron).toThrow(expect.objectContaining({ code: "BELAY_INVALID_INPUT", field: "data.cron" }));
    }
  });
});
