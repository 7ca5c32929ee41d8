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
}

/** Wall-clock time and Node timers (unref'd: a pending timer never keeps a process alive). */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimer(at, callback) {
    const timer = setTimeout(callback, Math.max(0, at - Date.now()));
    timer.unref?.();
    return { cancel: () => clearTimeout(timer) };
  },
};
