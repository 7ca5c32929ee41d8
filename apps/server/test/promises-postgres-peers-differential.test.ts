import { SeededRandom } from "@belay/contract";
import { postgresTarget, randomSchemaName } from "@belay/conformance";
import { MemoryPromiseStore } from "@belay/memory";
import { PostgresPromiseStore } from "@belay/postgres";
import { type DifferentialReport, type ProtocolSystem, promiseStoreSystem, runDifferential } from "@belay/testing";
import { createRequire } from "node:module";
import { afterAll, describe, expect, it } from "vitest";
import { nextOccurrence } from "../src/daa/schedule-cron.js";

// Several belay-server processes on one PostgreSQL schema, each with its PostgresPromiseStore and
// its row cache (an operation whose rows a store remembers skips its load; its write checks them
// and the operation reloads when another store changed one), against MemoryPromiseStore, the
// reference: seeded protocol streams in which every request and every timer scan goes to one of
// three stores picked at random, so each store's memory is often wrong. Answers are compared
// after every step and snapshots at intervals; no difference is allowed (both are the contract's
// machine). Steps run one at a time: what races between stores at once is the conformance
// suite's (its peers) and the many-servers test's.
//
//   BELAY_PEERS_DIFF_SEEDS=100 …   more seeds (default 8, from seed 401)
//   BELAY_PEERS_DIFF_STEPS=5000 …  more steps per seed (default 1000)
//   BELAY_PEERS_DIFF_SEED=405 …    one seed only (the replay)

const FILE = "apps/server/test/promises-postgres-peers-differential.test.ts";
const FIRST_SEED = 401;
const SEEDS = Number(process.env["BELAY_PEERS_DIFF_SEEDS"] ?? 8);
const STEPS = Number(process.env["BELAY_PEERS_DIFF_STEPS"] ?? 1_000);
const ONE = process.env["BELAY_PEERS_DIFF_SEED"];
const PEERS = 3;

interface PgPool {
  connect(): Promise<unknown>;
  query(sql: string): Promise<unknown>;
  end(): Promise<void>;
  on(event: "error", listener: () => void): void;
}
const pg = createRequire(import.meta.url)("pg") as { Pool: new (config: { connectionString: string; max: number }) => PgPool };

const target = await postgresTarget(FILE);
const url = target.url;
const replay = (seed: number) =>
  `BELAY_PEERS_DIFF_SEED=${seed} BELAY_PEERS_DIFF_STEPS=${STEPS} node_modules/.bin/vitest run --project server ${FILE.replace("apps/server/", "")}`;

/** The next run of `cron` after `after`, as the server computes it (a cron with none is refused as invalid, on both sides). */
function next(cron: string, after: number): number {
  const at = nextOccurrence(cron, after);
  if (at === null) throw new Error(`no occurrence of ${cron} after ${after}`);
  return at;
}

/**
 * A pool whose connections count the statements that checked remembered rows, and how many of
 * those found them changed (SQLSTATE BLY02): the run must have used the caches, and found them
 * wrong, for its comparison to say anything about them.
 */
function countingPool(pool: PgPool) {
  const counts = { checked: 0, changed: 0 };
  return {
    counts,
    pool: {
      async connect() {
        const client = (await pool.connect()) as { query: (config: { text: string }) => Promise<unknown> };
        return new Proxy(client, {
          get(target, property, receiver) {
            if (property !== "query") {
              const value = Reflect.get(target, property, receiver) as unknown;
              return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(target) : value;
            }
            return async (config: { text: string }) => {
              const checked = typeof config?.text === "string" && config.text.includes("promise_rows_changed(");
              if (checked) counts.checked++;
              try {
                return await target.query(config);
              } catch (error) {
                if (checked && (error as { code?: string }).code === "BLY02") counts.changed++;
                throw error;
              }
            };
          },
        });
      },
      end: () => pool.end(),
    },
  };
}

/** Three stores on one schema as one system: each request and each tick to one of them, by the seed. */
function peersSystem(stores: readonly PostgresPromiseStore[], seed: number): ProtocolSystem {
  const systems = stores.map((store, i) => promiseStoreSystem(store, { name: `postgres peer ${i}`, nextOccurrence: next }));
  const random = SeededRandom.derive(seed, 7);
  const pick = () => systems[Math.floor(random.next() * systems.length)]!;
  return {
    name: `${PEERS} postgres stores on one schema, each with its row cache`,
    send: (request, now) => pick().send(request, now),
    tick: (now) => pick().tick(now),
    snapshot: (now) => systems[0]!.snapshot(now),
  };
}

describe.skipIf(url === undefined)(`promise differential: ${PEERS} PostgreSQL stores with row caches on one schema (${target.reason}) vs MemoryPromiseStore`, () => {
  const raw = url === undefined ? null : new pg.Pool({ connectionString: url, max: PEERS * 3 });
  raw?.on("error", () => undefined);
  const counting = raw === null ? null : countingPool(raw);
  const reports: DifferentialReport[] = [];

  afterAll(async () => {
    await raw?.end();
    await target.stop();
    if (reports.length > 0) console.info(`[peers differential] ${reports.length} seeds x ${STEPS} steps: ${JSON.stringify(counting?.counts)}`);
  });

  const seeds = ONE !== undefined ? [Number(ONE)] : Array.from({ length: SEEDS }, (_, i) => FIRST_SEED + i);
  for (const seed of seeds) {
    it(`seed ${seed}: ${STEPS} steps`, async () => {
      const schema = randomSchemaName("peers");
      const stores = Array.from({ length: PEERS }, () => new PostgresPromiseStore({ pool: counting!.pool as never, schema }));
      const before = { ...counting!.counts };
      const oracle = new MemoryPromiseStore();
      try {
        await stores[0]!.migrate();
        await oracle.migrate();
        const report = await runDifferential({
          seed,
          steps: STEPS,
          oracle: promiseStoreSystem(oracle, { name: "memory", nextOccurrence: next }),
          subject: peersSystem(stores, seed),
          rules: [],
          replay,
        });
        reports.push(report);
        expect(report.steps).toBe(STEPS);
        // The caches were used, and some of what they remembered was wrong (another store's change).
        expect(counting!.counts.checked - before.checked, "writes checked against remembered rows").toBeGreaterThan(STEPS / 20);
        expect(counting!.counts.changed - before.changed, "checked writes that found the rows changed").toBeGreaterThan(0);
      } finally {
        for (const store of stores) await store.close();
        await oracle.close();
        await raw!.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      }
    }, 300_000);
  }
});
