import type { Instant } from "@belay/contract";

/** A timer handle from a {@link Clock}. */
export interface TimerHandle {
  cancel(): void;
}

/**
 * The shell's only source of time. Production uses {@link systemClock}; the test harness and the
 * simulator supply a virtual clock so hours of schedules and retries run in milliseconds.
 */
export interface Clock {
  now(): Instant;
  /** Calls `callback` once, at or after `at`. */
  setTimer(at: Instant, callback: () => void): TimerHandle;
  /**
   * Keeps the process alive until the returned handle is cancelled: a started worker holds one,
   * so a process whose only work is the worker does not exit (its timers alone never keep it
   * alive). A virtual clock has nothing to hold.
   */
  hold?(): TimerHandle;
}

/**
 * Wall-clock time and Node timers. Timers are unref'd — a pending timer never keeps a process
 * alive; what keeps it alive while a worker runs is the worker's {@link Clock.hold}.
 */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimer(at, callback) {
    const timer = setTimeout(callback, Math.max(0, at - Date.now()));
    timer.unref?.();
    return { cancel: () => clearTimeout(timer) };
  },
  hold() {
    // A ref'd timer that never fires on its own (the longest delay Node allows), re-armed if it does.
    const timer = setInterval(() => {}, 2_147_483_647);
    return { cancel: () => clearInterval(timer) };
  },
};
