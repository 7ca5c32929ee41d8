import { fileURLToPath } from "node:url";
import { type NetworkNamespaces, createNetworkNamespaces, databaseUpstream, netnsUnavailableReason } from "@belay/conformance/postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pgTarget, testDatabase } from "./pg-target.js";
import { type Child, DRAIN_QUEUES_ENV, buildForChildren, enqueueDrainLoad, expectDrainedOnce, maxOverlap, sampleLimitedLeases, startChild, summaryOf } from "./support/children.js";

// Worker processes across a real (virtual) network: each of two drain processes
// (fixtures/drain-child.mjs, the built package) runs in a network namespace of its own and
// reaches the database over a veth pair with 1 ms added each way — tc netem where the kernel has
// it, else the helper's userspace delay proxy, which says so loudly. Per-queue concurrency limits
// must stay exact and every job must run once when claims and reports take real round trips.
// Needs root and iproute2: without them this file fails under CI=true and skips loudly otherwise.

const target = await pgTarget("netns.test.ts");
const url = target.url;
const packageDir = fileURLToPath(new URL("..", import.meta.url));
const fixture = fileURLToPath(new URL("./fixtures/drain-child.mjs", import.meta.url));
const DELAY_MS = 1;
const LIMIT = 3;

const unavailable = netnsUnavailableReason();
if (unavailable !== null) {
  const message = `[postgres] netns.test.ts: ${unavailable}. The per-queue limit across network namespaces is NOT verified.`;
  if (process.env["CI"] === "true") throw new Error(`${message} Under CI a missing prerequisite fails the run.`);
  console.warn(`${message} SKIPPING these tests.`);
}

const startIn = (prefix: readonly string[], env: Record<string, string>): Child => startChild([...prefix, process.execPath, fixture], packageDir, env);

describe.skipIf(url === undefined || (unavailable !== null && process.env["CI"] !== "true"))(
  `postgres across network namespaces (${target.reason})`,
  () => {
    const { pool, migratedStore } = testDatabase(target);
    let net: NetworkNamespaces | null = null;
    const children: Child[] = [];

    beforeAll(() => buildForChildren(packageDir), 120_000);

    // Before the schemas are dropped (testDatabase's after-hook runs after this one).
    afterAll(async () => {
      for (const child of children) if (child.process.exitCode === null && child.process.signalCode === null) child.process.kill("SIGKILL");
      await Promise.all(children.map((c) => c.exited));
      net?.close();
    });

    it(`two worker processes, each in its own namespace ${DELAY_MS} ms from the database, run every job once and never exceed a queue's limit of ${LIMIT}`, async () => {
      net = await createNetworkNamespaces({ count: 2, delayMs: DELAY_MS, upstream: databaseUpstream(url!), prefix: "belay-test" });
      console.info(`[netns] ${net.namespaces.map((ns) => `${ns.name} ${ns.address} → ${ns.databaseHost}:${ns.databasePort}`).join("; ")}; delay: ${net.delayNote}`);

      const { store, schema } = await migratedStore("netns");
      const total = 4_000;
      const limitedCount = 300;
      await enqueueDrainLoad(store, total, (n) => n % 40 < 3, LIMIT, Date.now());
      // A sampler watching the committed state from this namespace, besides the children's intervals.
      const sampler = sampleLimitedLeases(pool, schema);

      const before = net.namespaces.map((_, i) => net!.traffic(i));
      const started = net.namespaces.map((_, w) =>
        startIn(net!.exec(w), { URL: net!.connectionString(w, url!), SCHEMA: schema, WORKER_ID: `ns${w}`, ...DRAIN_QUEUES_ENV }),
      );
      children.push(...started);
      const exits = await Promise.all(started.map((c) => c.exited));
      const sampledMax = await sampler.stop();
      expect(exits.map((e) => e.code), exits.map((e) => e.stderr).join("\n")).toEqual([0, 0]);

      // Every byte of the children's database traffic crossed their veth pairs.
      const crossed = net.namespaces.map((_, i) => net!.traffic(i).rxBytes - before[i]!.rxBytes);
      for (const bytes of crossed) expect(bytes, "bytes from a worker namespace across its veth pair").toBeGreaterThan(100_000);

      const summaries = started.map(summaryOf);
      expect(summaries).toHaveLength(2);
      await expectDrainedOnce(pool, schema, summaries, total, "namespaces");

      const limitedIntervals = summaries.flatMap((s) => s.intervals);
      expect(limitedIntervals).toHaveLength(limitedCount);
      const overlap = maxOverlap(limitedIntervals);
      const perNamespace = summaries.map((s) => maxOverlap(s.intervals));
      console.info(`[netns] limited queue: at most ${overlap} running at once across namespaces (per namespace ${perNamespace.join(", ")}; sampled leased max ${sampledMax}); KiB across each veth: ${crossed.map((b) => Math.round(b / 1024)).join(", ")}`);
      expect(overlap, "handlers of the limited queue running at once across namespaces (server clock)").toBeLessThanOrEqual(LIMIT);
      expect(sampledMax, "leased jobs of the limited queue seen by the sampler").toBeLessThanOrEqual(LIMIT);
      // The limit was reached, so the bound above is a real constraint and not an accident of a slow claim loop.
      expect(Math.max(overlap, sampledMax), "the limited queue ran at its limit at some point").toBe(LIMIT);
      await store.close();
    }, 300_000);
  },
);
