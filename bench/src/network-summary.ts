// `--network`: the shapes of the path between a PostgreSQL system's runner and the cluster, and
// the markdown section that compares a system's processing rate on each with the same run's
// loopback figure (issue 17's target: 5 ms each way at 50 handlers ≥ 70 % of loopback).
import type { NetworkNamespaces } from "@belay/conformance/postgres";
import { type BenchRecord, fmt } from "./summary.js";

/** One `--network` value. */
export interface NetworkShape {
  /** `loopback` or `netns-<d>ms`. */
  readonly name: string;
  /** The runner runs in a network namespace of its own, across a veth pair. */
  readonly netns: boolean;
  /** Added each way, ms. */
  readonly delayMs: number;
}

/** Parses `--network` (a comma list of `loopback` and `netns-<d>ms`). */
export function parseNetworks(value: string): NetworkShape[] {
  const names = value.split(",").map((s) => s.trim()).filter(Boolean);
  if (names.length === 0) throw new Error("--network must name at least one network (loopback, netns-<d>ms)");
  const out: NetworkShape[] = [];
  for (const name of names) {
    if (name === "loopback") out.push({ name, netns: false, delayMs: 0 });
    else {
      const m = /^netns-(\d+(?:\.\d+)?)ms$/.exec(name);
      if (!m) throw new Error(`--network: unknown network ${JSON.stringify(name)}; known: loopback, netns-<d>ms (e.g. netns-0ms, netns-5ms)`);
      out.push({ name, netns: true, delayMs: Number(m[1]) });
    }
    if (out.filter((n) => n.name === name).length > 1) throw new Error(`--network: ${name} is listed twice`);
  }
  return out;
}

const median = (xs: readonly number[]): number | null => {
  const s = [...xs].filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (!s.length) return null;
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
const range = (xs: readonly number[]): string => (xs.length ? `${fmt(Math.min(...xs))}–${fmt(Math.max(...xs))}` : "–");
const num = (r: BenchRecord, k: string): number | null => (typeof r[k] === "number" ? (r[k] as number) : null);
/** Median jobs per call and p50 latency of one traced store call across runs (`store_calls`, systems/belay.ts). */
const call = (rs: readonly BenchRecord[], op: string): string => {
  const of = (k: "jobs_per_call" | "p50_ms") =>
    median(rs.map((r) => ((r["store_calls"] as Record<string, Record<string, number | null>> | undefined)?.[op]?.[k] ?? Number.NaN)));
  const j = of("jobs_per_call");
  return j === null ? "–" : `${fmt(j)}, ${fmt(of("p50_ms"))}`;
};

/**
 * Per base system, configuration and concurrency: processing jobs/s on each network (median and
 * min–max of the runs), the round trip measured on it (`SELECT 1` p50), the ratio to the same
 * run's loopback figure (paired per run: median, min–max), client CPU and the forwarder's CPU.
 * Empty when only loopback ran.
 */
export function networkSummary(
  records: readonly BenchRecord[],
  systems: readonly { readonly name: string; readonly network: NetworkShape }[],
  concurrency: readonly number[],
  nets: readonly NetworkNamespaces[],
): string {
  if (!systems.some((s) => s.network.netns)) return "";
  const out: string[] = ["", "## Across a network (`--network`)", ""];
  for (const net of nets) out.push(`- ${net.delayMs} ms each way: ${net.delayNote}.`);
  out.push(
    "- Each `netns-*` runner runs in a network namespace of its own and reaches the cluster's unix socket through a forwarder on the other end of its veth pair (127.77.X.0/30 addresses); `loopback` is the unix socket in the harness's namespace. `netns-0ms` isolates what the veth and the forwarder cost without added delay.",
    "",
  );
  const base = (name: string) => name.split("@")[0]!;
  const bases = [...new Set(systems.map((s) => base(s.name)))];
  const ok = records.filter((r) => r.phase === "process" && !r.error);
  const forwarder = records.filter((r) => r.phase === "env" && r.variant === "forwarder");
  for (const b of bases) {
    const members = systems.filter((s) => base(s.name) === b);
    if (!members.some((m) => m.network.netns)) continue;
    const variants = [...new Set(ok.filter((r) => base(r.system) === b).map((r) => r.variant))];
    out.push(`### ${b}: processing by network`, "");
    out.push("| config | conc. | network | runs | jobs/s median | jobs/s min–max | ÷ loopback (same run) median | ÷ loopback min–max | ÷ netns-0ms (same run) median | RTT p50 ms | claim: jobs/call, p50 ms | report: jobs/call, p50 ms | client CPU % | forwarder CPU % of the child's run |");
    out.push("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for (const variant of variants) {
      for (const c of concurrency) {
        const of = (name: string) => ok.filter((r) => r.system === name && r.variant === variant && r.concurrency === c);
        const loopback = members.find((m) => !m.network.netns);
        const loopRuns = new Map((loopback ? of(loopback.name) : []).map((r) => [r.run, num(r, "jobs_per_s")]));
        const zero = members.find((m) => m.network.netns && m.network.delayMs === 0);
        const zeroRuns = new Map((zero ? of(zero.name) : []).map((r) => [r.run, num(r, "jobs_per_s")]));
        for (const m of members) {
          const rs = of(m.name);
          if (!rs.length) continue;
          const rates = rs.map((r) => num(r, "jobs_per_s")).filter((x): x is number => x !== null);
          const paired = (base: Map<number, number | null>) =>
            rs
              .map((r) => {
                const l = base.get(r.run);
                const v = num(r, "jobs_per_s");
                return l && v !== null ? v / l : null;
              })
              .filter((x): x is number => x !== null);
          const ratios = paired(loopRuns);
          const overZero = m.network.delayMs > 0 ? paired(zeroRuns) : [];
          const fw = forwarder.filter((r) => r.system === m.name).map((r) => num(r, "forwarder_cpu_pct")).filter((x): x is number => x !== null);
          out.push(
            `| ${variant} | ${c} | ${m.network.name} | ${rs.length} | ${fmt(median(rates))} | ${range(rates)} | ${m.network.netns ? fmt(median(ratios)) : "1"} | ${m.network.netns ? range(ratios) : "–"} | ${overZero.length ? fmt(median(overZero)) : "–"} | ${fmt(median(rs.map((r) => num(r, "rtt_p50_ms") ?? Number.NaN)))} | ${call(rs, "claim")} | ${call(rs, "reportOutcomes")} | ${fmt(median(rs.map((r) => num(r, "client_cpu_pct") ?? Number.NaN)))} | ${m.network.netns ? fmt(median(fw)) : "–"} |`,
          );
        }
      }
    }
    out.push("");
  }
  return `${out.join("\n")}\n`;
}
