// Throughput of SqlitePromiseStore's full lifecycles on one caller: create a targeted promise,
// acquire its task, fulfill it — three write transactions, one after another. Prints numbers;
// asserts nothing.
//
// Run from the repository root, after building the package:
//   (cd packages/sqlite && npx tsup)
//   node packages/sqlite/bench/sqlite-promise-bench.mjs [--lifecycles 10000] [--synchronous normal|full] [--runs 3]
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { SqlitePromiseStore } from "../dist/index.js";

const args = new Map(process.argv.slice(2).reduce((pairs, arg, i, all) => (arg.startsWith("--") ? [...pairs, [arg.slice(2), all[i + 1]]] : pairs), []));
const LIFECYCLES = Number(args.get("lifecycles") ?? 10_000);
const RUNS = Number(args.get("runs") ?? 3);
const SYNCHRONOUS = args.get("synchronous") ?? "normal";
const dir = mkdtempSync(join(tmpdir(), "belay-sqlite-promise-bench-"));
const tags = { "resonate:target": "poll://any@bench" };

function ok(response) {
  if (response.status !== 200) throw new Error(JSON.stringify(response));
}

async function run(index) {
  const store = new SqlitePromiseStore({ path: join(dir, `bench-${index}.db`), synchronous: SYNCHRONOUS });
  await store.migrate();
  const started = performance.now();
  for (let n = 0; n < LIFECYCLES; n++) {
    const id = `bench-${n}`;
    const now = Date.now();
    ok(await store.handle({ kind: "promise.create", id, timeoutAt: now + 3_600_000, tags }, now));
    ok(await store.handle({ kind: "task.acquire", id, version: 0, pid: "bench", ttl: 60_000 }, now));
    ok(await store.handle({ kind: "task.fulfill", id, version: 1, action: { kind: "promise.settle", id, state: "resolved", value: { data: "b2s=" } } }, now));
  }
  const ms = performance.now() - started;
  await store.close();
  return Math.round((LIFECYCLES / ms) * 1_000);
}

try {
  const rates = [];
  for (let i = 0; i < RUNS; i++) rates.push(await run(i));
  console.log(`synchronous=${SYNCHRONOUS}, ${LIFECYCLES} lifecycles per run: ${rates.join(", ")} lifecycles/s (${rates.map((r) => r * 3).join(", ")} operations/s)`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
