// Where a runner's own PostgreSQL connections go. On `--network loopback` (the default) that is the
// cluster's unix socket, as before; on `--network netns-<d>ms` main.ts runs the runner inside a
// network namespace and hands it (BENCH_NETWORK_PATH, JSON `{ name, host, port, delayMs, delayKind }`)
// the forwarder across the veth pair, so every statement of the system under test takes a real
// round trip. The harness's own connections (resets, completion counts) stay on the socket.
import pg from "pg";
import { cfg, pgConnString } from "../child.js";

export interface BenchNetwork {
  readonly name: string;
  readonly host: string;
  readonly port: number;
  readonly delayMs: number;
  readonly delayKind: string;
}

export const network: BenchNetwork | null = process.env["BENCH_NETWORK_PATH"] ? (JSON.parse(process.env["BENCH_NETWORK_PATH"]) as BenchNetwork) : null;

/** The connection string of the system under test: across the namespace's veth pair, or the socket. */
export function systemConnString(database: string): string {
  if (network === null) return pgConnString(database);
  return `postgres://${cfg.pg.user}@${network.host}:${network.port}/${database}`;
}

/**
 * Round trips of `SELECT 1` on the system's own path (after a warm-up), as the process record's
 * `network` facts: what one round trip costs where the system runs.
 */
export async function probeRoundTrip(database: string, samples = 100): Promise<Record<string, unknown>> {
  const client = new pg.Client({ connectionString: systemConnString(database) });
  await client.connect();
  try {
    const times: number[] = [];
    for (let i = 0; i < samples + 10; i++) {
      const t = performance.now();
      await client.query("SELECT 1");
      if (i >= 10) times.push(performance.now() - t);
    }
    times.sort((a, b) => a - b);
    const at = (p: number) => Math.round(times[Math.min(times.length - 1, Math.floor(p * times.length))]! * 100) / 100;
    return {
      network: network?.name ?? "loopback",
      network_delay_ms: network?.delayMs ?? 0,
      network_delay_kind: network?.delayKind ?? "none",
      rtt_p50_ms: at(0.5),
      rtt_p90_ms: at(0.9),
    };
  } finally {
    await client.end();
  }
}
