import type { Instant, RetryDisposition, Tag } from "./job.js";
import type { Actor } from "./operator.js";

/** What a schedule does with ticks it missed while nobody was minting. */
export type CatchUpPolicy = "skip" | "coalesce";

/** A recurring schedule as defined by its owner. The cron text is validated by the Core, not the store. */
export interface ScheduleDefinition {
  /** 1..`bounds.idLength − 25` characters (minted job ids append `@` and the tick in ISO form). */
  readonly id: string;
  /** 5 fields, or 6 with seconds first. */
  readonly cron: string;
  /** IANA time zone the cron reads in. */
  readonly timeZone: string;
  readonly jobName: string;
  readonly queue: string;
  /** JSON text given verbatim to every minted job. */
  readonly payload: string;
  readonly tags?: readonly Tag[];
  readonly catchUp: CatchUpPolicy;
  /** Skip a tick while an earlier instance of this schedule is not terminal. */
  readonly noOverlap: boolean;
  /** The retry policy every minted or triggered job carries (the job type's); omitted or `null`: none. */
  readonly retry?: RetryDisposition | null;
}

/** A stored schedule, without its payload (read that with `getSchedule`). */
export interface ScheduleRecord {
  readonly id: string;
  readonly cron: string;
  readonly timeZone: string;
  readonly jobName: string;
  readonly queue: string;
  readonly tags: readonly Tag[];
  readonly catchUp: CatchUpPolicy;
  readonly noOverlap: boolean;
  /** The retry policy its jobs carry, or `null`. */
  readonly retry: RetryDisposition | null;
  /** The last instant the schedule has been planned up to; minting compares-and-sets it. */
  readonly cursor: Instant;
  /** The most recent ticks deliberately not minted (missed, coalesced or overlapping), oldest first. */
  readonly skippedTicks: readonly Instant[];
  /** Whether some job this schedule minted or triggered is not yet terminal. */
  readonly hasLiveInstance: boolean;
  readonly createdAt: Instant;
  readonly updatedAt: Instant;
}

/** A stored schedule with its payload. */
export interface ScheduleWithPayload extends ScheduleRecord {
  readonly payload: string;
}

export interface UpsertScheduleRequest {
  readonly schedule: ScheduleDefinition;
  readonly now: Instant;
  /**
   * Who defines the schedule, when an operator does (the dashboard, an API call on someone's
   * behalf): the definition is then audited (`upsertSchedule`, detail `created` or `updated`) in
   * its own transaction. Omitted: not audited, as for a schedule defined in code.
   */
  readonly actor?: Actor;
}

/** A new schedule starts its cursor at `now` (no backfill); a redefinition keeps its cursor. */
export type UpsertScheduleResult =
  | { readonly status: "created"; readonly cursor: Instant }
  | { readonly status: "updated"; readonly cursor: Instant };

export type RemoveScheduleResult = { readonly status: "removed" } | { readonly status: "notFound" };

/**
 * The Core's plan for one schedule: move the cursor from `expectedCursor` to `newCursor`, mint
 * one job per tick of `mint`, and record `skip` as skipped. Applied whole or not at all.
 */
export interface MintDecision {
  readonly scheduleId: string;
  readonly expectedCursor: Instant;
  readonly newCursor: Instant;
  readonly mint: readonly Instant[];
  readonly skip: readonly Instant[];
}

export interface MintDueRequest {
  readonly decisions: readonly MintDecision[];
  readonly now: Instant;
}

/**
 * Whether a decision must be refused as `stale` although the cursor has not moved: it mints for a
 * `noOverlap` schedule that has a live instance in the store. The planner decided from a read taken
 * before that instance appeared (a trigger or a requeue does not move the cursor), so it must read
 * again, and will then skip the tick. Every store applies this rule with the live-instance state
 * it reads under the schedule's lock, in the mint's transaction.
 */
export function mintsOverLiveInstance(noOverlap: boolean, decision: MintDecision, hasLiveInstance: boolean): boolean {
  return noOverlap && hasLiveInstance && decision.mint.length > 0;
}

/**
 * Per decision: `minted` with the ids of the jobs it created (a tick whose job already exists is
 * not minted again and not listed); `stale` when the cursor had moved, or when the decision mints
 * for a `noOverlap` schedule that has a live instance ({@link mintsOverLiveInstance}) — nothing
 * applied either way; `notFound` when the schedule is gone.
 */
export type MintResult =
  | { readonly scheduleId: string; readonly status: "minted"; readonly jobIds: readonly string[] }
  | { readonly scheduleId: string; readonly status: "stale"; readonly cursor: Instant }
  | { readonly scheduleId: string; readonly status: "notFound" };

export interface TriggerScheduleRequest {
  readonly scheduleId: string;
  /** The id of the extra instance; a repeat with the same id is a no-op `triggered`. */
  readonly jobId: string;
  readonly actor: string;
  readonly now: Instant;
}

/** Trigger-now makes one instance due now and leaves the cursor and future ticks alone. */
export type TriggerScheduleResult =
  | { readonly status: "triggered"; readonly jobId: string }
  | { readonly status: "notFound" };

/**
 * The id of the job a schedule mints for `tick`: deterministic, so a duplicate or late mint of
 * the same tick collides with the first one instead of running twice.
 */
export function scheduledJobId(scheduleId: string, tick: Instant): string {
  return `${scheduleId}@${new Date(tick).toISOString()}`;
}

/** Characters `scheduledJobId` appends to a schedule id. */
export const SCHEDULED_JOB_ID_SUFFIX_LENGTH = 25;
