// Helpers for the system runners (src/systems/*.ts), each started by main.ts as its own child
// process per run. Adapted from shared/bench/peers/common.mjs: same clock, same in-flight-limited
// loop, same latency grid and percentile rule. A runner reads its settings from BENCH_CONFIG
// (JSON) and writes one line `@@bench {json}` per measurement on stdout; everything else it prints
// is passed through to the harness log.
import pg from "pg";
import { type ChildConfig, HARNESS_APP } from "./shared.js";

export { type ChildConfig, HARNESS_APP };

// A phase's work carries its phase's abort signal (`PhaseRunner.run` hands it over): a phase that
// timed out is aborted, its loops stop, its waits throw and anything it would still emit is
// dropped, so a straggler never pollutes the next phase's numbers. Passed by hand rather than
// kept in an `AsyncLocalStorage`, which turns on Node's promise hooks for the whole process: a
// cost on every promise of the system measured, peers and Belay alike.

export const cfg: ChildConfig = JSON.parse(process.env["BENCH_CONFIG"] ?? "null") as ChildConfig;
if (cfg === null) throw new Error("BENCH_CONFIG is not set: runners are started by src/main.ts");


export function pgConnString(database: string, applicationName?: string): string {
  const { host, port, user } = cfg.pg;
  const app = applicationName ? `&application_name=${encodeURIComponent(applicationName)}` : "";
  return `postgres://${user}@localhost:${port}/${database}?host=${encodeURIComponent(host)}${app}`;
}

/** A connection of the harness (resets, completion counts), not counted as the system's. */
export async function harnessClient(database: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: pgConnString(database, HARNESS_APP) });
  client.on("error", (e) => console.error(`[harness pg] ${e.message}`));
  await client.connect();
  return client;
}

/**
 * A PostgreSQL runner's harness connection to its database, opened by the first session: a fresh
 * session drops the system's `schema` (its store starts empty), `count` reads how far a phase got,
 * `end` is the adapter's dispose.
 */
export class HarnessAdmin {
  #client: pg.Client | null = null;

  constructor(readonly schema: string) {}

  async prepare(fresh: boolean): Promise<void> {
    this.#client ??= await harnessClient(cfg.database!);
    if (fresh) await this.#client.query(`drop schema if exists ${this.schema} cascade`);
  }

  /** The `c` of a `select count(*)::int as c …`. */
  async count(sql: string, params: readonly unknown[] = []): Promise<number> {
    const { rows } = await this.#client!.query(sql, [...params]);
    return Number(rows[0].c);
  }

  async end(): Promise<void> {
    await this.#client?.end();
  }
}

/** Wall-clock milliseconds with sub-millisecond resolution (same clock across processes). */
export const now = (): number => performance.timeOrigin + performance.now();
export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export async function waitFor(
  pred: () => boolean | Promise<boolean>,
  signal: AbortSignal,
  { intervalMs = 5, timeoutMs = cfg.phaseTimeoutMs, what = "condition" } = {},
): Promise<number> {
  const t0 = now();
  for (;;) {
    if (signal.aborted) throw new Error(`phase aborted while waiting for ${what}`);
    if (await pred()) return now();
    if (now() - t0 > timeoutMs) throw new Error(`timeout after ${Math.round(timeoutMs / 1000)} s waiting for ${what}`);
    await sleep(intervalMs);
  }
}

/** Runs fn(i) for i in [0, total) with at most `conc` calls in flight. */
export async function limited(total: number, conc: number, signal: AbortSignal, fn: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  const lanes = Array.from({ length: Math.min(conc, total) }, async () => {
    for (;;) {
      const i = next++;
      if (i >= total || signal.aborted) return;
      await fn(i);
    }
  });
  await Promise.all(lanes);
}

export function pct(sorted: readonly number[], p: number): number | null {
  if (!sorted.length) return null;
  const idx = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[idx]!;
}

const round2 = (x: number | null): number | null => (x == null ? null : Math.round(x * 100) / 100);

export function latencyStats(samples: readonly number[]) {
  const s = [...samples].sort((a, b) => a - b);
  return {
    n: s.length,
    p50_ms: round2(pct(s, 50)),
    p95_ms: round2(pct(s, 95)),
    p99_ms: round2(pct(s, 99)),
    max_ms: round2(s[s.length - 1] ?? null),
    mean_ms: round2(s.reduce((a, b) => a + b, 0) / (s.length || 1)),
  };
}

export const rate = (n: number, ms: number): number => Math.round((n / (ms / 1000)) * 10) / 10;

/** Roles a variant plays in the summary's comparisons. */
export interface Roles {
  /** `best`/`default` for the processing comparison, or null (shown, not compared). */
  readonly process: "best" | "default" | "both" | null;
  readonly latency: "best" | "default" | "both" | null;
}

/** Writes a measurement of the phase whose `signal` is given; nothing once that phase was aborted. */
export function emit(signal: AbortSignal, phase: string, variant: string, data: Record<string, unknown>): void {
  if (signal.aborted) return;
  const rec = { system: cfg.system, phase, variant, run: cfg.run, ...data };
  process.stdout.write(`@@bench ${JSON.stringify(rec)}\n`);
}

/** CPU of this process over a window, as % of one core. */
export class CpuWindow {
  #cpu = process.cpuUsage();
  #t = now();
  start(): void {
    this.#cpu = process.cpuUsage();
    this.#t = now();
  }
  /** { t_start, t_end, client_cpu_ms, client_cpu_pct } for the window from start() to now. */
  stop(): { t_start: number; t_end: number; client_cpu_ms: number; client_cpu_pct: number } {
    const d = process.cpuUsage(this.#cpu);
    const t = now();
    const ms = (d.user + d.system) / 1000;
    return { t_start: this.#t, t_end: t, client_cpu_ms: Math.round(ms), client_cpu_pct: Math.round((ms / (t - this.#t)) * 1000) / 10 };
  }
}

/** Latency phase: the handler calls onStart(payload) first thing; samples = start - t0. */
export function makeLatencyRecorder() {
  const samples: number[] = [];
  return {
    samples,
    get seen() {
      return samples.length;
    },
    onStart(payload: unknown) {
      const t0 = (payload as { t0?: unknown } | null)?.t0;
      if (typeof t0 === "number") samples.push(now() - t0);
    },
  };
}

/**
 * Enqueues `latencyJobs` single jobs on a fixed `latencyGapMs` grid (t0 taken just before each
 * enqueue call, so latency = enqueue commit + wake-up + fetch), then waits for every handler.
 */
export async function runLatency(
  lat: ReturnType<typeof makeLatencyRecorder>,
  signal: AbortSignal,
  enqueue: (i: number, t0: number) => Promise<unknown>,
): Promise<ReturnType<typeof latencyStats>> {
  const n = cfg.latencyJobs;
  const start = now() + 50;
  const pending: Promise<unknown>[] = [];
  for (let i = 0; i < n && !signal.aborted; i++) {
    const wait = start + i * cfg.latencyGapMs - now();
    if (wait > 0) await sleep(wait);
    pending.push(enqueue(i, now()));
  }
  await Promise.all(pending);
  await waitFor(() => lat.seen >= n, signal, { intervalMs: 10, what: "latency jobs" });
  return latencyStats(lat.samples);
}

/** Runs a phase within the phase budget; a failure or timeout is recorded and the runner goes on. */
export class PhaseRunner {
  #cleanups: (() => Promise<unknown>)[] = [];

  /** Registers a cleanup that runs (bounded) if the current phase fails. */
  defer(fn: () => Promise<unknown>): void {
    this.#cleanups.push(fn);
  }

  /** Runs `fn` as phase `phase` of `variant`, handing it the phase's abort signal for its loops, waits and records. */
  async run(phase: string, variant: string, fn: (signal: AbortSignal) => Promise<void>, extra: Record<string, unknown> = {}): Promise<boolean> {
    if (!cfg.phases.includes(phase)) return true;
    this.#cleanups = [];
    let timer: NodeJS.Timeout | undefined;
    const started = now();
    const scope = new AbortController();
    try {
      await Promise.race([
        fn(scope.signal),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error(`phase timed out after ${Math.round(cfg.phaseTimeoutMs / 1000)} s`)), cfg.phaseTimeoutMs);
        }),
      ]);
      return true;
    } catch (error) {
      const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
      console.error(`[${cfg.system}] ${phase} ${variant} failed: ${message}`);
      emit(scope.signal, phase, variant, { ...extra, error: message, ms: Math.round(now() - started) });
      scope.abort();
      for (const cleanup of this.#cleanups.reverse()) {
        await Promise.race([cleanup().catch((e) => console.error(`[${cfg.system}] cleanup: ${String(e)}`)), sleep(15_000)]);
      }
      return false;
    } finally {
      clearTimeout(timer);
      this.#cleanups = [];
    }
  }
}

/** Whether a variant was selected on the command line (none selected = all). */
export const wanted = (variant: string): boolean => cfg.variants.length === 0 || cfg.variants.includes(variant);
