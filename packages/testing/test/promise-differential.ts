// The promise machine against the SDK's own in-memory server: seeded random protocol streams
// through `MemoryPromiseStore` and `new LocalNetwork().server` (eager timeouts), answers compared
// after every step and snapshots at intervals. A difference no rule of SDK_SERVER_DIFFERENCES
// allows fails with its seed, step, request, both answers and the command that replays it.
// The seeds are split over two test files, so the two halves run in parallel.
//
//   BELAY_DIFF_SEEDS=2000 …   more seeds (default 200)
//   BELAY_DIFF_STEPS=10000 …  more steps per seed (default 2000)
//   BELAY_DIFF_SEED=17 …      one seed only (the replay)
//   BELAY_DIFF_SNAPSHOT_EVERY=1 …  snapshots compared every step (default 40): finds the step where states part
import { MemoryPromiseStore } from "@belay/memory";
import { LocalNetwork } from "@resonatehq/sdk";
import { CronExpressionParser } from "cron-parser";
import { afterAll, describe, expect, it } from "vitest";
import { type DifferentialReport, type SdkServer, SDK_SERVER_DIFFERENCES, promiseStoreSystem, runDifferential, sdkServerSystem } from "../src/index.js";

const SEEDS = Number(process.env["BELAY_DIFF_SEEDS"] ?? 200);
const STEPS = Number(process.env["BELAY_DIFF_STEPS"] ?? 2_000);
const ONE = process.env["BELAY_DIFF_SEED"];
const SNAPSHOT_EVERY = Number(process.env["BELAY_DIFF_SNAPSHOT_EVERY"] ?? 40);
const SHARDS = ["a", "b"] as const;

/** The test file that runs `seed`. */
const shardOf = (seed: number) => SHARDS[seed % SHARDS.length]!;

/** The cron library the SDK server uses (cron-parser), for Belay's side too. */
const nextOccurrence = (cron: string, after: number) => CronExpressionParser.parse(cron, { currentDate: new Date(after) }).next().getTime();

const replay = (seed: number) =>
  `BELAY_DIFF_SEED=${seed} BELAY_DIFF_STEPS=${STEPS} BELAY_DIFF_SNAPSHOT_EVERY=1 pnpm --filter @belay/testing exec vitest run test/promise-differential-${shardOf(seed)}.test.ts`;

/** The differential of one shard of the seeds. */
export function promiseDifferentialSuite(shard: (typeof SHARDS)[number]): void {
  const all = ONE !== undefined ? [Number(ONE)] : Array.from({ length: SEEDS }, (_, i) => i + 1);
  const seeds = all.filter((seed) => shardOf(seed) === shard);
  const reports: DifferentialReport[] = [];

  describe(`promise differential (${shard}): MemoryPromiseStore vs the SDK's in-memory server`, () => {
    if (seeds.length === 0) it.skip(`seed ${ONE} runs in test/promise-differential-${shardOf(Number(ONE))}.test.ts`, () => {});

    for (const seed of seeds) {
      it(`seed ${seed}: ${STEPS} steps`, async () => {
        const server = (new LocalNetwork() as unknown as { server: SdkServer & { timeoutMode: string } }).server;
        expect(server.timeoutMode).toBe("eager");
        const store = new MemoryPromiseStore();
        await store.migrate();
        reports.push(
          await runDifferential({
            seed,
            steps: STEPS,
            oracle: sdkServerSystem(server),
            subject: promiseStoreSystem(store, { nextOccurrence }),
            rules: SDK_SERVER_DIFFERENCES,
            snapshotEvery: SNAPSHOT_EVERY,
            replay,
          }),
        );
      }, 120_000);
    }

    // Too few seeds may miss a rare case; the default and longer runs do not.
    if (ONE === undefined && seeds.length >= 50) {
      it("every rule made a difference, every kind was sent", () => {
        const hits: Record<string, number> = {};
        const kinds = new Set<string>();
        for (const report of reports) {
          for (const [name, n] of Object.entries(report.ruleHits)) hits[name] = (hits[name] ?? 0) + n;
          for (const outcome of Object.keys(report.outcomes)) kinds.add(outcome.split(" ")[0]!);
        }
        // A rule that never fires allows nothing observed: it goes.
        for (const rule of SDK_SERVER_DIFFERENCES) expect(hits[rule.name], rule.name).toBeGreaterThan(0);
        // 21 kinds and the tick.
        expect(kinds.size).toBe(22);
      });
    }
  });

  afterAll(() => {
    if (reports.length === 0) return;
    const hits: Record<string, number> = {};
    for (const report of reports) for (const [name, n] of Object.entries(report.ruleHits)) hits[name] = (hits[name] ?? 0) + n;
    console.log(`promise differential (${shard}): ${reports.length} seeds x ${STEPS} steps; rule hits ${JSON.stringify(hits)}`);
  });
}
