import type { Instant } from "./job.js";

/**
 * Terminal jobs purged together: `succeededOrCancelled` (default retention 24 h) and
 * `deadLetteredOrQuarantined` (default 14 days).
 */
export type RetentionClass = "succeededOrCancelled" | "deadLetteredOrQuarantined";

export interface PurgeTerminalRequest {
  readonly retentionClass: RetentionClass;
  /** Purge jobs that became terminal strictly before this instant. */
  readonly before: Instant;
  /** Clamped to `bounds.purgeBatch`. Repeat while a call purges a full batch. */
  readonly max: number;
}

/**
 * Jobs deleted, oldest terminal first, with their tags, transitions, edges and output. A workflow
 * member is purged only once every member of its workflow is terminal, with the workflow's drain
 * instant (its last member's terminal time) as the clock; the workflow goes with its last member.
 */
export interface PurgeTerminalResult {
  readonly purged: number;
}
