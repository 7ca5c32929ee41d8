// The markdown of `pnpm bench:promises`: medians per system, shape and caller count (with the
// min–max across runs as the noise indicator), pgbench's ceiling, and the targets as
// ratios. Ratios against pgbench and against the SDK server are paired within a run (both sides
// measured in the same run) and the median of the runs' ratios is shown.
import { median } from "./config.js";
import { fmt, num, spread, table } from "../markdown.js";
import { SHAPES, type ShapeName } from "./shapes.js";

export interface PromiseRecord {
  readonly system: string;
  readonly run: number;
  readonly shape: string;
  readonly callers: number;
  readonly error?: string;
  readonly [key: string]: unknown;
}

/** `fsyncDelayUs`: the emulated disk flush of the run (`--fsync-delay-us`); PostgreSQL verdicts then say so. */
export function summarizePromises(records: readonly PromiseRecord[], opts: { readonly liveRoots: number; readonly fsyncDelayUs: number }): string {
  const met = (yes: boolean) => (yes ? (opts.fsyncDelayUs > 0 ? `yes (emulated disk, ${opts.fsyncDelayUs} µs flush)` : "yes") : "no");
  const ok = records.filter((r) => r.error === undefined);
  const runs = [...new Set(records.map((r) => r.run))].sort((a, b) => a - b);
  const cells = (system: string, shape: string, callers: number) => ok.filter((r) => r.system === system && r.shape === shape && r.callers === callers);
  const at = (system: string, shape: string, callers: number, run: number) => cells(system, shape, callers).find((r) => r.run === run);
  const systems = [...new Set(ok.filter((r) => r.system !== "pgbench").map((r) => r.system))];
  const shapes = [...new Set(ok.filter((r) => r.system !== "pgbench").map((r) => r.shape))].filter((s): s is ShapeName => s in SHAPES);
  const callerCounts = [...new Set(ok.filter((r) => r.system !== "pgbench").map((r) => r.callers))].sort((a, b) => a - b);
  const out: string[] = [];

  // ---- pgbench ----
  const pgbOf = (variant: string, clients: number) => ok.filter((r) => r.system === "pgbench" && r.shape === `pgbench-${variant}` && r.callers === clients);
  const pgb = (clients: number) => pgbOf("update", clients);
  const pgbClients = [...new Set(ok.filter((r) => r.system === "pgbench").map((r) => r.callers))].sort((a, b) => a - b);
  if (pgbClients.length > 0) {
    out.push("## PostgreSQL commit ceiling (pgbench, `-M prepared`, same server)", "");
    out.push(
      "`update`: one single-row UPDATE per transaction (autocommit: one round trip, one durable commit), the ceiling the targets use. `rt4`: BEGIN; SELECT … FOR UPDATE; UPDATE; COMMIT — the smallest shape of one store operation (four round trips, one durable commit), the yardstick for what round trips cost.",
      "",
    );
    const variants = ["update", "rt4"].filter((v) => pgbClients.some((c) => pgbOf(v, c).length > 0));
    out.push(
      table(
        ["script", "clients", "runs", "tps median", "tps min–max", "latency avg ms", "latency p50 ms", "latency p99 ms"],
        variants.flatMap((v) =>
          pgbClients.map((c) => {
            const rs = pgbOf(v, c);
            return [v, String(c), String(rs.length), fmt(median(rs.map((r) => num(r, "tps")))), spread(rs.map((r) => num(r, "tps"))), fmt(median(rs.map((r) => num(r, "latency_avg_ms")))), fmt(median(rs.map((r) => num(r, "latency_p50_ms")))), fmt(median(rs.map((r) => num(r, "latency_p99_ms"))))];
          }),
        ),
      ),
      "",
    );
  }

  // ---- medians ----
  out.push("## Medians per system, shape and callers", "");
  out.push(
    "Every operation is its own transaction and commit: a lifecycle is 3 commits, a fan-out 34. Latency is per lifecycle (first request sent → last answer), at the caller. `commits/lc measured` is PostgreSQL's `xact_commit` over the window ÷ lifecycles; server CPU is the whole PostgreSQL process tree's.",
    "",
  );
  const rows: string[][] = [];
  for (const shape of shapes) {
    for (const system of systems) {
      for (const callers of callerCounts) {
        const rs = cells(system, shape, callers);
        if (rs.length === 0) continue;
        const m = (k: string) => median(rs.map((r) => num(r, k)));
        rows.push([
          system,
          shape,
          String(callers),
          String(rs.length),
          fmt(m("lifecycles_per_s")),
          spread(rs.map((r) => num(r, "lifecycles_per_s"))),
          fmt(m("ops_per_s")),
          fmt(m("p50_ms")),
          fmt(m("p99_ms")),
          String(SHAPES[shape]?.commits ?? "–"),
          fmt(m("server.commits_per_lifecycle")),
          fmt(m("client_cpu_ms_per_lifecycle")),
          fmt(m("server.cpu_ms_per_lifecycle")),
          fmt(m("server.wal_kb_per_lifecycle")),
        ]);
      }
    }
  }
  out.push(
    table(["system", "shape", "callers", "runs", "lifecycles/s", "lifecycles/s min–max", "ops/s", "p50 ms", "p99 ms", "commits/lc", "commits/lc measured", "client CPU ms/lc", "server CPU ms/lc", "WAL kB/lc"], rows),
    "",
    `\`*-roots\`: ${opts.liveRoots} pending targeted promises (each a pending task with its retry timer and a queued \`execute\`) created before the cell's warm-up and left pending.`,
    "",
  );

  // ---- targets ----
  const paired = (fn: (run: number) => number | null) => {
    const xs = runs.map(fn);
    return { median: median(xs), spread: spread(xs), n: xs.filter((x) => x !== null).length };
  };
  const targets: string[][] = [];
  const tps = (clients: number, run: number) => num(pgb(clients).find((r) => r.run === run), "tps");
  const pgP50 = (run: number) => num(pgb(1).find((r) => r.run === run), "latency_p50_ms");
  for (const shape of shapes) {
    const commits = SHAPES[shape].commits;
    const maxCallers = Math.max(...callerCounts);
    if (cells("postgres", shape, maxCallers).length > 0 && pgbClients.includes(maxCallers)) {
      const ratio = paired((run) => {
        const lc = num(at("postgres", shape, maxCallers, run), "lifecycles_per_s");
        const t = tps(maxCallers, run);
        return lc === null || t === null ? null : (lc * commits) / t;
      });
      const goal = shape === "lifecycle" ? "≥ 0.8" : "(≥ 0.8, same yardstick)";
      targets.push([`PostgreSQL ${shape} @${maxCallers}: lifecycles/s ÷ (pgbench tps @${maxCallers} ÷ ${commits} commits)`, fmt(ratio.median), ratio.spread, goal, ratio.median === null ? "–" : met(ratio.median >= 0.8)]);
      const floor = paired((run) => {
        const lc = num(at("postgres", shape, maxCallers, run), "lifecycles_per_s");
        const t = num(pgbOf("rt4", maxCallers).find((r) => r.run === run), "tps");
        return lc === null || t === null ? null : (lc * commits) / t;
      });
      if (floor.n > 0) targets.push([`PostgreSQL ${shape} @${maxCallers}: lifecycles/s ÷ (pgbench rt4 tps @${maxCallers} ÷ ${commits})`, fmt(floor.median), floor.spread, "(context: the 4-round-trip shape)", "–"]);
      const rt4vsUpdate = paired((run) => {
        const a = num(pgbOf("rt4", maxCallers).find((r) => r.run === run), "tps");
        const b = tps(maxCallers, run);
        return a === null || b === null ? null : a / b;
      });
      if (shape === "lifecycle" && rt4vsUpdate.n > 0) targets.push([`pgbench rt4 tps ÷ update tps @${maxCallers} (what 4 round trips per commit leave of the ceiling)`, fmt(rt4vsUpdate.median), rt4vsUpdate.spread, "(context)", "–"]);
    }
    if (cells("postgres", shape, 1).length > 0 && pgbClients.includes(1)) {
      const ratio = paired((run) => {
        const p50 = num(at("postgres", shape, 1, run), "p50_ms");
        const c = pgP50(run);
        return p50 === null || c === null ? null : p50 / (c * commits);
      });
      const p50 = median(cells("postgres", shape, 1).map((r) => num(r, "p50_ms")));
      const bound = median(pgb(1).map((r) => num(r, "latency_p50_ms")));
      targets.push([`PostgreSQL ${shape} p50 @1 ÷ (pgbench p50 @1 × ${commits} commits)`, fmt(ratio.median), ratio.spread, "≈ 1 is the commit bound", `${fmt(p50)} ms vs ${fmt(bound === null ? null : bound * commits)} ms`]);
      if (shape === "lifecycle") {
        targets.push([`PostgreSQL lifecycle p50 @1, absolute`, `${fmt(p50)} ms`, spread(cells("postgres", shape, 1).map((r) => num(r, "p50_ms"))), "≤ 0.87 ms", p50 === null ? "–" : p50 <= 0.87 ? met(true) : `no: 3 durable commits alone take ≥ ${fmt(bound === null ? null : bound * 3)} ms here`]);
      }
    }
    for (const callers of callerCounts) {
      if (cells("sqlite-roots", shape, callers).length === 0 || cells("sdk-server-roots", shape, callers).length === 0) continue;
      const ratio = paired((run) => {
        const a = num(at("sqlite-roots", shape, callers, run), "lifecycles_per_s");
        const b = num(at("sdk-server-roots", shape, callers, run), "lifecycles_per_s");
        return a === null || b === null || b === 0 ? null : a / b;
      });
      targets.push([`SQLite ÷ SDK server, ${opts.liveRoots} live roots, ${shape} @${callers} (lifecycles/s)`, fmt(ratio.median), ratio.spread, "≥ 5", ratio.median === null ? "–" : ratio.median >= 5 ? "yes" : "no"]);
      // The processes' own CPU per lifecycle: what each costs, whatever else the machine runs.
      const cpu = paired((run) => {
        const a = num(at("sqlite-roots", shape, callers, run), "client_cpu_ms_per_lifecycle");
        const b = num(at("sdk-server-roots", shape, callers, run), "client_cpu_ms_per_lifecycle");
        return a === null || b === null || a === 0 ? null : b / a;
      });
      targets.push([`SDK server ÷ SQLite, CPU ms per lifecycle, ${shape} @${callers}`, fmt(cpu.median), cpu.spread, "(context)", "–"]);
    }
  }
  if (targets.length > 0) {
    out.push("## Targets (issue 14)", "", "Ratios paired within each run; the median of the runs and their min–max.", "");
    out.push(table(["target", "median", "min–max", "goal", "met? / figures"], targets), "");
  }

  // ---- where the time goes, per operation ----
  const kinds = [...new Set(ok.flatMap((r) => Object.keys((r["op_p50_ms"] as Record<string, number> | undefined) ?? {})))];
  if (kinds.length > 0) {
    out.push("## Operation latency p50 (ms) at 1 caller", "");
    const opRows: string[][] = [];
    for (const shape of shapes) {
      for (const system of systems) {
        const rs = cells(system, shape, 1);
        if (rs.length === 0) continue;
        opRows.push([system, shape, ...kinds.map((k) => fmt(median(rs.map((r) => (r["op_p50_ms"] as Record<string, number | null> | undefined)?.[k] ?? null))))]);
      }
    }
    out.push(table(["system", "shape", ...kinds], opRows), "");
  }

  // ---- the SDK server's sizes ----
  const sdk = ok.filter((r) => r.system === "sdk-server-roots" && r["sdk_sizes"] !== undefined);
  if (sdk.length > 0) {
    out.push("## SDK server: sizes of its linearly scanned arrays over the window (run 1)", "");
    out.push(
      table(
        ["shape", "callers", "promises", "promise timers", "task timers", "outgoing messages"],
        sdk
          .filter((r) => r.run === runs[0])
          .map((r) => {
            const s = r["sdk_sizes"] as { before: Record<string, number>; after: Record<string, number> };
            const pair = (k: string) => `${s.before[k]} → ${s.after[k]}`;
            return [r.shape, String(r.callers), pair("promises"), pair("promiseTimers"), pair("taskTimers"), pair("outgoing")];
          }),
      ),
      "",
    );
  }

  // ---- failures, load ----
  const failed = records.filter((r) => r.error !== undefined);
  if (failed.length > 0) {
    out.push("## Failures", "", table(["system", "run", "shape", "callers", "error"], failed.map((r) => [r.system, String(r.run), r.shape, String(r.callers), String(r.error).replaceAll("|", "\\|").slice(0, 300)])), "");
  }
  const loads = [...new Set(records.map((r) => r.system))].map((system) => {
    const xs = runs.map((run) => num(records.find((r) => r.system === system && r.run === run), "loadavg1"));
    return [system, fmt(median(xs)), spread(xs)];
  });
  out.push("## Machine load (1-minute load average before each system)", "", table(["system", "median", "min–max"], loads), "");
  return out.join("\n");
}
