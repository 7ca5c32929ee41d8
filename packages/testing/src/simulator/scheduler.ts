import type { Instant } from "@belay/contract";

/** A scheduled event; `cancel()` makes it a no-op. */
export interface EventHandle {
  cancel(): void;
}

interface Entry {
  readonly at: Instant;
  readonly seq: number;
  readonly run: () => void | Promise<void>;
  /** Let pending microtasks run after this event (real async shell code reacts to it). */
  readonly settle: boolean;
  cancelled: boolean;
}

/** Scheduler steps in one virtual second past which the whole run counts as a runaway. */
const RUNAWAY_EVENTS_PER_SECOND = 200_000;

/** What {@link Scheduler.drive} asks of the world it runs. */
export interface DriveHooks {
  /** After every event (e.g. the oracles look at the store). */
  afterStep(): void | Promise<void>;
  /** Too many steps in one virtual second; the world reports it and halts. */
  runaway(message: string): void;
  /** A violation is final or the world halted: the run ends. */
  stopped(): boolean;
  /** Nothing is left to do: the run ends drained. */
  drained(): boolean;
}

/**
 * The simulator's one timeline: events at virtual instants, run one at a time in (instant,
 * creation) order, so a run is a pure function of its plan. `now` is true time; nodes read it
 * through their own skewed clocks.
 */
export class Scheduler {
  #now: Instant;
  #seq = 0;
  #heap: Entry[] = [];
  /** Events run so far. */
  steps = 0;

  constructor(start: Instant) {
    this.#now = start;
  }

  get now(): Instant {
    return this.#now;
  }

  get pending(): number {
    return this.#heap.length;
  }

  /** Runs `run` at `at` (never before now). `settle`: drain microtasks after it. */
  at(at: Instant, run: () => void | Promise<void>, settle = false): EventHandle {
    const entry: Entry = { at: Math.max(Math.floor(at), this.#now), seq: this.#seq++, run, settle, cancelled: false };
    this.#push(entry);
    return { cancel: () => void (entry.cancelled = true) };
  }

  /** Runs `run` `delay` ms from now. */
  after(delay: number, run: () => void | Promise<void>, settle = false): EventHandle {
    return this.at(this.#now + Math.max(0, delay), run, settle);
  }

  /** When the next live event is due, or `null`. */
  nextAt(): Instant | null {
    while (this.#heap.length > 0 && this.#heap[0]!.cancelled) this.#pop();
    return this.#heap.length === 0 ? null : this.#heap[0]!.at;
  }

  /**
   * Runs the next live event due at or before `until`; returns false when there is none (time
   * then stays where it is).
   */
  async step(until: Instant): Promise<boolean> {
    for (;;) {
      const top = this.#heap[0];
      if (top === undefined || top.at > until) return false;
      this.#pop();
      if (top.cancelled) continue;
      this.#now = top.at;
      this.steps++;
      const result = top.run();
      if (result !== undefined) await result;
      // Shell code that is really async (the observer dispatcher) continues in microtasks: let it
      // run to its next wait — a timer or a store call, which are events here — before going on.
      if (top.settle) await new Promise<void>((resolve) => setImmediate(resolve));
      return true;
    }
  }

  /**
   * Runs events due up to `deadline` until the world has `stopped` or is `drained`; returns whether
   * it drained. Both halves' worlds run this way.
   */
  async drive(deadline: Instant, hooks: DriveHooks): Promise<boolean> {
    let second = -1;
    let stepsThisSecond = 0;
    while (await this.step(deadline)) {
      await hooks.afterStep();
      const now = Math.floor(this.#now / 1_000);
      if (now !== second) {
        second = now;
        stepsThisSecond = 0;
      }
      if (++stepsThisSecond > RUNAWAY_EVENTS_PER_SECOND) hooks.runaway(`more than ${RUNAWAY_EVENTS_PER_SECOND} simulator steps in one virtual second`);
      if (hooks.stopped()) return false;
      if (hooks.drained()) return true;
    }
    return false;
  }

  /** Moves time forward to `at` without running anything (nothing may be due before it). */
  advanceTo(at: Instant): void {
    if (at > this.#now) this.#now = at;
  }

  #push(entry: Entry): void {
    const heap = this.#heap;
    heap.push(entry);
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(entry, heap[parent]!)) break;
      heap[i] = heap[parent]!;
      i = parent;
    }
    heap[i] = entry;
  }

  #pop(): Entry | undefined {
    const heap = this.#heap;
    const top = heap[0];
    const last = heap.pop();
    if (heap.length === 0 || last === undefined) return top;
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= heap.length) break;
      const right = left + 1;
      const child = right < heap.length && before(heap[right]!, heap[left]!) ? right : left;
      if (!before(heap[child]!, last)) break;
      heap[i] = heap[child]!;
      i = child;
    }
    heap[i] = last;
    return top;
  }
}

function before(a: Entry, b: Entry): boolean {
  return a.at < b.at || (a.at === b.at && a.seq < b.seq);
}
