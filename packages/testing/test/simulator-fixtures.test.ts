import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  type SimPlan, formatSeed, formatViolation, minimizePlan, parseSeed, parseSimFixture, replayCommand, replayPlanCommand, runPlan,
  runSeed, swarmPlan,
} from "../src/index.js";

const DIR = join(import.meta.dirname, "fixtures", "sim");
const FILES = readdirSync(DIR).filter((f) => f.endsWith(".json")).sort();

describe("simulator fixtures: every saved plan does what it was saved for", () => {
  it("there are fixtures", () => {
    expect(FILES.length).toBeGreaterThan(0);
  });

  for (const file of FILES) {
    const fixture = parseSimFixture(JSON.parse(readFileSync(join(DIR, file), "utf8")), file);
    it(`${file}: ${fixture.expect === "clean" ? "no violation" : fixture.expect}${fixture.sabotage ? ` under ${fixture.sabotage}` : ""}`, { timeout: 120_000 }, async () => {
      const result = await runPlan(fixture.plan, { sabotage: fixture.sabotage, stopAtFirst: false });
      const found = `${result.violations.map(formatViolation).join("\n") || "no violation"}\n  replay: ${replayPlanCommand(`packages/testing/test/fixtures/sim/${file}`)}`;
      if (fixture.expect === "clean") expect(result.violations, found).toEqual([]);
      else expect(result.violations.map((v) => v.oracle), found).toContain(fixture.expect);
    });
  }
});

describe("simulator: replay and shrink", () => {
  it("a seed replays exactly: the same plan, steps, virtual time and violations", { timeout: 120_000 }, async () => {
    for (const half of ["jobs", "promises"] as const) {
      for (const seed of [7, 0xdeadbeefn]) {
        const [a, b] = [await runSeed(seed, half), await runSeed(seed, half)];
        expect(b.plan).toEqual(a.plan);
        expect(b.stats).toEqual(a.stats);
        expect(b.violations).toEqual(a.violations);
      }
      const sabotaged = [await runSeed(3, "jobs", { sabotage: "unfencedReport" }), await runSeed(3, "jobs", { sabotage: "unfencedReport" })];
      expect(sabotaged[1]!.violations).toEqual(sabotaged[0]!.violations);
    }
  });

  it("seeds parse and print as 64-bit hex, and the replay command names seed, half and sabotage", () => {
    expect(formatSeed(parseSeed("17"))).toBe("0x0000000000000011");
    expect(parseSeed("0xffffffffffffffff")).toBe(0xffffffffffffffffn);
    expect(() => parseSeed("-1")).toThrow(RangeError);
    expect(() => parseSeed("0x10000000000000000")).toThrow(RangeError);
    expect(replayCommand(17, "jobs")).toBe("pnpm sim --replay 0x0000000000000011 --half jobs");
    expect(replayCommand(17, "jobs", "hotLoop")).toBe("pnpm sim --replay 0x0000000000000011 --half jobs --sabotage hotLoop");
    expect(replayPlanCommand("x.json")).toBe("pnpm sim --plan x.json");
  });

  it("the minimizer removes events while the same oracle still trips, deterministically", { timeout: 300_000 }, async () => {
    const plan = swarmPlan(3, "jobs", "unfencedReport");
    const options = { sabotage: "unfencedReport", maxRuns: 80 } as const;
    const min = await minimizePlan(plan, options);
    expect(min.oracle).toBe("effectOnce");
    expect(min.plan.events.length).toBeLessThan(plan.events.length);
    const again = await runPlan(min.plan, { sabotage: "unfencedReport" });
    expect(again.violations.map((v) => v.oracle)).toContain("effectOnce");
    expect((await minimizePlan(plan, options)).plan).toEqual(min.plan);
  });

  it("the minimizer refuses a plan that trips nothing", async () => {
    const clean: SimPlan = { ...swarmPlan(2, "promises"), events: [] };
    await expect(minimizePlan(clean)).rejects.toThrow(RangeError);
  });
});
