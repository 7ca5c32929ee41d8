import type { WorkerEvent } from "@belay/core";

/** Executions finished in one time bucket. */
export interface ThroughputBucket {
  /** Start of the bucket, epoch milliseconds. */
  readonly at: number;
  readonly succeeded: number;
  /** Failed attempts (retried or dead-lettered) and unroutable jobs. */
  readonly failed: number;
}

/**
 * An in-process ring of per-second counts of finished executions, for the overview's throughput
 * chart. Fed by worker events (an embedded worker) or by sampled count deltas; it keeps the last
 * `seconds` seconds and forgets everything on restart.
 */
export class ThroughputRing {
  readonly #seconds: number;
  readonly #stamp: Float64Array;
  readonly #succeeded: Uint32Array;
  readonly #failed: Uint32Array;

  constructor(seconds = 300) {
    this.#seconds = seconds;
    this.#stamp = new Float64Array(seconds).fill(-1);
    this.#succeeded = new Uint32Array(seconds);
    this.#failed = new Uint32Array(seconds);
  }

  /** Adds `n` finished executions of one kind at `at` (epoch ms). */
  add(at: number, kind: "succeeded" | "failed", n = 1): void {
    if (n <= 0) return;
    const second = Math.floor(at / 1000);
    const slot = second % this.#seconds;
    if (this.#stamp[slot] !== second) {
      this.#stamp[slot] = second;
      this.#succeeded[slot] = 0;
      this.#failed[slot] = 0;
    }
    (kind === "succeeded" ? this.#succeeded : this.#failed)[slot]! += n;
  }

  /** Counts a finished execution from a worker's event stream (other events are ignored). */
  recordWorkerEvent(event: WorkerEvent, now: number): void {
    if (event.type !== "jobFinished" || event.result === "cancelled") return;
    this.add(now, event.result === "succeeded" ? "succeeded" : "failed");
  }

  /** `count` buckets of `bucketSeconds` each, oldest first, the last one holding `now`. */
  series(now: number, bucketSeconds = 5, count = 60): ThroughputBucket[] {
    const nowSecond = Math.floor(now / 1000);
    const lastStart = nowSecond - (nowSecond % bucketSeconds);
    const out: ThroughputBucket[] = [];
    for (let b = count - 1; b >= 0; b--) {
      const start = lastStart - b * bucketSeconds;
      let succeeded = 0;
      let failed = 0;
      for (let s = start; s < start + bucketSeconds; s++) {
        if (nowSecond - s >= this.#seconds || s > nowSecond) continue;
        const slot = s % this.#seconds;
        if (this.#stamp[slot] !== s) continue;
        succeeded += this.#succeeded[slot]!;
        failed += this.#failed[slot]!;
      }
      out.push({ at: start * 1000, succeeded, failed });
    }
    return out;
  }
}
