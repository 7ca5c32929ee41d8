import { fileURLToPath } from "node:url";
import { type NetworkNamespaces, createNetworkNamespaces, databaseUpstream, netnsUnavailableReason } from "@belay/conformance/postgres";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PostgresStore } from "../src/index.js";
import { dropSchema, pgTarget, randomSchema, testPool } from "./pg-target.js";
import { type Child, buildForChildren, maxOverlap, startChild } from "./support/children.js";

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
    let pool: pg.Pool;
    let net: NetworkNamespaces | null = null;
    const schemas: string[] = [];
    const children: Child[] = [];

    beforeAll(() => {
      buildForChildren(packageDir);
      pool = testPool(url!);
    }, 120_000);

    afterAll(async () => {
      for (const child of children) if (child.process.exitCode === null && child.process.signalCode === null) child.process.kill("SIGKILL");
      await Promise.all(children.map((c) => c.exited));
      net?.close();
      for (const schema of schemas) await dropSchema(pool, schema);
      await pool?.end();
      await target.stop();
    });

    it(`two worker processes, each in its own namespace ${DELAY_MS} ms from the database, run every job once and never exceed a queue's limit of ${LIMIT}`, async () => {
      net = await createNetworkNamespaces({ count: 2, delayMs: DELAY_MS, upstream: databaseUpstream(url!), prefix: "belay-test" });
      console.info(`[netns] ${net.namespaces.map((ns) => `${ns.name} ${ns.address} → ${ns.databaseHost}:${ns.databasePort}`).join("; ")}; delay: ${net.delayNote}`);

      const schema = randomSchema("netns");
      schemas.push(schema);
      const store = new PostgresStore({ pool, schema, hints: false });
      await store.migrate();
      const T = Date.now();
      const total = 4_000;
      const limitedCount = 300;
      for (let i = 0; i < total; i += 1_000) {
        const jobs = Array.from({ length: 1_000 }, (_, k) => {
          const n = i + k;
          return { id: `job-${n}`, jobName: "drain.job", queue: n % 40 < 3 ? "limited" : "bulk", payload: `{"n":${n}}`, dueAt: T };
        });
        const results = await store.enqueue({ jobs, now: T });
        expect(results.every((r) => r.status === "created")).toBe(true);
      }
      await store.setConcurrencyLimit({ queue: "limited", limit: LIMIT, actor: "test", now: T });

      // A sampler watching the committed state from this namespace, besides the children's intervals.
      let sampling = true;
      let sampledMax = 0;
      const sampler = (async () => {
        while (sampling) {
          const { rows } = await pool.query(`SELECT count(*)::int AS n FROM "${schema}".jobs WHERE queue = 'limited' AND state = 2`);
          sampledMax = Math.max(sampledMax, rows[0].n as number);
          await new Promise((resolve) => setTimeout(resolve, 5));
        }
      })();

      const before = net.namespaces.map((_, i) => net!.traffic(i));
      const started = net.namespaces.map((_, w) =>
        startIn(net!.exec(w), {
          URL: net!.connectionString(w, url!),
          SCHEMA: schema,
          WORKER_ID: `ns${w}`,
          QUEUES: "limited,bulk",
          LIMITED_QUEUE: "limited",
          LIMITED_SLEEP_MS: "15",
          IDLE_ROUNDS: "20",
        }),
      );
      children.push(...started);
      const exits = await Promise.all(started.map((c) => c.exited));
      sampling = false;
      await sampler;
      expect(exits.map((e) => e.code), exits.map((e) => e.stderr).join("\n")).toEqual([0, 0]);

      // Every byte of the children's database traffic crossed their veth pairs.
      const crossed = net.namespaces.map((_, i) => net!.traffic(i).rxBytes - before[i]!.rxBytes);
      for (const bytes of crossed) expect(bytes, "bytes from a worker namespace across its veth pair").toBeGreaterThan(100_000);

      const summaries = started.map((c) => {
        const line = c.lines.find((l) => l.startsWith("summary "));
        expect(line, "the child printed its summary").toBeDefined();
        return JSON.parse(line!.slice("summary ".length)) as { applied: number; stale: number; intervals: [number, number, string][] };
      });
      expect(summaries.reduce((n, s) => n + s.applied, 0), "outcomes applied across namespaces").toBe(total);
      expect(summaries.reduce((n, s) => n + s.stale, 0), "stale outcomes").toBe(0);
      expect(summaries.filter((s) => s.applied > 0).length, "both namespaces did some of the work").toBe(2);

      const [counts] = (
        await pool.query(`SELECT count(*) FILTER (WHERE state = 3)::int AS succeeded, count(*) FILTER (WHERE attempt <> 1)::int AS retried,
                                 count(*)::int AS total FROM "${schema}".jobs`)
      ).rows;
      expect(counts).toEqual({ succeeded: total, retried: 0, total });
      const [log] = (
        await pool.query(`SELECT count(*) FILTER (WHERE state = 2)::int AS claims, count(*) FILTER (WHERE state = 3)::int AS successes,
                                 count(DISTINCT job_seq) FILTER (WHERE state = 3)::int AS jobs FROM "${schema}".transitions`)
      ).rows;
      expect(log, "one claim and one success recorded per job").toEqual({ claims: total, successes: total, jobs: total });

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
