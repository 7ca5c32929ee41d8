import type { Instant, Tag } from "@belay/contract";
import type { AnyJobDefinition, OutputOf } from "./define-job.js";
import type { Logger } from "./logger.js";
import type { TagInput } from "./tags.js";

/** What a handler knows about the execution it is part of. */
export interface JobContext {
  readonly jobId: string;
  readonly jobName: string;
  readonly queue: string;
  /**
   * The attempt number: 1 at the first claim, +1 at every claim after — the number history,
   * listings and the dashboard show for this execution. A graceful release (a worker stopping
   * before the handler finished) still counts here, but not towards the retry ceiling.
   */
  readonly attempt: number;
  /**
   * Aborted when the handler must stop: the lease was lost, an operator cancelled the job, or the
   * worker is stopping. `signal.reason` says which (a {@link JobAbortedError}). Pass it to fetch,
   * database drivers, timers.
   */
  readonly signal: AbortSignal;
  readonly enqueuedAt: Instant;
  readonly dueAt: Instant;
  readonly tags: readonly Tag[];
  readonly traceContext: string | null;
  readonly scheduleId: string | null;
  readonly workflowId: string | null;
  readonly logger: Logger;
  /** Adds tags to the job; they are written with its outcome (under the same fence). */
  addTags(...tags: TagInput[]): void;
  /**
   * The output of a parent: by job definition (the first parent of that type; typed) or by job
   * id. `null` when the parent returned nothing or is unknown.
   */
  parentOutput<TJob extends AnyJobDefinition>(parent: TJob): Promise<OutputOf<TJob> | null>;
  parentOutput(parentId: string): Promise<unknown>;
}

/** The reason a handler's signal was aborted. */
export class JobAbortedError extends Error {
  readonly reason: "leaseLost" | "cancelRequested" | "stopping" | "halted";

  constructor(reason: JobAbortedError["reason"]) {
    super(`job aborted: ${reason}`);
    this.name = "JobAbortedError";
    this.reason = reason;
  }
}

/** Throw from a handler to dead-letter the job at once: retrying cannot help. */
export class PermanentJobError extends Error {
  readonly permanent = true;

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "PermanentJobError";
  }
}

/**
 * The abort state of one running handler. Its `AbortSignal` is made the first time the handler
 * reads `ctx.signal` (most never do; a signal per job is a measurable share of a worker's CPU):
 * an abort that came earlier is then already on it. The first abort's reason wins, as with an
 * `AbortController`.
 */
export class HandlerAbort {
  #controller: AbortController | null = null;
  #reason: JobAbortedError | null = null;

  /** Why the handler was aborted, or `null`. */
  get reason(): JobAbortedError | null {
    return this.#reason;
  }

  get signal(): AbortSignal {
    if (this.#controller === null) {
      this.#controller = new AbortController();
      if (this.#reason !== null) this.#controller.abort(this.#reason);
    }
    return this.#controller.signal;
  }

  abort(reason: JobAbortedError): void {
    if (this.#reason !== null) return;
    this.#reason = reason;
    this.#controller?.abort(reason);
  }
}
