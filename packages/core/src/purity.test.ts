import { readFileSync, readdirSync } from "node:fs";
import { builtinModules } from "node:module";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

// The pure Core, the Storage Contract and the reference store must be recognisable as pure
// (STYLE.md, DESIGN.md §1): no Node built-ins, no clock, no timers, no unseeded randomness.

const packages = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

function sources(folder: string): string[] {
  const files: string[] = [];
  for (const entry of readdirSync(folder, { withFileTypes: true })) {
    const path = join(folder, entry.name);
    if (entry.isDirectory()) files.push(...sources(path));
    else if (entry.name.endsWith(".ts") && !entry.name.endsWith(".test.ts")) files.push(path);
  }
  return files.sort();
}

const PURE_FILES = [
  ...["retry", "dispatch", "cron-planner", "driver", "driver-types", "fault-policy"].map((name) => join(packages, "core/src", `${name}.ts`)),
  ...sources(join(packages, "core/src/driver")),
  ...sources(join(packages, "contract/src")),
  ...sources(join(packages, "memory/src")),
];

const FORBIDDEN: readonly (readonly [string, RegExp])[] = [
  ["a node: import", /["'`]node:[^"'`]*["'`]/],
  ["Date.now", /\bDate\s*\.\s*now\b/],
  ["new Date() without arguments", /\bnew\s+Date\s*\(\s*\)/],
  ["new Date without a call", /\bnew\s+Date\b(?!\s*\()/],
  ["performance.now", /\bperformance\s*\.\s*now\b/],
  ["setTimeout", /\bsetTimeout\b/],
  ["setInterval", /\bsetInterval\b/],
  ["setImmediate", /\bsetImmediate\b/],
  ["Math.random", /\bMath\s*\.\s*random\b/],
];

/** Module specifiers a file imports or re-exports, statically or dynamically. */
function specifiers(text: string): string[] {
  const found: string[] = [];
  for (const match of text.matchAll(/\b(?:from|import)\s*\(?\s*["']([^"']+)["']/g)) found.push(match[1]!);
  for (const match of text.matchAll(/\brequire\s*\(\s*["']([^"']+)["']/g)) found.push(match[1]!);
  return found;
}

function violations(text: string): string[] {
  const found = FORBIDDEN.filter(([, pattern]) => pattern.test(text)).map(([name]) => name);
  const builtins = new Set(builtinModules);
  for (const specifier of specifiers(text)) {
    if (builtins.has(specifier) || builtins.has(specifier.split("/")[0]!)) found.push(`a Node built-in import (${specifier})`);
  }
  return found;
}

describe("purity", () => {
  it("purity: the checked file set is what it should be", () => {
    const names = PURE_FILES.map((file) => relative(packages, file));
    for (const expected of [
      "core/src/retry.ts",
      "core/src/dispatch.ts",
      "core/src/cron-planner.ts",
      "core/src/driver.ts",
      "core/src/driver-types.ts",
      "core/src/driver/claims.ts",
      "core/src/driver/leases.ts",
      "core/src/driver/maintenance.ts",
      "core/src/driver/outcomes.ts",
      "core/src/driver/slots.ts",
      "core/src/fault-policy.ts",
      "contract/src/job-store.ts",
      "contract/src/index.ts",
      "memory/src/memory-store.ts",
      "memory/src/index.ts",
    ]) {
      expect(names).toContain(expected);
    }
    expect(names.some((n) => n.startsWith("memory/src/ops/"))).toBe(true); // nested folders are walked
    expect(names.some((n) => n.endsWith(".test.ts"))).toBe(false);
  });

  it("purity: the checks catch what they look for", () => {
    expect(violations('import { readFile } from "node:fs";')).toEqual(["a node: import"]);
    expect(violations("const t = Date.now();")).toEqual(["Date.now"]);
    expect(violations("const d = new Date();")).toEqual(["new Date() without arguments"]);
    expect(violations("const d = new Date;")).toEqual(["new Date without a call"]);
    expect(violations("performance.now()")).toEqual(["performance.now"]);
    expect(violations("setTimeout(f, 1); setInterval(f, 1);")).toEqual(["setTimeout", "setInterval"]);
    expect(violations("Math.random()")).toEqual(["Math.random"]);
    expect(violations('import { EventEmitter } from "events";')).toEqual(["a Node built-in import (events)"]);
    expect(violations('const fs = await import("fs/promises");')).toEqual(["a Node built-in import (fs/promises)"]);
    // An instant made from a value is fine: that is how the cron planner hands ticks to croner.
    expect(violations("cron.nextRuns(count, new Date(after));")).toEqual([]);
    expect(violations('import { Cron } from "croner";')).toEqual([]);
  });

  it.each(PURE_FILES.map((file) => [relative(packages, file), file]))("purity: %s uses no Node built-in, clock, timer or Math.random", (_, file) => {
    expect(violations(readFileSync(file, "utf8"))).toEqual([]);
  });
});
