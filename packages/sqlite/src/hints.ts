import type { HintListener } from "@belay/contract";

/**
 * The wake-up hint listeners of one store instance. Hints are in-process and lossy: listeners
 * hear about this instance's own commits only, and other processes find the work by polling.
 */
export class Hints {
  readonly #listeners = new Set<HintListener>();

  /** Adds `listener`; the returned function removes it. */
  subscribe(listener: HintListener): () => void {
    this.#listeners.add(listener);
    return () => void this.#listeners.delete(listener);
  }

  /** Tells every listener about each of `queues`; call only after the work committed. */
  announce(queues: Iterable<string>): void {
    for (const queue of queues) {
      // A copy: a listener may unsubscribe itself while being told.
      for (const listener of [...this.#listeners]) {
        try {
          listener(queue);
        } catch {
          // A listener's failure is its own; hints are advisory and the write has committed.
        }
      }
    }
  }

  /** Drops every listener (the store closed). */
  clear(): void {
    this.#listeners.clear();
  }
}
