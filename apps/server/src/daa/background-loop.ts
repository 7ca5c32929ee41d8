import { isBelayError } from "@belay/contract";
import type { Logger } from "@belay/core";

/** One pass of a loop: `true` when it did a full batch and should run again at once. */
export type LoopPass = () => Promise<boolean>;

/**
 * A background loop of the promise listener: runs its pass every `intervalMs`, at once when
 * woken, and again at once after a full batch (at most `burst` passes in a row, so one loop never
 * monopolises the event loop or the store). Passes never overlap; a wake during a pass runs
 * another right after it (on the next turn of the event loop). A failing pass is logged and the
 * loop carries on (a busy store's `TransientStoreError` quietly: the next pass retries).
 */
export class BackgroundLoop {
  readonly name: string;
  readonly #intervalMs: number;
  readonly #burst: number;
  readonly #pass: LoopPass;
  readonly #logger: Logger;
  #timer: ReturnType<typeof setTimeout> | null = null;
  #running: Promise<void> | null = null;
  #again = false;
  #started = false;
  #paused = false;
  #stopped = false;

  constructor(name: string, options: { readonly intervalMs: number; readonly burst?: number; readonly pass: LoopPass; readonly logger: Logger }) {
    this.name = name;
    this.#intervalMs = options.intervalMs;
    this.#burst = options.burst ?? 10;
    this.#pass = options.pass;
    this.#logger = options.logger;
  }

  /** Starts the loop (its first pass runs at once). */
  start(): void {
    if (this.#started || this.#stopped) return;
    this.#started = true;
    this.wake();
  }

  /** Runs a pass as soon as possible (no waiting for the next interval). */
  wake(): void {
    if (!this.#started || this.#stopped || this.#paused) return;
    if (this.#running !== null) {
      this.#again = true;
      return;
    }
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    this.#running = this.#runBurst().finally(() => {
      this.#running = null;
      if (this.#stopped || this.#paused) return;
      if (this.#again) {
        this.#again = false;
        this.#schedule(0);
      } else this.#schedule(this.#intervalMs);
    });
  }

  /** Whether passes are held (debug mode's `debug.start`). */
  get paused(): boolean {
    return this.#paused;
  }

  /** Holds the loop until `resume()`; a pass already running finishes. */
  async pause(): Promise<void> {
    this.#paused = true;
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    await this.#running;
  }

  resume(): void {
    if (!this.#paused) return;
    this.#paused = false;
    this.wake();
  }

  /** Stops the loop for good, after the running pass. */
  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    await this.#running;
  }

  /** The failure last logged and when: the same failure (an unmigrated store, say) is logged once a minute, not every pass. */
  #lastReport: { readonly message: string; readonly at: number } | null = null;

  #report(error: unknown): void {
    const message = error instanceof Error ? error.message : String(error);
    const now = Date.now();
    if (this.#lastReport !== null && this.#lastReport.message === message && now - this.#lastReport.at < 60_000) return;
    this.#lastReport = { message, at: now };
    this.#logger.error(`${this.name}: pass failed (retrying every pass; the same failure is logged once a minute)`, {
      error: error instanceof Error ? (error.stack ?? error.message) : String(error),
    });
  }

  #schedule(delayMs: number): void {
    this.#timer = setTimeout(() => {
      this.#timer = null;
      this.wake();
    }, delayMs);
    this.#timer.unref?.();
  }

  async #runBurst(): Promise<void> {
    for (let i = 0; i < this.#burst && !this.#stopped && !this.#paused; i++) {
      let more: boolean;
      try {
        more = await this.#pass();
      } catch (error) {
        if (isBelayError(error, "BELAY_TRANSIENT_STORE")) this.#logger.debug(`${this.name}: the store is busy; retrying next pass`);
        else if (isBelayError(error, "BELAY_STORE_CLOSED")) return;
        else this.#report(error);
        return;
      }
      this.#lastReport = null;
      if (!more) return;
    }
    // Still full after a burst: yield to the event loop, then go on.
    if (!this.#stopped && !this.#paused) this.#again = true;
  }
}
