/**
 * The listeners of one in-process, lossy signal of a store instance (wake-up hints, outbox
 * writes), told after the commit that caused it. A listener that throws fails no write (it has
 * committed) and keeps no other listener from hearing.
 */
export class Listeners<Args extends readonly unknown[] = []> {
  readonly #listeners = new Set<(...args: Args) => void>();

  /** Adds `listener`; the returned function removes it (calling it twice is harmless). */
  subscribe(listener: (...args: Args) => void): () => void {
    this.#listeners.add(listener);
    return () => void this.#listeners.delete(listener);
  }

  /** Tells every listener; call only once the work has committed. */
  announce(...args: Args): void {
    // A copy: a listener may unsubscribe itself while being told.
    for (const listener of [...this.#listeners]) {
      try {
        listener(...args);
      } catch {
        // A listener's failure is its own.
      }
    }
  }

  /** Drops every listener (the store closed). */
  clear(): void {
    this.#listeners.clear();
  }
}
