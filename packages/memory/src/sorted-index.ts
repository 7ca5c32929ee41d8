/** An index entry: ordered by `at`, then `seq` (both unique together with `id`). */
export interface IndexEntry {
  readonly at: number;
  readonly seq: number;
  readonly id: string;
}

function compare(a: Pick<IndexEntry, "at" | "seq">, b: Pick<IndexEntry, "at" | "seq">): number {
  return a.at - b.at || a.seq - b.seq;
}

/**
 * A time-ordered index: entries sorted by (at, seq), found by binary search. Inserting and
 * removing move memory (cheap at the sizes a memory store holds); reading the earliest entries
 * costs nothing, which is what claims, expiry sweeps and purges need.
 */
export class SortedIndex {
  readonly #entries: IndexEntry[] = [];

  get size(): number {
    return this.#entries.length;
  }

  /** The earliest entry, if any. */
  first(): IndexEntry | undefined {
    return this.#entries[0];
  }

  insert(entry: IndexEntry): void {
    this.#entries.splice(this.#bound(entry, false), 0, entry);
  }

  /** Removes the entry with this (at, seq); returns whether one was there. */
  remove(entry: IndexEntry): boolean {
    const i = this.#bound(entry, false);
    const found = this.#entries[i];
    if (found === undefined || compare(found, entry) !== 0) return false;
    this.#entries.splice(i, 1);
    return true;
  }

  /** Entries in order, from the start. Do not mutate the index while iterating. */
  *ascending(): IterableIterator<IndexEntry> {
    for (const entry of this.#entries) yield entry;
  }

  /** Entries in order with `at <= until`. */
  *upTo(until: number): IterableIterator<IndexEntry> {
    for (const entry of this.#entries) {
      if (entry.at > until) return;
      yield entry;
    }
  }

  /** Entries in order strictly after (at, seq) = `from`, or from the start when `from` is undefined. */
  *after(from: { at: number; seq: number } | undefined, descending = false): IterableIterator<IndexEntry> {
    if (!descending) {
      let i = from === undefined ? 0 : this.#bound(from, true);
      for (; i < this.#entries.length; i++) yield this.#entries[i]!;
    } else {
      let i = from === undefined ? this.#entries.length - 1 : this.#bound(from, false) - 1;
      for (; i >= 0; i--) yield this.#entries[i]!;
    }
  }

  /** The position of the first entry at or after `key` (`strict`: the first after it). */
  #bound(key: { at: number; seq: number }, strict: boolean): number {
    let lo = 0;
    let hi = this.#entries.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const order = compare(this.#entries[mid]!, key);
      if (order < 0 || (strict && order === 0)) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}
