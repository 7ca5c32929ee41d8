import type { Instant } from "@belay/contract";
import type { Clock, TimerHandle } from "@belay/core";

interface Timer {
  readonly at: Instant;
  readonly seq: number;
  readonly callback: () => void;
  cancelled: boolean;
}

/**
 * A clock that moves only when told to. Timers fire in (due time, creation) order when the
 * clock passes them, so a run on virtual time is deterministic.
 */
export class VirtualClock implements Clock {
  #now: Instant;
  #seq = 0;
  #timers: Timer[] = [];

  constructor(start: Instant) {
    this.#now = start;
  }

  now(): Instant {
    return this.#now;
  }

  setTimer(at: Instant, callback: () => void): TimerHandle {
    const timer: Timer = { at, seq: this.#seq++, callback, cancelled: false };
    this.#timers.push(timer);
    return {
      cancel: () => {
        timer.cancelled = true;
      },
    };
  }

  /** When the earliest live timer is due, or `null`. */
  nextTimerAt(): Instant | null {
    let next: Instant | null = null;
    for (const timer of this.#timers) if (!timer.cancelled && (next === null || timer.at < next)) next = timer.at;
    return next;
  }

  /** Moves the clock to `at` (never backwards). Fires nothing. */
  set(at: Instant): void {
    if (at < this.#now) throw new RangeError(`the virtual clock cannot go back from ${this.#now} to ${at}`);
    this.#now = at;
  }

  /** Fires every live timer due at or before now, in order; returns how many fired. */
  fireDue(): number {
    const due = this.#timers.filter((t) => !t.cancelled && t.at <= this.#now).sort((a, b) => a.at - b.at || a.seq - b.seq);
    this.#timers = this.#timers.filter((t) => !t.cancelled && t.at > this.#now);
    for (const timer of due) timer.callback();
    return due.length;
  }
}
