import { type Instant, MAX_INSTANT, type PromiseStore, type ScheduleFiring } from "@belay/contract";
import type { Logger } from "@belay/core";
import { nextOccurrence } from "./schedule-cron.js";

// The timeout scan: due promise deadlines, task retries and lapsed leases (`expireTimers`,
// repeated while it says more may be due, a bounded number of times), then due schedules, whose
// next occurrence is computed here (the store parses no cron) and applied by `fireSchedules`
// with a compare-and-set on the timer. Every step re-checks under the store's locks, so several
// processes may scan one database at once.

/** Options of the scan. */
export interface TimerScanOptions {
  readonly store: PromiseStore;
  readonly logger: Logger;
  /** Timers per `expireTimers` call. Default 500. */
  readonly batch?: number;
  /** `expireTimers` calls per pass at most. Default 10. */
  readonly rounds?: number;
  /** Schedules per pass. Default 100. */
  readonly scheduleBatch?: number;
}

/** What one scan did. */
export interface ScanResult {
  readonly promisesTimedOut: number;
  readonly tasksRetried: number;
  readonly leasesExpired: number;
  readonly schedulesFired: number;
  /** A batch came back full: more may be due. */
  readonly more: boolean;
}

/**
 * The next run of a schedule fired at `now`: the first occurrence after `now`. Occurrences missed
 * while no server ran are not caught up one by one: the oldest due fires (late), then the
 * schedule goes on from now. A cron without a future occurrence (or one that no longer parses)
 * parks the schedule at the end of time.
 */
export function nextRunAfter(cron: string, now: Instant, logger: Logger, id: string): Instant {
  try {
    return nextOccurrence(cron, now) ?? MAX_INSTANT;
  } catch (error) {
    logger.warn("promise schedule: its cron does not parse; parked", { id, cron, error: (error as Error).message });
    return MAX_INSTANT;
  }
}

/** The scan; `scan(now)` is one bounded pass. */
export class TimerScan {
  readonly #store: PromiseStore;
  readonly #logger: Logger;
  readonly #batch: number;
  readonly #rounds: number;
  readonly #scheduleBatch: number;

  constructor(options: TimerScanOptions) {
    this.#store = options.store;
    this.#logger = options.logger;
    this.#batch = options.batch ?? 500;
    this.#rounds = options.rounds ?? 10;
    this.#scheduleBatch = options.scheduleBatch ?? 100;
  }

  async scan(now: Instant): Promise<ScanResult> {
    let promisesTimedOut = 0;
    let tasksRetried = 0;
    let leasesExpired = 0;
    let more = true;
    for (let round = 0; more && round < this.#rounds; round++) {
      const result = await this.#store.expireTimers({ now, max: this.#batch });
      promisesTimedOut += result.promisesTimedOut;
      tasksRetried += result.tasksRetried;
      leasesExpired += result.leasesExpired;
      more = result.more;
    }
    const due = await this.#store.dueSchedules({ now, max: this.#scheduleBatch });
    let schedulesFired = 0;
    if (due.length > 0) {
      const firings: ScheduleFiring[] = due.map((schedule) => ({
        id: schedule.id,
        expectedNextRunAt: schedule.nextRunAt,
        nextRunAt: Math.max(nextRunAfter(schedule.cron, now, this.#logger, schedule.id), schedule.nextRunAt + 1),
      }));
      const fired = await this.#store.fireSchedules({ firings, now });
      schedulesFired = fired.filter((f) => f.status === "fired").length;
    }
    return { promisesTimedOut, tasksRetried, leasesExpired, schedulesFired, more: more || due.length >= this.#scheduleBatch };
  }
}
