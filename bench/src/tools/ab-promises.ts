// A paired A/B of PostgresPromiseStore settings inside one process (not part of `pnpm
// bench:promises`): two stores on one throwaway cluster, each in its own schema with its own
// pipelining pool (as the store opens one from a connection string), run the benchmark's
// lifecycles in alternating rounds — A, B, B, A, A, B, … — so that both see the same minutes of a
// machine whose speed drifts. Per round: lifecycles/s, lifecycle p50 and p99, and the client's CPU
// per lifecycle; then the medians of the rounds per side and the ratio B ÷ A.
//
//   cd bench && npx tsx src/tools/ab-promises.ts [--rounds 8] [--lifecycles 400] [--callers 1,10] [--shape lifecycle|fanout]
//     [--b '{"rowCache":0}'] [--listen]
//
// A is the store's defaults; B is the defaults with `--b`'s config over them (default
// `{"rowCache":0}`). `--listen` subscribes a listener to each store's outbox, as a server that
// delivers does (its hints then go out on the LISTEN connection instead of a pool connection).
import { PostgresPromiseStore, type PostgresPromiseStoreConfig } from "@belay/postgres";
import pg from "pg";
import { log, throwawayCluster } from "../infra.js";
import { type PromiseTarget, type ShapeName, SHAPE_NAMES, runShape } from "../promises/shapes.js";
import { median, percentile } from "../stats.js";

const arg = (name: string, dflt: string): string => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1]! : dflt;
};
const ROUNDS = Number(arg("rounds", "8"));
const LIFECYCLES = Number(arg("lifecycles", "400"));
const SHAPE = arg("shape", "lifecycle") as ShapeName;
if (!SHAPE_NAMES.includes(SHAPE)) throw new Error(`--shape: one of ${SHAPE_NAMES.join(", ")}`);
const CALLERS = arg("callers", "1,10").split(",").map(Number);

const B = arg("b", '{"rowCache":0}');
const LISTEN = process.argv.includes("--listen");
const SIDES: readonly { readonly name: string; readonly config: Partial<PostgresPromiseStoreConfig> }[] = [
  { name: "A: defaults", config: {} },
  { name: `B: ${B}`, config: JSON.parse(B) as Partial<PostgresPromiseStoreConfig> },
];

interface Round {
  readonly rate: number;
  readonly p50: number;
  readonly p99: number;
  readonly cpuMs: number;
}

/** `count` lifecycles over `callers` concurrent callers; each caller's ids its own. */
async function round(target: PromiseTarget, tag: string, count: number, callers: number): Promise<Round> {
  const latencies: number[] = [];
  let next = 0;
  const cpu = process.cpuUsage();
  const start = performance.now();
  await Promise.all(
    Array.from({ length: callers }, async () => {
      for (let i = next++; i < count; i = next++) {
        const t = performance.now();
        await runShape(SHAPE, target, `${tag}-${i}`, null);
        latencies.push(performance.now() - t);
      }
    }),
  );
  const seconds = (performance.now() - start) / 1000;
  const used = process.cpuUsage(cpu);
  latencies.sort((a, b) => a - b);
  return { rate: count / seconds, p50: percentile(latencies, 50)!, p99: percentile(latencies, 99)!, cpuMs: (used.user + used.system) / 1000 / count };
}

const { cluster, start, cleanup } = throwawayCluster("belay-ab-promises-", Number(arg("pg-port", "55435")));
try {
  start(["ab"]);
  const url = cluster.connectionString("ab");
  const sides = SIDES.map((side, i) => {
    const pool = new pg.Pool({ connectionString: url, max: 10, pipeline: true } as pg.PoolConfig);
    pool.on("error", () => undefined);
    const store = new PostgresPromiseStore({ pool, schema: `ab_${i}`, ...side.config });
    const target: PromiseTarget = { name: side.name, handle: (request, now) => store.handle(request, now), close: () => store.close() };
    return { ...side, pool, store, target };
  });
  for (const side of sides) {
    await side.store.migrate();
    if (LISTEN) side.store.subscribeOutbox(() => undefined);
    // Warm-up: every statement prepared on every connection, generic plans chosen.
    await round(side.target, "warm", 300, 10);
  }
  const out = [`# PostgresPromiseStore A/B — ${new Date().toISOString()}`, "", `${cluster.version}, every setting default${LISTEN ? ", each store's outbox listened to" : ""}; ${ROUNDS} rounds of ${LIFECYCLES} lifecycles per side and caller count, alternating (ABBA).`, ""];
  for (const callers of CALLERS) {
    const results = sides.map(() => [] as Round[]);
    for (let r = 0; r < ROUNDS; r++) {
      const order = r % 2 === 0 ? [0, 1] : [1, 0];
      for (const s of order) results[s]!.push(await round(sides[s]!.target, `c${callers}-r${r}-s${s}`, LIFECYCLES, callers));
    }
    out.push(`## ${callers} caller${callers === 1 ? "" : "s"}`, "", "| side | lifecycles/s | p50 ms | p99 ms | client CPU ms per lifecycle | rounds' lifecycles/s |", "|---|---:|---:|---:|---:|---|");
    const med = results.map((rs) => ({ rate: median(rs.map((x) => x.rate))!, p50: median(rs.map((x) => x.p50))!, p99: median(rs.map((x) => x.p99))!, cpu: median(rs.map((x) => x.cpuMs))! }));
    sides.forEach((side, s) => {
      const m = med[s]!;
      out.push(`| ${side.name} | ${m.rate.toFixed(0)} | ${m.p50.toFixed(3)} | ${m.p99.toFixed(3)} | ${m.cpu.toFixed(3)} | ${results[s]!.map((x) => x.rate.toFixed(0)).join(", ")} |`);
    });
    const [a, b] = med as [(typeof med)[number], (typeof med)[number]];
    out.push("", `B ÷ A: lifecycles/s ${(b.rate / a.rate).toFixed(2)}, p50 ${(b.p50 / a.p50).toFixed(2)}, client CPU ${(b.cpu / a.cpu).toFixed(2)}`, "");
  }
  console.log(out.join("\n"));
  for (const side of sides) {
    await side.store.close();
    await side.pool.end();
  }
} catch (error) {
  log(`error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
  process.exitCode = 1;
} finally {
  cleanup();
}
