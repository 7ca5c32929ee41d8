import { type ClaimedJob, type HeldLease, type Instant, type OutcomeReport, type OutcomeResult, countedAttempts } from "@belay/contract";
import type { DriverCommand, DriverConfig, ExecutionResult } from "../driver-types.js";
import { type Backoff, nextBackoff } from "../fault-policy.js";
import { decideFailure } from "../retry.js";
import type { Running } from "./slots.js";

const CANCELLED = Object.freeze({ type: "cancelled" as const });

/**
 * Outcomes on their way to the store: buffered, batched into one report at a time (outcomes that
 * finish meanwhile ride the next), put back on a failed report, and retried under the job type's
 * policy when the store refuses one.
 */
export class Outcomes {
  readonly #config: DriverConfig;
  /** Outcomes waiting for a report, oldest first. */
  #buffer: OutcomeReport[] = [];
  /** The claimed job behind each unreported outcome (to decide a retry if the store rejects it). */
  readonly #unreported = new Map<string, ClaimedJob>();
  #inFlight: { batchId: number; reports: readonly OutcomeReport[] } | null = null;
  #backoff: Backoff | null = null;
  #nextBatchId = 1;

  constructor(config: DriverConfig) {
    this.#config = config;
  }

  /** Outcomes waiting for, or in, a report. */
  get unreported(): number {
    return this.#buffer.length + (this.#inFlight?.reports.length ?? 0);
  }

  /** Nothing buffered and no report in flight. */
  settled(): boolean {
    return this.#buffer.length === 0 && this.#inFlight === null;
  }

  /** Buffers what a handler's execution ended in. */
  add(running: Running, result: ExecutionResult, now: Instant): void {
    this.#buffer.push(this.#toReport(running, result, now));
    this.#unreported.set(running.job.id, running.job);
  }

  /** Buffers a waiting job that is reported cancelled without ever starting. */
  addCancelled(job: ClaimedJob): void {
    this.#buffer.push({ jobId: job.id, workerId: this.#config.workerId, attempt: job.attempt, outcome: { type: "cancelled" }, addTags: [] });
    this.#unreported.set(job.id, job);
  }

  /** Drops a buffered outcome of a lost lease: it would only be stale. */
  dropLost(jobId: string, attempt: number | undefined): void {
    this.#buffer = this.#buffer.filter((r) => r.jobId !== jobId || r.attempt !== attempt);
    if (this.#unreported.get(jobId)?.attempt === attempt) this.#unreported.delete(jobId);
  }

  #toReport(running: Running, result: ExecutionResult, now: Instant): OutcomeReport {
    // One literal per case (no spread of a shared base): this runs once per job.
    const { job } = running;
    const { workerId } = this.#config;
    switch (result.type) {
      case "succeeded":
        return { jobId: job.id, workerId, attempt: job.attempt, outcome: { type: "succeeded", output: result.output }, addTags: result.addTags };
      case "cancelled":
        return { jobId: job.id, workerId, attempt: job.attempt, outcome: CANCELLED, addTags: result.addTags };
      case "unroutable":
        return { jobId: job.id, workerId, attempt: job.attempt, outcome: { type: "unroutable", reason: result.reason } };
      case "failed": {
        if (running.cancelRequested) return { jobId: job.id, workerId, attempt: job.attempt, outcome: CANCELLED, addTags: result.addTags };
        const decision = result.retryable
          ? decideFailure(this.#config.retryFor(job), job.id, countedAttempts(job), now)
          : ({ type: "deadLetter" } as const);
        return {
          jobId: job.id,
          workerId,
          attempt: job.attempt,
          outcome: {
            type: "failed",
            retryAt: decision.type === "retry" ? decision.retryAt : null,
            failureDetail: result.failureDetail,
          },
          addTags: result.addTags,
        };
      }
    }
  }

  /**
   * The report was answered. Returns whether an outcome was applied: a terminal one may have
   * released a dependent job, worth a poll.
   */
  onReported(results: readonly OutcomeResult[], now: Instant): boolean {
    const batch = this.#inFlight?.reports ?? [];
    this.#inFlight = null;
    this.#backoff = null;
    let applied = false;
    for (const [i, result] of results.entries()) {
      const job = this.#unreported.get(result.jobId);
      if (result.status === "rejected" && job !== undefined && batch[i]?.outcome.type !== "failed") {
        // The store refused the report itself (e.g. output over its bound): fail the attempt
        // under the job type's policy (the refused row changed nothing, so the lease still holds).
        const decision = decideFailure(this.#config.retryFor(job), job.id, countedAttempts(job), now);
        this.#buffer.push({
          jobId: job.id,
          workerId: this.#config.workerId,
          attempt: job.attempt,
          outcome: {
            type: "failed",
            retryAt: decision.type === "retry" ? decision.retryAt : null,
            failureDetail: `the store rejected the outcome: ${result.rejection.message}`,
          },
        });
        continue;
      }
      this.#unreported.delete(result.jobId);
      if (result.status === "applied") applied = true;
    }
    return applied;
  }

  /** The report failed: its outcomes go back to the front of the buffer. */
  onReportFailed(): void {
    if (this.#inFlight !== null) this.#buffer = [...this.#inFlight.reports, ...this.#buffer];
    this.#inFlight = null;
  }

  /** After a transient fault: the next report waits out the backoff. */
  backOff(now: Instant): void {
    this.#backoff = nextBackoff(this.#backoff, now, this.#config.faultBackoffMs);
  }

  /** Sends the next batch, unless one is in flight or a backoff holds it. */
  maybeReport(now: Instant, out: DriverCommand[]): void {
    if (this.#inFlight !== null || this.#buffer.length === 0) return;
    if (this.#backoff !== null && now < this.#backoff.at) return;
    const reports = this.#buffer.slice(0, this.#config.outcomeBatch);
    this.#buffer = this.#buffer.slice(reports.length);
    const batchId = this.#nextBatchId++;
    this.#inFlight = { batchId, reports };
    out.push({ type: "report", batchId, reports });
  }

  /** The leases behind unreported outcomes: they are held until the report lands. */
  leases(): HeldLease[] {
    return [...this.#buffer, ...(this.#inFlight?.reports ?? [])].map((r) => ({ jobId: r.jobId, attempt: r.attempt }));
  }

  /** Whether any outcome is unreported (cheap: no list is built). */
  holdsAny(): boolean {
    return this.#buffer.length > 0 || this.#inFlight !== null;
  }

  /** When a backoff holding buffered outcomes ends, or `null`. */
  nextWakeAt(): Instant | null {
    return this.#buffer.length > 0 && this.#inFlight === null ? (this.#backoff?.at ?? null) : null;
  }
}
