import type { PromiseStore } from "@belay/contract";
import { silentLogger } from "@belay/core";
import { type DifferentialReport, type SdkServer, SDK_SERVER_DIFFERENCES, runDifferential, sdkServerSystem } from "@belay/testing";
import { LocalNetwork } from "@resonatehq/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Listener, createPromiseServer, serve } from "../src/index.js";
import { type HttpPromiseSystem, httpPromiseSystem } from "./http-protocol-system.js";
import { SERVER_DIFFERENCES } from "./server-differences.js";
import { type PromiseStoreTarget, promiseStoreTargets } from "./store-targets.js";

// The differential test of @belay/testing, through HTTP: seeded protocol streams sent as
// envelopes to a running belay-server listener in debug mode (`resonate:debug_time` sets each
// request's now, `debug.tick` scans, `debug.snap` snapshots), against the SDK's in-memory server,
// with the allowed differences of SDK_SERVER_DIFFERENCES and the server's own (SERVER_DIFFERENCES).
// One test file per store, so they run side by side.
//
//   BELAY_HTTP_DIFF_SEEDS=200 …   more seeds (default 20, from seed 201: beyond the in-process runs')
//   BELAY_HTTP_DIFF_STEPS=5000 …  more steps per seed (default 1000)
//   BELAY_HTTP_DIFF_SEED=207 …    one seed only (the replay)
//   BELAY_DIFF_SNAPSHOT_EVERY=1 …  snapshots compared every step (default 40)

const FIRST_SEED = 201;
const SEEDS = Number(process.env["BELAY_HTTP_DIFF_SEEDS"] ?? 20);
const STEPS = Number(process.env["BELAY_HTTP_DIFF_STEPS"] ?? 1_000);
const ONE = process.env["BELAY_HTTP_DIFF_SEED"];
const SNAPSHOT_EVERY = Number(process.env["BELAY_DIFF_SNAPSHOT_EVERY"] ?? 40);

/** The differential of the listener on one store kind. */
export async function httpDifferentialSuite(name: PromiseStoreTarget["name"]): Promise<void> {
  const file = `apps/server/test/promises-differential-http-${name}.test.ts`;
  const target = (await promiseStoreTargets(file, { memory: true })).find((t) => t.name === name)!;
  const seeds = ONE !== undefined ? [Number(ONE)] : Array.from({ length: SEEDS }, (_, i) => FIRST_SEED + i);
  const replay = (seed: number) =>
    `BELAY_HTTP_DIFF_SEED=${seed} BELAY_HTTP_DIFF_STEPS=${STEPS} BELAY_DIFF_SNAPSHOT_EVERY=1 node_modules/.bin/vitest run --project server ${file.replace("apps/server/", "")}`;
  const reports: DifferentialReport[] = [];
  const rules = [...SDK_SERVER_DIFFERENCES, ...SERVER_DIFFERENCES];

  describe.skipIf(!target.available)(`promise differential over HTTP: belay-server on ${name} (${target.reason}) vs the SDK's in-memory server`, () => {
    let store: PromiseStore;
    let listener: Listener;
    let system: HttpPromiseSystem;
    let started = 0;

    beforeAll(async () => {
      store = await target.create();
      listener = await serve(createPromiseServer({ store, debug: true, logger: silentLogger }), { port: 0 });
      system = httpPromiseSystem(listener.url, { name: `belay-server on ${name}` });
      await system.start();
      started = performance.now();
    });

    afterAll(async () => {
      const seconds = (performance.now() - started) / 1000;
      await listener?.close();
      if (store !== undefined) await target.destroy(store);
      await target.end();
      if (reports.length === 0) return;
      const hits: Record<string, number> = {};
      for (const report of reports) for (const [rule, n] of Object.entries(report.ruleHits)) if (n > 0) hits[rule] = (hits[rule] ?? 0) + n;
      console.info(
        `[http differential] ${name}: ${reports.length} seeds x ${STEPS} steps, ${system.requests} HTTP requests in ${seconds.toFixed(1)} s; rule hits ${JSON.stringify(hits)}`,
      );
    });

    for (const seed of seeds) {
      it(`seed ${seed}: ${STEPS} steps`, async () => {
        await system.reset();
        const server = (new LocalNetwork() as unknown as { server: SdkServer & { timeoutMode: string } }).server;
        expect(server.timeoutMode).toBe("eager");
        reports.push(await runDifferential({ seed, steps: STEPS, oracle: sdkServerSystem(server), subject: system, rules, snapshotEvery: SNAPSHOT_EVERY, replay }));
      }, 120_000);
    }
  });
}
