// Turns the raw records of a bench invocation into markdown: a headline table of medians per
// system (each peer in its best and its default configuration), ratio tables (Belay ÷ peer), and
// per-phase detail tables with the min-max spread across runs as the noise indicator.

export interface BenchRecord {
  readonly system: string;
  readonly phase: string;
  readonly variant: string;
  readonly run: number;
  readonly concurrency?: number;
  readonly roles?: { readonly process: string | null; readonly latency: string | null };
  readonly error?: string;
  readonly [key: string]: unknown;
}

export interface SystemInfo {
  readonly name: string;
  readonly belay: boolean;
  /** What its connection count means: pg backends, redis clients, or none. */
  readonly conns: "pg" | "redis" | "none";
}

type Role = "best" | "default";

const median = (xs: readonly unknown[]): number | null => {
  const s = xs.filter((x): x is number => typeof x === "number" && Number.isFinite(x)).sort((a, b) => a - b);
  if (!s.length) return null;
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
export const fmt = (x: number | null | undefined): string =>
  x == null ? "–" : Number.isInteger(x) ? String(x) : Math.abs(x) >= 100 ? String(Math.round(x)) : Math.abs(x) >= 10 ? (Math.round(x * 10) / 10).toFixed(1) : (Math.round(x * 100) / 100).toFixed(2);
const spread = (xs: readonly unknown[]): string => {
  const s = xs.filter((x): x is number => typeof x === "number");
  return s.length ? `${fmt(Math.min(...s))}–${fmt(Math.max(...s))}` : "–";
};

/** Server-side CPU of a record (PostgreSQL tree or Redis), ms. */
const serverCpuMs = (r: BenchRecord): number | null => {
  const s = r["server"] as { pg_cpu_ms: number | null; redis_cpu_ms: number | null } | undefined;
  if (!s) return null;
  return (s.pg_cpu_ms ?? 0) + (s.redis_cpu_ms ?? 0);
};
const serverCpuPct = (r: BenchRecord): number | null => {
  const s = r["server"] as { pg_cpu_pct: number | null; redis_cpu_pct: number | null } | undefined;
  if (!s) return null;
  return (s.pg_cpu_pct ?? 0) + (s.redis_cpu_pct ?? 0);
};
const conns = (r: BenchRecord, info: SystemInfo | undefined): number | null => {
  const s = r["server"] as { conns_max: number | null; redis_clients_max: number | null } | undefined;
  if (!s || !info || info.conns === "none") return null;
  return info.conns === "pg" ? s.conns_max : s.redis_clients_max;
};
/** PostgreSQL WAL written per 1,000 jobs, kB (null for systems that do not use PostgreSQL). */
const walPer1k = (r: BenchRecord, info: SystemInfo | undefined): number | null => {
  const s = r["server"] as { wal_bytes?: number | null } | undefined;
  const jobs = r["jobs"];
  if (!s || typeof s.wal_bytes !== "number" || info?.conns !== "pg" || typeof jobs !== "number" || jobs === 0) return null;
  return s.wal_bytes / 1024 / jobs * 1000;
};
/** Client + server CPU per 1,000 jobs, ms. */
const cpuPer1k = (r: BenchRecord): number | null => {
  const c = r["client_cpu_ms"];
  const jobs = r["jobs"];
  if (typeof c !== "number" || typeof jobs !== "number" || jobs === 0) return null;
  return ((c + (serverCpuMs(r) ?? 0)) / jobs) * 1000;
};

interface Metric {
  readonly label: string;
  readonly better: "higher" | "lower";
  /** Which records, and which number of each. */
  readonly phase: string;
  readonly concurrency?: number;
  readonly roleKind?: "process" | "latency";
  readonly pick: (r: BenchRecord, info: SystemInfo | undefined) => number | null;
}

export function metrics(concurrency: readonly number[], latencyConcurrency: number): Metric[] {
  const num = (k: string) => (r: BenchRecord) => (typeof r[k] === "number" ? (r[k] as number) : null);
  const out: Metric[] = [
    { label: "enqueue one-by-one, jobs/s", better: "higher", phase: "enqueue_single", pick: num("jobs_per_s") },
    { label: "enqueue batch API, jobs/s", better: "higher", phase: "enqueue_batch", pick: num("jobs_per_s") },
  ];
  for (const c of concurrency) {
    out.push({ label: `process @${c}, jobs/s`, better: "higher", phase: "process", concurrency: c, roleKind: "process", pick: num("jobs_per_s") });
  }
  for (const c of concurrency) {
    out.push({ label: `process @${c}, connections held (max)`, better: "lower", phase: "process", concurrency: c, roleKind: "process", pick: conns });
    out.push({ label: `process @${c}, client CPU % of a core`, better: "lower", phase: "process", concurrency: c, roleKind: "process", pick: num("client_cpu_pct") });
    out.push({ label: `process @${c}, server CPU % of a core`, better: "lower", phase: "process", concurrency: c, roleKind: "process", pick: serverCpuPct });
    out.push({ label: `process @${c}, CPU ms per 1k jobs (client+server)`, better: "lower", phase: "process", concurrency: c, roleKind: "process", pick: cpuPer1k });
    out.push({ label: `process @${c}, PostgreSQL WAL kB per 1k jobs`, better: "lower", phase: "process", concurrency: c, roleKind: "process", pick: walPer1k });
  }
  for (const p of ["p50", "p95", "p99"]) {
    out.push({ label: `latency ${p}, ms (idle, @${latencyConcurrency})`, better: "lower", phase: "latency", roleKind: "latency", pick: num(`${p}_ms`) });
  }
  out.push({ label: "enqueue batch, CPU ms per 1k jobs (client+server)", better: "lower", phase: "enqueue_batch", pick: cpuPer1k });
  out.push({ label: "enqueue batch, PostgreSQL WAL kB per 1k jobs", better: "lower", phase: "enqueue_batch", pick: walPer1k });
  return out;
}

interface Column {
  readonly system: string;
  readonly role: Role | null;
  readonly header: string;
}

function columns(records: readonly BenchRecord[], systems: readonly SystemInfo[]): Column[] {
  const cols: Column[] = [];
  for (const s of systems) {
    const rs = records.filter((r) => r.system === s.name && r.roles);
    const split = rs.some((r) => r.roles!.process === "best" || r.roles!.process === "default" || r.roles!.latency === "best" || r.roles!.latency === "default");
    if (s.belay || !split) cols.push({ system: s.name, role: null, header: s.name });
    else {
      cols.push({ system: s.name, role: "best", header: `${s.name} best` });
      cols.push({ system: s.name, role: "default", header: `${s.name} default` });
    }
  }
  return cols;
}

function matches(r: BenchRecord, m: Metric, col: Column): boolean {
  if (r.system !== col.system || r.phase !== m.phase || r.error) return false;
  if (m.concurrency !== undefined && r.concurrency !== m.concurrency) return false;
  if (m.roleKind) {
    const role = r.roles?.[m.roleKind] ?? null;
    if (role === null) return false;
    if (col.role !== null && role !== "both" && role !== col.role) return false;
  }
  return true;
}

function cell(records: readonly BenchRecord[], m: Metric, col: Column, infos: Map<string, SystemInfo>): number | null {
  return median(records.filter((r) => matches(r, m, col)).map((r) => m.pick(r, infos.get(r.system))));
}

const variantOf = (records: readonly BenchRecord[], col: Column, kind: "process" | "latency"): string => {
  const r = records.find((x) => x.system === col.system && x.roles && (x.roles[kind] === col.role || x.roles[kind] === "both"));
  return r?.variant ?? "–";
};

const table = (head: readonly string[], rows: readonly (readonly string[])[]): string[] => [
  `| ${head.join(" | ")} |`,
  `| ${head.map((_, i) => (i === 0 ? "---" : "---:")).join(" | ")} |`,
  ...rows.map((r) => `| ${r.join(" | ")} |`),
  "",
];

export function summarize(
  records: readonly BenchRecord[],
  systems: readonly SystemInfo[],
  opts: { readonly concurrency: readonly number[]; readonly latencyConcurrency: number },
): string {
  const infos = new Map(systems.map((s) => [s.name, s]));
  const ok = records.filter((r) => !r.error);
  const cols = columns(ok, systems);
  const ms = metrics(opts.concurrency, opts.latencyConcurrency);
  const out: string[] = [];

  // pgbench ceiling
  const pgb = records.filter((r) => r.phase === "pgbench");
  const tps = median(pgb.map((r) => r["tps"]));
  if (pgb.length) {
    out.push("### PostgreSQL ceiling (pgbench, single-row UPDATE per transaction)", "");
    out.push(
      ...table(
        ["clients × seconds", "runs", "tps median", "tps min–max", "avg latency ms (median)"],
        [[`${pgb[0]!["clients"]} × ${pgb[0]!["seconds"]} s`, String(pgb.length), fmt(tps), spread(pgb.map((r) => r["tps"])), fmt(median(pgb.map((r) => r["latency_avg_ms"])))]],
      ),
    );
  }

  out.push("### Medians", "");
  out.push(
    "Columns: each peer in its best and in its default configuration (variants below). Belay runs library",
    "defaults (default history policy) with poolSize = the concurrency under test.",
    "",
  );
  const rows = ms.map((m) => [m.label, ...cols.map((c) => fmt(cell(ok, m, c, infos)))]);
  if (tps !== null) {
    for (const c of opts.concurrency) {
      const m = ms.find((x) => x.phase === "process" && x.concurrency === c && x.label.endsWith("jobs/s"))!;
      rows.push([`process @${c} ÷ pgbench tps`, ...cols.map((col) => {
        const v = cell(ok, m, col, infos);
        return v === null ? "–" : (v / tps).toFixed(2);
      })]);
    }
  }
  out.push(...table(["metric", ...cols.map((c) => c.header)], rows));
  out.push(
    "Variants: " +
      cols
        .filter((c) => c.role !== null)
        .map((c) => `${c.header} = ${variantOf(ok, c, "process")} (process), ${variantOf(ok, c, "latency")} (latency)`)
        .join("; ") +
      ".",
    "",
  );
  const capped = ok.find((r) => r.phase === "process" && typeof r["capped_at_s"] === "number");
  if (capped) {
    out.push(
      `pg-boss default is poll-bound by design (batchSize 1, 2 s polling interval): it is run for ${capped["capped_at_s"]} s and its rate over that window is shown.`,
      "",
    );
  }

  // Ratios
  for (const b of systems.filter((s) => s.belay)) {
    const bcol = cols.find((c) => c.system === b.name);
    if (!bcol) continue;
    const peers = cols.filter((c) => !infos.get(c.system)?.belay);
    if (!peers.length) continue;
    out.push(`### Ratios: ${b.name} ÷ peer`, "");
    out.push("Above 1 is better for Belay where higher is better (throughput); below 1 is better where lower is better.", "");
    const rrows = ms.map((m) => {
      const bv = cell(ok, m, bcol, infos);
      return [
        m.label,
        m.better === "higher" ? "↑" : "↓",
        ...peers.map((p) => {
          const pv = cell(ok, m, p, infos);
          if (bv === null || pv === null || pv === 0) return "–";
          const r = bv / pv;
          const good = m.better === "higher" ? r >= 1 : r <= 1;
          const s = r >= 10 ? r.toFixed(0) : r >= 0.1 ? r.toFixed(2) : r.toPrecision(2);
          return good ? `**${s}**` : s;
        }),
      ];
    });
    out.push(...table(["metric", "better", ...peers.map((p) => p.header)], rrows));
    out.push("Bold: Belay is better.", "");
  }

  // Details
  const groups = new Map<string, BenchRecord[]>();
  for (const r of records) {
    if (r.phase === "pgbench" || r.phase === "env" || r.phase === "child") continue;
    const k = `${r.phase}|${r.system}|${r.variant}|${r.concurrency ?? ""}`;
    groups.set(k, [...(groups.get(k) ?? []), r]);
  }
  const byPhase = (phase: string) => [...groups.entries()].filter(([k]) => k.startsWith(`${phase}|`)).map(([, v]) => v);
  const okOf = (g: readonly BenchRecord[]) => g.filter((r) => !r.error);
  const errs = (g: readonly BenchRecord[]) => g.filter((r) => r.error).length;

  out.push("### Detail: enqueue", "");
  out.push(
    ...table(
      ["phase", "system", "API", "runs ok/failed", "jobs/s median", "jobs/s min–max", "client CPU %", "server CPU %", "conns max"],
      [...byPhase("enqueue_single"), ...byPhase("enqueue_batch")].map((g) => {
        const o = okOf(g);
        return [g[0]!.phase, g[0]!.system, g[0]!.variant, `${o.length}/${errs(g)}`, fmt(median(o.map((r) => r["jobs_per_s"]))), spread(o.map((r) => r["jobs_per_s"])),
          fmt(median(o.map((r) => r["client_cpu_pct"]))), fmt(median(o.map(serverCpuPct))), fmt(median(o.map((r) => conns(r, infos.get(r.system)))))];
      }),
    ),
  );
  out.push("### Detail: processing (first handler start → last job recorded complete in the store)", "");
  out.push(
    ...table(
      ["system", "config", "conc.", "runs ok/failed", "jobs/s median", "jobs/s min–max", "incl. boot", "completion lag ms", "conns max", "client CPU %", "server CPU %", "CPU ms/1k jobs"],
      byPhase("process")
        .sort((a, b) => (a[0]!.concurrency ?? 0) - (b[0]!.concurrency ?? 0))
        .map((g) => {
          const o = okOf(g);
          return [g[0]!.system, g[0]!.variant + (g[0]!["capped_at_s"] ? ` (capped ${g[0]!["capped_at_s"]} s)` : ""), String(g[0]!.concurrency), `${o.length}/${errs(g)}`,
            fmt(median(o.map((r) => r["jobs_per_s"]))), spread(o.map((r) => r["jobs_per_s"])), fmt(median(o.map((r) => r["jobs_per_s_incl_boot"]))),
            fmt(median(o.map((r) => r["completion_lag_ms"]))), fmt(median(o.map((r) => conns(r, infos.get(r.system))))),
            fmt(median(o.map((r) => r["client_cpu_pct"]))), fmt(median(o.map(serverCpuPct))), fmt(median(o.map(cpuPer1k)))];
        }),
    ),
  );
  const lat = byPhase("latency");
  if (lat.length) {
    const first = okOf(lat.flat())[0];
    out.push(`### Detail: idle latency, enqueue → handler start (${first?.["n"] ?? "?"} jobs, ${first?.["gap_ms"] ?? "?"} ms apart)`, "");
    out.push(
      ...table(
        ["system", "config", "runs ok/failed", "p50", "p95", "p99", "max", "p50 min–max", "p99 min–max", "client CPU %", "server CPU %"],
        lat.map((g) => {
          const o = okOf(g);
          return [g[0]!.system, g[0]!.variant, `${o.length}/${errs(g)}`, fmt(median(o.map((r) => r["p50_ms"]))), fmt(median(o.map((r) => r["p95_ms"]))),
            fmt(median(o.map((r) => r["p99_ms"]))), fmt(median(o.map((r) => r["max_ms"]))), spread(o.map((r) => r["p50_ms"])), spread(o.map((r) => r["p99_ms"])),
            fmt(median(o.map((r) => r["client_cpu_pct"]))), fmt(median(o.map(serverCpuPct)))];
        }),
      ),
    );
  }

  const env = records.filter((r) => r.phase === "env");
  if (env.length) {
    const by = new Map<string, number[]>();
    for (const r of env) by.set(r.system, [...(by.get(r.system) ?? []), r["loadavg1"] as number]);
    out.push("### Machine load (1-min load average before each child)", "");
    out.push(...table(["before", "samples", "median", "min–max"], [...by.entries()].map(([k, v]) => [k, String(v.length), fmt(median(v)), spread(v)])));
  }

  const failures = records.filter((r) => r.error);
  if (failures.length) {
    out.push("### Failures", "");
    for (const f of failures) out.push(`- run ${f.run} ${f.system} ${f.phase} ${f.variant}${f.concurrency ? ` @${f.concurrency}` : ""}: ${String(f.error).slice(0, 300)}`);
    out.push("");
  }
  return out.join("\n");
}
