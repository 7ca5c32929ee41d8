import { BelayError } from "@belay/contract";
import type { AnyJobDefinition } from "@belay/core";
import type { ServerErrorCode } from "../http/errors.js";

/** A job name the server does not know, while it knows the job definitions it serves. */
export class UnknownJobNameError extends BelayError {
  readonly jobName: string;

  constructor(jobName: string, known: readonly string[]) {
    const list = known.length > 8 ? `${known.slice(0, 8).join(", ")}, …` : known.join(", ");
    super("BELAY_UNKNOWN_JOB_NAME" satisfies ServerErrorCode, `unknown job name ${jobName} (this server knows ${list})`);
    this.jobName = jobName;
  }
}

/**
 * The job definitions the server knows (from an embedded worker or a `--jobs` module). With
 * them it validates payloads against each job's schema and takes the default queue and tags from
 * the definition; without them it enqueues raw JSON in the queue the caller names (or `default`).
 */
export class JobCatalog {
  readonly #jobs: ReadonlyMap<string, AnyJobDefinition>;

  constructor(jobs: readonly AnyJobDefinition[] = []) {
    this.#jobs = new Map(jobs.map((job) => [job.name, job]));
  }

  /** Whether definitions are known at all (else every job name is accepted raw). */
  get known(): boolean {
    return this.#jobs.size > 0;
  }

  get names(): readonly string[] {
    return [...this.#jobs.keys()].sort();
  }

  /** The queues the known job types default to. */
  get queues(): readonly string[] {
    return [...new Set([...this.#jobs.values()].map((j) => j.queue))].sort();
  }

  /**
   * The definition of `jobName`: `null` when no definitions are known; throws
   * `UnknownJobNameError` when they are and this one is not among them.
   */
  resolve(jobName: string): AnyJobDefinition | null {
    if (!this.known) return null;
    const job = this.#jobs.get(jobName);
    if (job === undefined) throw new UnknownJobNameError(jobName, this.names);
    return job;
  }
}
