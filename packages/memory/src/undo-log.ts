import type { StepHook } from "@belay/contract";
import type { IndexEntry, SortedIndex } from "./sorted-index.js";

/**
 * The memory store's transaction: every mutation of an operation goes through it and records
 * how to undo itself, so an operation that throws part-way (a bug, or a fault injected by the
 * step hook) leaves nothing behind. Arrays held by rows are replaced, never mutated in place.
 */
export class UndoLog {
  readonly #undo: (() => void)[] = [];
  readonly #hook: StepHook | null;
  readonly #operation: string;

  constructor(operation: string, hook: StepHook | null) {
    this.#operation = operation;
    this.#hook = hook;
  }

  /** Marks an internal step boundary: the test hook may throw here, or park the operation. */
  async step(step: string): Promise<void> {
    if (this.#hook !== null) await this.#hook({ operation: this.#operation, step });
  }

  /** Assigns `changes` onto `target`, remembering the previous values. */
  patch<T extends object>(target: T, changes: Partial<T>): void {
    const previous: Partial<T> = {};
    for (const key of Object.keys(changes) as (keyof T)[]) previous[key] = target[key];
    Object.assign(target, changes);
    this.#undo.push(() => Object.assign(target, previous));
  }

  mapSet<K, V>(map: Map<K, V>, key: K, value: V): void {
    const had = map.has(key);
    const previous = map.get(key);
    map.set(key, value);
    this.#undo.push(() => (had ? map.set(key, previous as V) : map.delete(key)));
  }

  mapDelete<K, V>(map: Map<K, V>, key: K): void {
    if (!map.has(key)) return;
    const previous = map.get(key) as V;
    map.delete(key);
    this.#undo.push(() => map.set(key, previous));
  }

  setAdd<V>(set: Set<V>, value: V): void {
    if (set.has(value)) return;
    set.add(value);
    this.#undo.push(() => set.delete(value));
  }

  setDelete<V>(set: Set<V>, value: V): void {
    if (!set.delete(value)) return;
    this.#undo.push(() => set.add(value));
  }

  push<V>(array: V[], value: V): void {
    array.push(value);
    this.#undo.push(() => array.pop());
  }

  indexInsert(index: SortedIndex, entry: IndexEntry): void {
    index.insert(entry);
    this.#undo.push(() => index.remove(entry));
  }

  indexRemove(index: SortedIndex, entry: IndexEntry): void {
    if (index.remove(entry)) this.#undo.push(() => index.insert(entry));
  }

  /** Undoes every recorded mutation, newest first. */
  rollback(): void {
    for (let i = this.#undo.length - 1; i >= 0; i--) this.#undo[i]!();
    this.#undo.length = 0;
  }
}
