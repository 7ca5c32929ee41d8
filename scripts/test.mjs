#!/usr/bin/env node
// Runs the whole test suite (every workspace project) once and ends with the plain summary line
// CI reads: "N passed, N failed". Extra arguments go to vitest (e.g. --project memory).
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const report = join(tmpdir(), `belay-vitest-${process.pid}.json`);
const run = spawnSync(
  "pnpm",
  ["exec", "vitest", "run", "--reporter=default", "--reporter=json", `--outputFile.json=${report}`, ...process.argv.slice(2)],
  { stdio: "inherit" },
);
let passed = 0;
let failed = 0;
let skipped = 0;
if (existsSync(report)) {
  const results = JSON.parse(readFileSync(report, "utf8"));
  passed = results.numPassedTests;
  failed = results.numFailedTests + (results.numFailedTestSuites ?? 0);
  skipped = results.numPendingTests + results.numTodoTests;
  rmSync(report);
} else {
  failed = 1; // vitest crashed before reporting: count the run itself as a failure
}
const status = run.status ?? 1;
// vitest failed outside every test (a globalSetup that threw — under CI=true, no PostgreSQL — or an
// unhandled error): the run itself counts as a failure, so the summary line never reads clean.
if (status !== 0 && failed === 0) failed = 1;
if (skipped > 0) console.log(`${skipped} skipped (each skipped title says what it needs)`);
console.log(`${passed} passed, ${failed} failed`);
process.exit(status !== 0 ? status : failed > 0 ? 1 : 0);
