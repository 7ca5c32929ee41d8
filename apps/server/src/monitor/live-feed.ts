import { type JobCount, type JobStore, type QueueSettings, isBelayError } from "@belay/contract";
import type { Clock, Logger } from "@belay/core";
import type { ThroughputRing } from "./throughput.js";

/** What the feed last read from the store. */
export interface LiveSnapshot {
  /** Rises by one each time the counts or queue settings change. */
  readonly version: number;
  readonly at: number;
  readonly counts: readonly JobCount[];
  readonly settings: readonly QueueSettings[];
}

/**
 * Polls the store's counts and queue settings on one timer shared by every dashboard tab, and
 * tells subscribers (the Server-Sent Events streams) only when something changed. While nothing
 * else feeds the throughput ring, it also turns count deltas of terminal states into throughput.
 */
export class LiveFeed {
  readonly #store: JobStore;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #intervalMs: number;
  readonly #throughput: ThroughputRing;
  readonly #listeners = new Set<(snapshot: LiveSnapshot) => void>();
  #timer: ReturnType<typeof setTimeout> | null = null;
  #latest: LiveSnapshot | null = null;
  #fingerprint = "";
  #stopped = false;
  #polling: Promise<void> | null = null;
  /** Set once another source (worker events) feeds the ring, so deltas are not counted twice. */
  countDeltas = true;

  constructor(options: { store: JobStore; clock: Clock; logger: Logger; intervalMs: number; throughput: ThroughputRing }) {
    this.#store = options.store;
    this.#clock = options.clock;
    this.#logger = options.logger;
    this.#intervalMs = options.intervalMs;
    this.#throughput = options.throughput;
  }

  get latest(): LiveSnapshot | null {
    return this.#latest;
  }

  start(): void {
    if (this.#timer !== null || this.#stopped) return;
    this.#schedule(0);
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    this.#listeners.clear();
    await this.#polling;
  }

  /** Calls `listener` after every change; returns the unsubscribe function. */
  subscribe(listener: (snapshot: LiveSnapshot) => void): () => void {
    this.#listeners.add(listener);
    return () => void this.#listeners.delete(listener);
  }

  /** Reads the store now (also called by the timer). */
  poll(): Promise<void> {
    this.#polling ??= this.#read().finally(() => {
      this.#polling = null;
    });
    return this.#polling;
  }

  #schedule(delay: number): void {
    if (this.#stopped) return;
    this.#timer = setTimeout(() => {
      void this.poll().finally(() => this.#schedule(this.#intervalMs));
    }, delay);
    this.#timer.unref?.();
  }

  async #read(): Promise<void> {
    let counts: readonly JobCount[];
    let settings: readonly QueueSettings[];
    try {
      [counts, settings] = await Promise.all([this.#store.countJobs(), this.#store.listQueueSettings()]);
    } catch (error) {
      if (!isBelayError(error, "BELAY_TRANSIENT_STORE") && !isBelayError(error, "BELAY_STORE_CLOSED")) {
        this.#logger.warn("live feed: cannot read counts", { error: String(error) });
      }
      return;
    }
    const now = this.#clock.now();
    const previous = this.#latest;
    const fingerprint = JSON.stringify([counts, settings]);
    if (previous !== null && this.countDeltas) this.#countDeltas(previous.counts, counts, now);
    if (previous !== null && fingerprint === this.#fingerprint) {
      this.#latest = { ...previous, at: now };
      return;
    }
    this.#fingerprint = fingerprint;
    const snapshot: LiveSnapshot = { version: (previous?.version ?? 0) + 1, at: now, counts, settings };
    this.#latest = snapshot;
    for (const listener of this.#listeners) listener(snapshot);
  }

  #countDeltas(before: readonly JobCount[], after: readonly JobCount[], now: number): void {
    const sum = (rows: readonly JobCount[], states: readonly string[]) =>
      rows.reduce((n, r) => n + (states.includes(r.state) ? r.count : 0), 0);
    // Purges make a delta negative; that bucket then simply shows nothing.
    this.#throughput.add(now, "succeeded", sum(after, ["succeeded"]) - sum(before, ["succeeded"]));
    this.#throughput.add(now, "failed", sum(after, ["deadLettered", "quarantined"]) - sum(before, ["deadLettered", "quarantined"]));
  }
}
