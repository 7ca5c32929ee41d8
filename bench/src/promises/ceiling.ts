// The commit ceiling of the benchmark's PostgreSQL server: pgbench's single-row UPDATE per
// transaction (the harness's script, `-M prepared`), at a given number of clients, with every
// transaction's latency logged (`-l`) so its median and p99 are known, not only its mean.
import { spawnSync } from "node:child_process";
import { readFileSync, readdirSync, rmSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import type { PostgresCluster } from "../infra.js";
import { percentile, round2 } from "./config.js";

export interface PgbenchResult {
  readonly clients: number;
  readonly seconds: number;
  readonly tps: number | null;
  readonly latency_avg_ms: number | null;
  readonly latency_p50_ms: number | null;
  readonly latency_p99_ms: number | null;
  readonly transactions: number | null;
  readonly error?: string;
}

export function runPgbench(cluster: PostgresCluster, script: string, scratch: string, opts: { clients: number; seconds: number; scale: number; tag: string }): PgbenchResult {
  const { clients, seconds, scale } = opts;
  const prefix = join(scratch, `pgbench-log-${opts.tag}`);
  const args = [
    "-n", "-M", "prepared", "-c", String(clients), "-j", String(Math.min(2, clients)), "-T", String(seconds),
    "-D", `scale=${scale}`, "-f", script, "-l", `--log-prefix=${prefix}`, "bench_pgbench",
  ];
  const r = spawnSync("pgbench", args, { encoding: "utf8", env: cluster.env, cwd: scratch, timeout: (seconds + 60) * 1000 });
  const out = `${r.stdout ?? ""}${r.stderr ?? ""}`;
  const tps = /^tps = ([0-9.]+)/m.exec(out)?.[1];
  const avg = /^latency average = ([0-9.]+) ms/m.exec(out)?.[1];
  // One line per transaction: client_id transaction_no time_us script_no epoch epoch_us.
  const latencies: number[] = [];
  for (const file of readdirSync(dirname(prefix)).filter((f) => f.startsWith(basename(prefix)))) {
    const path = join(dirname(prefix), file);
    for (const line of readFileSync(path, "utf8").split("\n")) {
      const us = Number(line.split(" ")[2]);
      if (line !== "" && Number.isFinite(us)) latencies.push(us / 1000);
    }
    rmSync(path, { force: true });
  }
  latencies.sort((a, b) => a - b);
  const base = { clients, seconds, transactions: latencies.length || null, latency_p50_ms: round2(percentile(latencies, 50)), latency_p99_ms: round2(percentile(latencies, 99)) };
  if (r.status !== 0 || tps === undefined) return { ...base, tps: null, latency_avg_ms: null, error: `pgbench failed: ${(r.error?.message ?? out).trim().slice(-500)}` };
  return { ...base, tps: Number(tps), latency_avg_ms: avg === undefined ? null : Number(avg) };
}
