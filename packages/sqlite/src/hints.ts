import { type HintListener, Listeners } from "@belay/contract";

/**
 * The wake-up hint listeners of one store instance. Hints are in-process and lossy: listeners
 * hear about this instance's own commits only, and other processes find the work by polling.
 */
export class Hints {
  readonly #listeners = new Listeners<[queue: string]>();

  /** Adds `listener`; the returned function removes it. */
  subscribe(listener: HintListener): () => void {
    return this.#listeners.subscribe(listener);
  }

  /** Tells every listener about each of `queues`; call only after the work committed. */
  announce(queues: Iterable<string>): void {
    for (const queue of queues) this.#listeners.announce(queue);
  }

  /** Drops every listener (the store closed). */
  clear(): void {
    this.#listeners.clear();
  }
}
