import type { Instant, JobRecord, JobSummary, ListJobsRequest, TransitionRecord } from "@belay/contract";
import { type AnyJobDefinition, Client, type WorkerOptions, Worker, parseCron, silentLogger } from "@belay/core";
import { MemoryStore, type MemoryStoreOptions } from "@belay/memory";
import { VirtualClock } from "./virtual-clock.js";

/** Where virtual time starts unless a test says otherwise: 2026-01-01T00:00:00Z. */
export const DEFAULT_START: Instant = Date.UTC(2026, 0, 1);

export interface TestHarnessOptions {
  /** The job types the worker runs. */
  readonly jobs: readonly AnyJobDefinition[];
  /** Virtual start time. Default 2026-01-01T00:00:00Z. */
  readonly start?: Instant | Date;
  readonly store?: Omit<MemoryStoreOptions, "wakeUpHints">;
  /** Worker settings (defaults here: 1 s polls and maintenance, no retention, silent logger). */
  readonly worker?: Omit<WorkerOptions, "store" | "jobs" | "clock">;
  /** Start the worker at once (default true). */
  readonly startWorker?: boolean;
}

/** How long `settle()` may wait for real work (a handler awaiting real I/O) before failing the test. */
const SETTLE_LIMIT_MS = 30_000;

/**
 * A worker on the in-memory store, on virtual time. `advance(ms)` runs every due instant in order
 * — retries, schedule ticks, lease expiries, dependency releases — and skips idle stretches, so
 * a month of a nightly schedule runs in milliseconds.
 *
 * @example
 * ```ts
 * const h = await createTestHarness({ jobs: [sendWelcome] });
 * const { id } = await h.client.enqueue(sendWelcome, { userId: "u1" });
 * await h.advance(0);
 * expect((await h.job(id)).state).toBe("succeeded");
 * await h.stop();
 * ```
 */
export class TestHarness {
  readonly clock: VirtualClock;
  readonly store: MemoryStore;
  readonly client: Client;
  readonly worker: Worker;
  readonly #jumps: boolean;

  constructor(options: TestHarnessOptions) {
    const start = options.start instanceof Date ? options.start.getTime() : (options.start ?? DEFAULT_START);
    this.clock = new VirtualClock(start);
    this.store = new MemoryStore({ ...options.store, wakeUpHints: true });
    this.client = new Client({ store: this.store, clock: this.clock, actor: "test" });
    const settings = options.worker ?? {};
    this.worker = new Worker({
      pollIntervalMs: 1_000,
      maintenanceIntervalMs: 1_000,
      logger: silentLogger,
      name: "harness",
      ...settings,
      retention: settings.retention ?? { succeededOrCancelledMs: null, deadLetteredOrQuarantinedMs: null },
      store: this.store,
      jobs: options.jobs,
      clock: this.clock,
    });
    const retention = settings.retention;
    // Idle stretches are skipped only when nothing time-driven is invisible to the harness.
    this.#jumps = retention?.succeededOrCancelledMs == null && retention?.deadLetteredOrQuarantinedMs == null;
  }

  /** The virtual now. */
  now(): Instant {
    return this.clock.now();
  }

  /**
   * Moves virtual time forward by `ms`, running everything that falls due on the way, in order,
   * and settling after each instant. `advance(0)` just runs what is due now.
   */
  async advance(ms: number): Promise<void> {
    if (!Number.isFinite(ms) || ms < 0) throw new RangeError("advance(ms) needs a duration ≥ 0");
    await this.advanceTo(this.clock.now() + ms);
  }

  /** Moves virtual time to `at` (see `advance`). */
  async advanceTo(at: Instant | Date): Promise<void> {
    const target = at instanceof Date ? at.getTime() : at;
    await this.settle();
    for (;;) {
      const next = this.clock.nextTimerAt();
      if (next === null || next > target) break;
      let to = next;
      if (this.#jumps && this.#quiet()) {
        const interesting = await this.#nextInterestingAt();
        to = Math.min(Math.max(next, interesting), target);
      }
      this.clock.set(Math.max(to, this.clock.now()));
      await this.settle();
    }
    if (target > this.clock.now()) this.clock.set(target);
    await this.settle();
  }

  /**
   * Waits until the worker has no store call in flight and no timer is due, firing due timers
   * on the way. Handlers still running (e.g. waiting for their signal) do not hold it up.
   */
  async settle(): Promise<void> {
    const started = Date.now();
    let calm = 0;
    while (calm < 3) {
      await new Promise<void>((resolve) => setImmediate(resolve));
      if (this.clock.fireDue() > 0 || this.worker.health().inflight > 0) calm = 0;
      else calm++;
      if (Date.now() - started > SETTLE_LIMIT_MS) {
        throw new Error(`the harness did not settle within ${SETTLE_LIMIT_MS} ms of real time`);
      }
    }
  }

  /** A job (fails when it does not exist). */
  async job(id: string): Promise<JobRecord> {
    const job = await this.store.getJob(id);
    if (job === null) throw new Error(`no job ${id}`);
    return job;
  }

  /** A job's transitions, oldest first. */
  history(id: string): Promise<readonly TransitionRecord[]> {
    return this.store.getJobHistory(id);
  }

  /** Every job matching `filter`, oldest first. */
  async jobs(filter: Omit<ListJobsRequest, "after" | "limit"> = {}): Promise<JobSummary[]> {
    const all: JobSummary[] = [];
    let after: string | undefined;
    do {
      const page = await this.store.listJobs({ ...filter, ...(after === undefined ? {} : { after }) });
      all.push(...page.jobs);
      after = page.nextCursor ?? undefined;
    } while (after !== undefined);
    return all;
  }

  /** Stops the worker gracefully (on virtual time). */
  async stop(options: { readonly timeoutMs?: number } = {}): Promise<void> {
    const stopped = this.worker.stop(options);
    let done = false;
    void stopped.then(() => (done = true));
    await this.settle();
    const deadline = this.clock.now() + (options.timeoutMs ?? 30_000);
    while (!done && this.clock.now() <= deadline) {
      const next = this.clock.nextTimerAt();
      if (next === null) break;
      this.clock.set(Math.max(next, this.clock.now()));
      await this.settle();
    }
    await stopped;
  }

  /** No job is running, reserved or waiting to be reported. */
  #quiet(): boolean {
    return this.worker
      .health()
      .groups.every((g) => g.pumps.every((p) => p.executing === 0 && p.reserved === 0 && p.unreported === 0));
  }

  /** The earliest instant at which something could change on its own. */
  async #nextInterestingAt(): Promise<Instant> {
    let next = (await this.store.nextActivityAt()) ?? Number.POSITIVE_INFINITY;
    for (const schedule of await this.store.listSchedules()) {
      try {
        const [tick] = parseCron(schedule.cron, schedule.timeZone).nextTicks(schedule.cursor, 1);
        if (tick !== undefined) next = Math.min(next, tick);
      } catch {
        // An unparseable schedule is skipped by the worker as well.
      }
    }
    for (const observer of await this.store.listObservers()) {
      if (observer.pending > 0) return Number.NEGATIVE_INFINITY; // deliveries (and their retries) step normally
    }
    return next;
  }
}

/** Creates a harness and (unless told otherwise) starts its worker. */
export async function createTestHarness(options: TestHarnessOptions): Promise<TestHarness> {
  const harness = new TestHarness(options);
  await harness.store.migrate();
  if (options.startWorker ?? true) {
    await harness.worker.start();
    await harness.settle();
  }
  return harness;
}
