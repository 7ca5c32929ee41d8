/**
 * The simulator's command line (`pnpm sim` at the repository root):
 *
 *   pnpm sim --seeds 1000                      swarm seeds 1…1000 of both halves
 *   pnpm sim --seeds 500 --half jobs --from 0x2a
 *   pnpm sim --replay 0x0000000000000011 --half jobs [--minimize [--out FILE]]
 *   pnpm sim --plan test/fixtures/sim/x.json   a saved plan or fixture
 *   pnpm sim --seeds 50 --sabotage hotLoop     prove an oracle fires
 *   pnpm sim --forever [--minimize]            random seeds until interrupted
 *   pnpm sim --seeds 10000 --workers 2         the swarm on two worker threads
 *
 * Prints seeds/s and every violation with the one-line command that replays it; exits 1 when a
 * run breaks an oracle (or, under --sabotage, when its oracle never fired).
 */
import { randomBytes } from "node:crypto";
import { readFile, writeFile } from "node:fs/promises";
import { relative, resolve } from "node:path";
import { parseArgs } from "node:util";
import { Worker, isMainThread, parentPort, workerData } from "node:worker_threads";
import {
  type SabotageName, type SimFixture, type SimHalf, type SimPlan, type SimResult, SABOTAGES, formatSeed, formatViolation,
  isSabotage, minimizePlan, parseSeed, parseSimFixture, replayCommand, replayPlanCommand, runPlan, runSeed,
} from "../src/index.js";

const { values } = parseArgs({
  args: isMainThread ? process.argv.slice(2) : [],
  options: {
    seeds: { type: "string" },
    from: { type: "string", default: "1" },
    half: { type: "string", default: "both" },
    replay: { type: "string" },
    plan: { type: "string" },
    sabotage: { type: "string" },
    forever: { type: "boolean", default: false },
    minimize: { type: "boolean", default: false },
    out: { type: "string" },
    workers: { type: "string" },
    help: { type: "boolean", short: "h", default: false },
  },
  strict: true,
});

// pnpm runs the script in packages/testing: paths on the command line are the caller's.
const cwd = process.env.INIT_CWD ?? process.cwd();
const usage = "usage: pnpm sim --seeds N [--from SEED] [--half jobs|promises|both] [--replay SEED] [--plan FILE] [--sabotage NAME] [--forever] [--minimize] [--out FILE] [--workers K]";

function fail(message: string): never {
  console.error(message);
  console.error(usage);
  process.exit(2);
}

if (values.help) {
  console.log(usage);
  process.exit(0);
}
const sabotage: SabotageName | null = values.sabotage === undefined ? null : isSabotage(values.sabotage) ? values.sabotage : fail(`unknown sabotage ${values.sabotage}; one of: ${Object.keys(SABOTAGES).join(", ")}`);
if (!["jobs", "promises", "both"].includes(values.half!)) fail(`--half must be jobs, promises or both`);
const halves: SimHalf[] = sabotage !== null ? [SABOTAGES[sabotage].half] : values.half === "both" ? ["jobs", "promises"] : [values.half as SimHalf];

const rate = (n: number, ms: number) => (ms === 0 ? "∞" : ((n * 1_000) / ms).toFixed(1));

/** Prints a failing run with its replay command; minimizes it when asked. */
async function reportFailure(result: SimResult, replay: string): Promise<void> {
  const { plan } = result;
  console.log(`✗ ${plan.half} seed ${plan.seed}${result.sabotage ? ` under ${result.sabotage}` : ""}: ${formatViolation(result.violations[0]!)}`);
  for (const v of result.violations.slice(1)) console.log(`    also ${formatViolation(v)}`);
  console.log(`  replay: ${replay}`);
  if (values.minimize) await minimizeAndSave(plan, result.violations[0]!.oracle);
}

async function minimizeAndSave(plan: SimPlan, oracle: SimResult["violations"][number]["oracle"]): Promise<void> {
  const started = Date.now();
  const min = await minimizePlan(plan, { sabotage, oracle });
  const file = resolve(cwd, values.out ?? `sim-${plan.half}-${plan.seed}.json`);
  const fixture: SimFixture = {
    name: `${plan.half}-${plan.seed}${sabotage ? `-${sabotage}` : ""}`,
    note: `minimized from swarm seed ${plan.seed} (${plan.half}): ${min.violation.message}`,
    sabotage,
    expect: oracle,
    plan: min.plan,
  };
  await writeFile(file, `${JSON.stringify(fixture, null, 2)}\n`);
  console.log(`  minimized in ${min.runs} runs (${((Date.now() - started) / 1_000).toFixed(1)} s): ${plan.events.length} → ${min.plan.events.length} events; saved ${file}`);
  console.log(`  replay: ${replayPlanCommand(relative(cwd, file) || file)}`);
}

async function runReplay(): Promise<number> {
  const seed = parseSeed(values.replay!);
  let bad = 0;
  for (const half of halves) {
    const result = await runSeed(seed, half, { sabotage, stopAtFirst: false });
    const { stats } = result;
    console.log(`${half} seed ${formatSeed(seed)}: ${stats.steps} steps, ${stats.entities} ${half === "jobs" ? "jobs" : "roots"}, ${(stats.virtualMs / 1_000).toFixed(1)} virtual s, ${stats.drained ? "drained" : "ran to its deadline"}`);
    if (result.violations.length === 0) console.log("  no violations");
    else {
      bad++;
      await reportFailure(result, replayCommand(seed, half, sabotage));
    }
  }
  return sabotage === null ? (bad > 0 ? 1 : 0) : bad > 0 ? 0 : 1;
}

async function runPlanFile(): Promise<number> {
  const file = resolve(cwd, values.plan!);
  const fixture = parseSimFixture(JSON.parse(await readFile(file, "utf8")), file);
  const underSabotage = sabotage ?? fixture.sabotage;
  const result = await runPlan(fixture.plan, { sabotage: underSabotage, stopAtFirst: false });
  console.log(`${fixture.name}: ${fixture.note || "(no note)"}`);
  for (const v of result.violations) console.log(`  ${formatViolation(v)}`);
  const expected = sabotage !== null ? SABOTAGES[sabotage].oracle : fixture.expect;
  const ok = expected === "clean" ? result.violations.length === 0 : result.violations.some((v) => v.oracle === expected);
  console.log(ok ? `✓ as expected (${expected})` : `✗ expected ${expected}, got ${result.violations.map((v) => v.oracle).join(", ") || "no violation"}`);
  if (!ok && values.minimize && result.violations.length > 0) await minimizeAndSave(fixture.plan, result.violations[0]!.oracle);
  return ok ? 0 : 1;
}

/** One seed of one half, as a swarm runner reports it. */
interface SeedRun {
  readonly seed: string;
  readonly half: SimHalf;
  readonly ms: number;
  readonly oracles: readonly string[];
}

/** Runs seeds of the swarm in this thread, or in `--workers` worker threads (one seed at a time each). */
interface SeedRunner {
  run(seed: bigint, half: SimHalf): Promise<SeedRun>;
  close(): Promise<void>;
}

async function runOne(seed: bigint, half: SimHalf, under: SabotageName | null): Promise<SeedRun> {
  const t = Date.now();
  const result = await runSeed(seed, half, { sabotage: under });
  return { seed: formatSeed(seed), half, ms: Date.now() - t, oracles: result.violations.map((v) => v.oracle) };
}

function localRunner(): SeedRunner {
  return { run: (seed, half) => runOne(seed, half, sabotage), close: async () => {} };
}

function workerRunner(count: number): SeedRunner {
  const idle: Worker[] = [];
  const waiting: ((worker: Worker) => void)[] = [];
  // A worker thread does not inherit tsx's loader: it registers tsx, then imports this file.
  const boot = `import("tsx/esm/api").then((tsx) => { tsx.register(); return import(${JSON.stringify(import.meta.url)}); })`;
  const workers = Array.from({ length: count }, () => new Worker(boot, { eval: true, workerData: { sabotage }, execArgv: process.execArgv }));
  idle.push(...workers);
  const take = () => new Promise<Worker>((resolve) => (idle.length > 0 ? resolve(idle.pop()!) : waiting.push(resolve)));
  const give = (worker: Worker) => (waiting.length > 0 ? waiting.shift()!(worker) : idle.push(worker));
  return {
    async run(seed, half) {
      const worker = await take();
      try {
        return await new Promise<SeedRun>((resolve, reject) => {
          worker.once("message", resolve);
          worker.once("error", reject);
          worker.postMessage({ seed: formatSeed(seed), half });
        });
      } finally {
        worker.removeAllListeners("error");
        give(worker);
      }
    },
    async close() {
      await Promise.all(workers.map((w) => w.terminate()));
    },
  };
}

async function runSwarm(): Promise<number> {
  const count = values.forever ? Number.POSITIVE_INFINITY : Number(values.seeds ?? 100);
  if (!(count > 0) || (!values.forever && !Number.isInteger(count))) fail(`--seeds must be a positive integer`);
  const threads = Number(values.workers ?? 1);
  if (!Number.isInteger(threads) || threads < 1) fail(`--workers must be a positive integer`);
  // The forever runner starts at a random seed, so runs on several machines cover different ground.
  const first = values.forever ? BigInt(`0x${randomBytes(8).toString("hex")}`) : parseSeed(values.from!);
  const totals = new Map(halves.map((h) => [h, { seeds: 0, ms: 0, violations: 0 }]));
  const started = Date.now();
  let lastProgress = started;
  let stop = false;
  let done = 0;
  process.once("SIGINT", () => void (stop = true));
  console.log(
    `${values.forever ? "forever from" : `${count} seeds from`} ${formatSeed(first)}, ${halves.join(" + ")}${threads > 1 ? `, ${threads} worker threads` : ""}${sabotage ? `, sabotage ${sabotage} (${SABOTAGES[sabotage].oracle})` : ""}`,
  );
  const runner = threads > 1 ? workerRunner(threads) : localRunner();
  let next = 0;
  const lane = async () => {
    while (!stop && next < count) {
      const seed = (first + BigInt(next++)) & 0xffff_ffff_ffff_ffffn;
      for (const half of halves) {
        const run = await runner.run(seed, half);
        const total = totals.get(half)!;
        total.ms += run.ms;
        total.seeds++;
        const fired = sabotage === null ? run.oracles.length > 0 : run.oracles.includes(SABOTAGES[sabotage].oracle);
        if (fired) {
          total.violations++;
          // The failure again, in this thread, for its report and minimization: runs are deterministic.
          if (sabotage === null) await reportFailure(await runSeed(seed, half), replayCommand(seed, half));
        }
      }
      done++;
      if (Date.now() - lastProgress >= 10_000) {
        lastProgress = Date.now();
        console.error(`… ${done} seeds, ${rate(done, lastProgress - started)} seeds/s, ${[...totals.values()].reduce((v, t) => v + t.violations, 0)} violations`);
      }
    }
  };
  await Promise.all(Array.from({ length: threads }, lane));
  await runner.close();
  const wall = Date.now() - started;
  for (const [half, t] of totals) {
    const what = sabotage ? `${SABOTAGES[sabotage].oracle} fired on ${t.violations}` : `${t.violations} with violations`;
    console.log(`${half}: ${t.seeds} seeds in ${(t.ms / 1_000).toFixed(1)} s of runs, ${rate(t.seeds, t.ms)} seeds/s per thread, ${what}`);
  }
  console.log(`total: ${done} seeds × ${halves.length} half(s) in ${(wall / 1_000).toFixed(1)} s wall, ${rate(done, wall)} seeds/s`);
  const violations = [...totals.values()].reduce((v, t) => v + t.violations, 0);
  return sabotage === null ? (violations > 0 ? 1 : 0) : violations > 0 ? 0 : 1;
}

/** A worker thread of `--workers`: runs the seeds the main thread posts, one at a time. */
function serveSeeds(): void {
  const under = (workerData as { sabotage: SabotageName | null }).sabotage;
  parentPort!.on("message", ({ seed, half }: { seed: string; half: SimHalf }) => {
    void runOne(parseSeed(seed), half, under).then((run) => parentPort!.postMessage(run));
  });
}

if (isMainThread) {
  const code = values.replay !== undefined ? await runReplay() : values.plan !== undefined ? await runPlanFile() : await runSwarm();
  process.exit(code);
} else serveSeeds();
