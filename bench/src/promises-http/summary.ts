// The markdown of `pnpm bench:promises-http`: medians per system and client count (with the
// min–max across runs), and the ratios Belay ÷ the SDK's in-memory server per store and client
// count, paired within each run (both sides from the same run), shown as the median of the runs'
// ratios with their min–max.
import { type HttpCellRecord, median } from "./config.js";
import { fmt, num, spread, table } from "../markdown.js";

export const BASELINE = "sdk-server";

/** The ratio Belay ÷ SDK server of `path` for `system` at `clients`, per run, with their median. */
export function pairedRatios(records: readonly HttpCellRecord[], system: string, clients: number, path: string): { readonly median: number | null; readonly perRun: readonly (number | null)[] } {
  const ok = records.filter((r) => r.error === undefined);
  const runs = [...new Set(ok.map((r) => r.run))].sort((a, b) => a - b);
  const at = (s: string, run: number) => ok.find((r) => r.system === s && r.clients === clients && r.run === run);
  const perRun = runs.map((run) => {
    const a = num(at(system, run), path);
    const b = num(at(BASELINE, run), path);
    return a === null || b === null || b === 0 ? null : a / b;
  });
  return { median: median(perRun), perRun };
}

export function summarizeHttp(records: readonly HttpCellRecord[]): string {
  const ok = records.filter((r) => r.error === undefined);
  const systems = [...new Set(ok.map((r) => r.system))];
  const clientCounts = [...new Set(ok.map((r) => r.clients))].sort((a, b) => a - b);
  const cells = (system: string, clients: number) => ok.filter((r) => r.system === system && r.clients === clients);
  const med = (rs: readonly HttpCellRecord[], path: string) => fmt(median(rs.map((r) => num(r, path))));
  const out: string[] = [];

  out.push("## Lifecycles over HTTP (medians of the runs)", "");
  out.push(
    "A lifecycle: `promise.create` (targeted, SDK-shaped tags) → `task.acquire` (version 0) → `task.fulfill` (version 1, settling the promise), each its own `POST /` and answer; latency is per lifecycle at the client, first request sent to last answer parsed. Per-kind columns are p50s of single requests. CPU: client process, server process and (PostgreSQL) the cluster's process tree, ms per lifecycle. PG write xacts: transaction ids the cluster assigned per lifecycle (every transaction that wrote, whoever ran it); PG WAL kB: WAL written per lifecycle.",
    "",
  );
  // `op_p50_ms` keys hold dots (`task.acquire`): read them directly.
  const opMed = (rs: readonly HttpCellRecord[], kind: string) => fmt(median(rs.map((r) => r.op_p50_ms?.[kind] ?? null)));
  out.push(
    table(
      ["system", "clients", "runs", "lifecycles/s", "min–max", "p50 ms", "p99 ms", "create p50", "acquire p50", "fulfill p50", "client CPU", "server CPU", "PG CPU", "PG write xacts", "PG WAL kB"],
      systems.flatMap((s) =>
        clientCounts.map((c) => {
          const rs = cells(s, c);
          return [
            s,
            String(c),
            String(rs.length),
            med(rs, "lifecycles_per_s"),
            spread(rs.map((r) => num(r, "lifecycles_per_s"))),
            med(rs, "p50_ms"),
            med(rs, "p99_ms"),
            opMed(rs, "promise.create"),
            opMed(rs, "task.acquire"),
            opMed(rs, "task.fulfill"),
            med(rs, "client_cpu_ms_per_lifecycle"),
            med(rs, "server_cpu_ms_per_lifecycle"),
            med(rs, "postgres_cpu_ms_per_lifecycle"),
            med(rs, "pg_write_xacts_per_lifecycle"),
            med(rs, "pg_wal_kb_per_lifecycle"),
          ];
        }),
      ),
    ),
    "",
  );

  const belays = systems.filter((s) => s !== BASELINE);
  if (systems.includes(BASELINE) && belays.length > 0) {
    out.push(`## Ratios: Belay ÷ ${BASELINE} (same HTTP harness, paired within each run; median, min–max)`, "");
    out.push("lifecycles/s: above 1 = Belay is faster. p50/p99: below 1 = Belay answers sooner.", "");
    const cell = (s: string, c: number, path: string) => {
      const { median: m, perRun } = pairedRatios(records, s, c, path);
      return m === null ? "–" : `${fmt(m)} (${spread(perRun)})`;
    };
    out.push(
      table(
        ["system", "clients", "lifecycles/s ratio", "p50 ratio", "p99 ratio"],
        belays.flatMap((s) => clientCounts.map((c) => [s, String(c), cell(s, c, "lifecycles_per_s"), cell(s, c, "p50_ms"), cell(s, c, "p99_ms")])),
      ),
      "",
    );
  }

  const sizes = ok.filter((r) => r.system === BASELINE && r["sdk_sizes"] !== undefined);
  if (sizes.length > 0) {
    out.push(
      `SDK server state at the end of each cell (warm-up + window; its \`outgoing\` array is scanned linearly by every create, and nothing drains it): ${sizes
        .map((r) => `run ${r.run} @${r.clients}: ${Object.entries(r["sdk_sizes"] as Record<string, number>).map(([k, v]) => `${k} ${v}`).join(", ")}`)
        .join("; ")}.`,
      "",
    );
  }
  const failed = records.filter((r) => r.error !== undefined);
  if (failed.length > 0) {
    out.push("## Failures", "", ...failed.map((r) => `- ${r.system} run ${r.run} @${r.clients}: ${r.error}`), "");
  }
  const loads = records.map((r) => num(r, "loadavg1")).filter((x): x is number => x !== null);
  if (loads.length > 0) out.push(`Machine load (1-minute average at each window's start): ${fmt(Math.min(...loads))}–${fmt(Math.max(...loads))}.`, "");
  return out.join("\n");
}
