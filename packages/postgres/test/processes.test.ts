import { fileURLToPath } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import { MIGRATIONS, SCHEMA_VERSION } from "../src/migrations/index.js";
import { pgTarget, testDatabase } from "./pg-target.js";
import { type Child, DRAIN_QUEUES_ENV, buildForChildren, enqueueDrainLoad, expectDrainedOnce, maxOverlap, sampleLimitedLeases, startChild, summaryOf } from "./support/children.js";

// Real processes on one database, importing the built package (dist/, built here first):
// concurrent migrations, a multi-process drain under a concurrency limit, and a SIGKILL
// mid-drain followed by recovery.

const target = await pgTarget("processes.test.ts");
const url = target.url;
const packageDir = fileURLToPath(new URL("..", import.meta.url));
const fixture = (name: string) => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));
/** The transitions of the whole log as rows `e(seq, state)` (one per job and state change, from the feed). */
const LOGGED = (schema: string) => `"${schema}".feed f CROSS JOIN LATERAL unnest(f.job_seqs, f.states) AS e(seq, state)`;

const start = (script: string, args: string[], env: Record<string, string> = {}): Child =>
  startChild([process.execPath, fixture(script), ...args], packageDir, env);

describe.skipIf(url === undefined)(`postgres across processes (${target.reason})`, () => {
  const { pool, schema: newSchema, migratedStore } = testDatabase(target);
  beforeAll(() => buildForChildren(packageDir), 120_000);

  it("five processes migrating an empty schema at once all succeed, and it is created once", async () => {
    const schema = newSchema("migrate");
    const startAt = String(Date.now() + 1_500);
    const children = Array.from({ length: 5 }, () => start("migrate-child.mjs", [url!, schema, startAt]));
    const exits = await Promise.all(children.map((c) => c.exited));
    expect(exits.map((e) => e.code)).toEqual([0, 0, 0, 0, 0]);
    const results = children.map((c) => JSON.parse(c.lines[0]!) as { ok: boolean; fromVersion: number; toVersion: number });
    expect(results.every((r) => r.ok)).toBe(true);
    expect(results.filter((r) => r.fromVersion === 0), "exactly one process created the schema").toHaveLength(1);
    expect(results.every((r) => r.toVersion === SCHEMA_VERSION)).toBe(true);
    const { rows } = await pool.query(`SELECT version FROM "${schema}".schema_migrations ORDER BY version`);
    expect(rows).toEqual(MIGRATIONS.map((m) => ({ version: m.version })));
  }, 60_000);

  it("four worker processes drain 20,000 jobs, each succeeding exactly once, never over a limit of 3", async () => {
    const { store, schema } = await migratedStore("drain");
    await enqueueDrainLoad(store, 20_000, (n) => n % 100 < 2, 3, Date.now());
    // A sampler watching the committed state from outside, besides the children's own intervals.
    const sampler = sampleLimitedLeases(pool, schema);
    const children = Array.from({ length: 4 }, (_, w) => start("drain-child.mjs", [], { URL: url!, SCHEMA: schema, WORKER_ID: `w${w}`, ...DRAIN_QUEUES_ENV }));
    const exits = await Promise.all(children.map((c) => c.exited));
    const sampledMax = await sampler.stop();
    expect(exits.map((e) => e.code)).toEqual([0, 0, 0, 0]);

    const summaries = children.map(summaryOf);
    await expectDrainedOnce(pool, schema, summaries, 20_000, "processes");

    const limitedIntervals = summaries.flatMap((s) => s.intervals);
    expect(limitedIntervals).toHaveLength(400);
    const overlap = maxOverlap(limitedIntervals);
    console.info(`[drain] limited queue: at most ${overlap} running at once across processes (sampled leased max ${sampledMax})`);
    const busiest = (at: number) => limitedIntervals.filter(([from, to]) => from < at && at < to).map(([from, to, id]) => `${id} ${from}–${to}`);
    const crowded = limitedIntervals.map(([from]) => from + 0.5).find((at) => busiest(at).length > 3);
    expect(overlap, `handlers of the limited queue running at once (server clock)${crowded === undefined ? "" : `: ${busiest(crowded).join(", ")}`}`).toBeLessThanOrEqual(3);
    expect(sampledMax, "leased jobs of the limited queue seen by the sampler").toBeLessThanOrEqual(3);
    await store.close();
  }, 300_000);

  it("a worker killed mid-drain loses no acknowledged enqueue, and recovery records one outcome per job", async () => {
    const { store, schema } = await migratedStore("crash");
    const leaseMs = 30_000;
    const victim = start("drain-child.mjs", [], {
      URL: url!,
      SCHEMA: schema,
      WORKER_ID: "victim",
      QUEUES: "crash",
      LEASE_MS: String(leaseMs),
      HANDLER_SLEEP_MS: "200",
      PRODUCE: "4000",
      IDLE_ROUNDS: "1000",
    });
    let applied = 0;
    let acked = 0;
    // Kill it right after a claim returns (those jobs are leased, their outcomes never come)
    // once it has both acknowledged and finished a good share of its work.
    await victim.waitFor((line) => {
      if (line.startsWith("ack ")) acked += line.slice(4).split(",").length;
      if (line.startsWith("applied ")) applied += Number(line.split(" ")[1]);
      return line.startsWith("claimed ") && applied >= 300 && acked >= 1_000;
    });
    victim.process.kill("SIGKILL");
    expect((await victim.exited).signal).toBe("SIGKILL");

    const acknowledged = victim.lines.filter((l) => l.startsWith("ack ")).flatMap((l) => l.slice(4).split(","));
    const { rows: present } = await pool.query(`SELECT id FROM "${schema}".jobs WHERE id = ANY($1::text[])`, [acknowledged]);
    expect(present.length, "every acknowledged enqueue survived the kill").toBe(acknowledged.length);
    const { rows: inFlight } = await pool.query(`SELECT count(*)::int AS n FROM "${schema}".jobs WHERE state = 2`);
    expect(inFlight[0].n, "the victim died holding leases").toBeGreaterThan(0);

    // A new worker whose clock is past every lease the victim held.
    const recovery = start("drain-child.mjs", [], {
      URL: url!,
      SCHEMA: schema,
      WORKER_ID: "recovery",
      QUEUES: "crash",
      NOW_OFFSET_MS: String(leaseMs + 5_000),
      EXPIRE: "1",
      IDLE_ROUNDS: "10",
    });
    expect((await recovery.exited).code).toBe(0);
    expect(summaryOf(recovery).expired, "the recovery worker expired the victim's leases").toBeGreaterThan(0);

    const [states] = (
      await pool.query(`SELECT count(*)::int AS total, count(*) FILTER (WHERE state >= 3)::int AS terminal,
                               count(*) FILTER (WHERE attempt = 2)::int AS expired FROM "${schema}".jobs`)
    ).rows;
    expect(states.total).toBeGreaterThanOrEqual(acknowledged.length);
    expect(states.terminal, "every job reached a terminal state").toBe(states.total);
    expect(states.expired).toBe(inFlight[0].n);
    const { rows: doubled } = await pool.query(
      `SELECT e.seq, count(*)::int AS n FROM ${LOGGED(schema)} WHERE e.state >= 3 GROUP BY e.seq HAVING count(*) <> 1`,
    );
    expect(doubled, "no job has more than one terminal transition").toEqual([]);
    const { rows: ended } = await pool.query(`SELECT count(DISTINCT e.seq)::int AS n FROM ${LOGGED(schema)} WHERE e.state >= 3`);
    expect(ended[0].n, "every job has its terminal transition").toBe(states.total);
    await store.close();
  }, 300_000);
});
