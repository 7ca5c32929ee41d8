// The phases every system goes through, written once over a small adapter per system, so each
// system is measured by the same code: enqueue one by one (10 in flight) and in batches, process a
// pre-loaded backlog of no-op jobs at each concurrency under test, idle enqueue-to-start latency.
import {
  CpuWindow, PhaseRunner, type Roles, cfg, emit, limited, makeLatencyRecorder, now, rate, runLatency, sleep, waitFor, wanted,
} from "./child.js";

export interface Payload {
  readonly i: number;
  readonly t0?: number;
}

/** One connection to the system under test, for one phase. */
export interface Session {
  enqueue(payload: Payload): Promise<unknown>;
  enqueueBatch(payloads: Payload[]): Promise<unknown>;
  /** Starts workers; `onJobs` is called first thing by every handler call with its payloads. */
  startWorker(concurrency: number, onJobs: (payloads: readonly unknown[]) => void): Promise<void>;
  /** Jobs completed so far, as the store records it (a query, or an event count where the store signals it). */
  completed(): Promise<number>;
  /** Stops workers (if any) and closes everything the session opened. */
  close(): Promise<void>;
  /** What the session traced of its workers' store calls, added to the processing record. */
  trace?(): Record<string, unknown>;
}

export interface VariantSpec {
  readonly roles: Roles;
  /** What the variant sets, as recorded in the results. */
  readonly settings: Record<string, unknown>;
  /** Poll-bound by design: process for `processCapS` seconds and report the rate. */
  readonly capped?: boolean;
  /** Runs only when `--variants` names it (a diagnostic, not a configuration under comparison). */
  readonly optIn?: boolean;
}

export interface Adapter {
  /** Its configurations; enqueue phases use the `default` one's session (its API, no worker). */
  readonly variants: Record<string, VariantSpec>;
  /** API names for the record (e.g. `addJob`, `addJobs`). */
  readonly api: { readonly single: string; readonly batch: string };
  /** A session on a fresh, empty store (`fresh`) or on the store the last fresh session made. */
  open(variant: string, fresh: boolean): Promise<Session>;
  /** Ends what the adapter holds across phases (admin connections, files). */
  dispose(): Promise<void>;
  /**
   * Facts about the system's path to its store, measured before each processing phase's window
   * and added to its record (e.g. the network it crosses and a round trip's time on it).
   */
  readonly facts?: () => Promise<Record<string, unknown>>;
}

const payloads = (from: number, to: number): Payload[] => {
  const out: Payload[] = [];
  for (let i = from; i < to; i++) out.push({ i });
  return out;
};

async function preload(session: Session): Promise<void> {
  for (let start = 0; start < cfg.jobs; start += cfg.batch) await session.enqueueBatch(payloads(start, Math.min(cfg.jobs, start + cfg.batch)));
}

/** The variant whose session the enqueue phases use: every adapter has one. */
const ENQUEUE_VARIANT = "default";

export async function runSystem(adapter: Adapter): Promise<void> {
  if (!(ENQUEUE_VARIANT in adapter.variants)) throw new Error(`${cfg.system}: no "${ENQUEUE_VARIANT}" variant for the enqueue phases`);
  const phases = new PhaseRunner();
  const N = cfg.jobs;
  try {
    await phases.run("enqueue_single", adapter.api.single, async (signal) => {
      const session = await adapter.open(ENQUEUE_VARIANT, true);
      phases.defer(() => session.close());
      const cpu = new CpuWindow();
      await limited(N, cfg.enqueueInFlight, signal, (i) => session.enqueue({ i }));
      const w = cpu.stop();
      await session.close();
      emit(signal, "enqueue_single", adapter.api.single, { jobs: N, in_flight: cfg.enqueueInFlight, ms: Math.round(w.t_end - w.t_start), jobs_per_s: rate(N, w.t_end - w.t_start), ...w });
    });

    await phases.run("enqueue_batch", adapter.api.batch, async (signal) => {
      const session = await adapter.open(ENQUEUE_VARIANT, true);
      phases.defer(() => session.close());
      const cpu = new CpuWindow();
      await preload(session);
      const w = cpu.stop();
      await session.close();
      emit(signal, "enqueue_batch", adapter.api.batch, { jobs: N, batch: cfg.batch, ms: Math.round(w.t_end - w.t_start), jobs_per_s: rate(N, w.t_end - w.t_start), ...w });
    });

    for (const concurrency of cfg.concurrency) {
      for (const [variant, spec] of Object.entries(adapter.variants)) {
        if ((spec.roles.process === null && !spec.optIn) || !wanted(variant) || (spec.optIn && !cfg.variants.includes(variant))) continue;
        const extra = { concurrency, roles: spec.roles };
        await phases.run("process", variant, async (signal) => {
          const loader = await adapter.open(variant, true);
          phases.defer(() => loader.close());
          await preload(loader);
          await loader.close();
          const facts = adapter.facts ? await adapter.facts() : {};
          const session = await adapter.open(variant, false);
          phases.defer(() => session.close());
          let handled = 0;
          let firstStart: number | null = null;
          const cpu = new CpuWindow();
          const t0 = now();
          await session.startWorker(concurrency, (jobs) => {
            if (firstStart === null) {
              firstStart = now();
              cpu.start();
            }
            handled += jobs.length;
          });
          let tEnd: number;
          let done: number;
          let lastHandler: number | null = null;
          if (spec.capped) {
            await sleep(cfg.processCapS * 1000);
            tEnd = now();
            done = await session.completed();
          } else {
            await waitFor(() => handled >= N, signal, { intervalMs: 5, what: `${N} handler starts (${handled} so far)` });
            lastHandler = now();
            tEnd = await waitFor(async () => (await session.completed()) >= N, signal, { intervalMs: 5, what: "every job completed in the store" });
            done = N;
          }
          const w = cpu.stop();
          const trace = session.trace?.() ?? {};
          await session.close();
          if (firstStart === null) throw new Error("no handler ever started");
          emit(signal, "process", variant, {
            ...extra,
            jobs: done,
            handled,
            capped_at_s: spec.capped ? cfg.processCapS : null,
            ms: Math.round(tEnd - firstStart),
            jobs_per_s: rate(done, tEnd - firstStart),
            jobs_per_s_incl_boot: rate(done, tEnd - t0),
            completion_lag_ms: lastHandler === null ? null : Math.round(tEnd - lastHandler),
            settings: spec.settings,
            ...facts,
            ...trace,
            ...w,
            t_end: tEnd,
          });
        }, extra);
      }
    }

    for (const [variant, spec] of Object.entries(adapter.variants)) {
      if (spec.roles.latency === null || !wanted(variant)) continue;
      const extra = { concurrency: cfg.latencyConcurrency, roles: spec.roles };
      await phases.run("latency", variant, async (signal) => {
        const session = await adapter.open(variant, true);
        phases.defer(() => session.close());
        const lat = makeLatencyRecorder();
        await session.startWorker(cfg.latencyConcurrency, (jobs) => {
          for (const job of jobs) lat.onStart(job);
        });
        await sleep(1500); // workers idle
        const cpu = new CpuWindow();
        const stats = await runLatency(lat, signal, (i, t0) => session.enqueue({ i, t0 }));
        const w = cpu.stop();
        await session.close();
        emit(signal, "latency", variant, { ...extra, ...stats, gap_ms: cfg.latencyGapMs, settings: spec.settings, ...w });
      }, extra);
    }
  } finally {
    await adapter.dispose();
  }
}
