import { type Instant, type OutboxRow, PROMISE_TAGS, type PromiseRow, type PromiseScheduleRow, type TaskRow } from "@belay/contract";
import { type IndexEntry, SortedIndex } from "./sorted-index.js";
import type { UndoLog } from "./undo-log.js";

/**
 * A time index keyed by id: each id holds at most one entry (its timer), kept in a
 * {@link SortedIndex} so the earliest due entries cost nothing to find.
 */
export class TimerIndex {
  readonly index = new SortedIndex();
  readonly #entries = new Map<string, IndexEntry>();
  #seq = 0;

  /** Sets (or, with `null`, clears) the timer of `id`, undoably. */
  set(undo: UndoLog, id: string, at: Instant | null): void {
    const current = this.#entries.get(id);
    if (current !== undefined && current.at === at) return;
    if (current !== undefined) {
      undo.indexRemove(this.index, current);
      undo.mapDelete(this.#entries, id);
    }
    if (at !== null) {
      const entry = { at, seq: ++this.#seq, id };
      undo.indexInsert(this.index, entry);
      undo.mapSet(this.#entries, id, entry);
    }
  }

  /** Ids due at `now` (timer ≤ now), earliest first, at most `max`. */
  due(now: Instant, max: number): string[] {
    const out: string[] = [];
    for (const entry of this.index.upTo(now)) {
      if (out.length >= max) break;
      out.push(entry.id);
    }
    return out;
  }

  clear(): void {
    this.#entries.clear();
    for (const entry of [...this.index.ascending()]) this.index.remove(entry);
  }
}

/** The rows of the memory store's promise surface, with the indexes its scans read. */
export class PromiseState {
  readonly promises = new Map<string, PromiseRow>();
  readonly tasks = new Map<string, TaskRow>();
  /** Callbacks by awaited promise, and by awaiter. */
  readonly callbacksOn = new Map<string, Set<string>>();
  readonly callbacksOf = new Map<string, Set<string>>();
  readonly listeners = new Map<string, Set<string>>();
  readonly schedules = new Map<string, PromiseScheduleRow>();
  /** Outbox rows by key: `execute \0 task id` (one per task), `unblock \0 promise id \0 address`. */
  readonly outbox = new Map<string, OutboxRow>();
  /** Promise ids by `resonate:branch`. */
  readonly branches = new Map<string, Set<string>>();
  readonly deadlines = new TimerIndex();
  readonly taskTimers = new TimerIndex();
  readonly scheduleTimers = new TimerIndex();
  readonly outboxTimers = new TimerIndex();
  /** The last revision given to an outbox row (never reused). */
  revision = 0;

  static outboxKey(kind: "execute" | "unblock", id: string, address: string): string {
    return kind === "execute" ? `execute\u0000${id}` : `unblock\u0000${id}\u0000${address}`;
  }

  /** Writes a promise row with its deadline and branch entries. */
  putPromise(undo: UndoLog, row: PromiseRow): void {
    undo.mapSet(this.promises, row.id, row);
    this.deadlines.set(undo, row.id, row.state === "pending" ? row.timeoutAt : null);
    const branch = row.tags[PROMISE_TAGS.branch];
    if (branch !== undefined) undo.setAdd(this.#setOf(undo, this.branches, branch), row.id);
  }

  putTask(undo: UndoLog, row: TaskRow): void {
    undo.mapSet(this.tasks, row.id, row);
    this.taskTimers.set(undo, row.id, row.timerAt);
  }

  addCallback(undo: UndoLog, awaited: string, awaiter: string): void {
    undo.setAdd(this.#setOf(undo, this.callbacksOn, awaited), awaiter);
    undo.setAdd(this.#setOf(undo, this.callbacksOf, awaiter), awaited);
  }

  deleteCallbacksOn(undo: UndoLog, awaited: string): void {
    for (const awaiter of [...(this.callbacksOn.get(awaited) ?? [])]) this.#deleteCallback(undo, awaited, awaiter);
  }

  deleteCallbacksOf(undo: UndoLog, awaiter: string): void {
    for (const awaited of [...(this.callbacksOf.get(awaiter) ?? [])]) this.#deleteCallback(undo, awaited, awaiter);
  }

  #deleteCallback(undo: UndoLog, awaited: string, awaiter: string): void {
    const on = this.callbacksOn.get(awaited);
    if (on !== undefined) undo.setDelete(on, awaiter);
    const of = this.callbacksOf.get(awaiter);
    if (of !== undefined) undo.setDelete(of, awaited);
  }

  addListener(undo: UndoLog, promiseId: string, address: string): void {
    undo.setAdd(this.#setOf(undo, this.listeners, promiseId), address);
  }

  deleteListeners(undo: UndoLog, promiseId: string): void {
    const set = this.listeners.get(promiseId);
    if (set !== undefined) for (const address of [...set]) undo.setDelete(set, address);
  }

  putOutbox(undo: UndoLog, row: OutboxRow): void {
    undo.mapSet(this.outbox, PromiseState.outboxKey(row.kind, row.id, row.address), row);
    this.outboxTimers.set(undo, PromiseState.outboxKey(row.kind, row.id, row.address), row.availableAt);
  }

  deleteOutbox(undo: UndoLog, key: string): void {
    undo.mapDelete(this.outbox, key);
    this.outboxTimers.set(undo, key, null);
  }

  putSchedule(undo: UndoLog, row: PromiseScheduleRow): void {
    undo.mapSet(this.schedules, row.id, row);
    this.scheduleTimers.set(undo, row.id, row.nextRunAt);
  }

  deleteSchedule(undo: UndoLog, id: string): void {
    undo.mapDelete(this.schedules, id);
    this.scheduleTimers.set(undo, id, null);
  }

  nextRevision(undo: UndoLog): number {
    undo.patch(this as PromiseState, { revision: this.revision + 1 });
    return this.revision;
  }

  /** The set under `key`, created (undoably) when absent. */
  #setOf(undo: UndoLog, map: Map<string, Set<string>>, key: string): Set<string> {
    let set = map.get(key);
    if (set === undefined) {
      set = new Set();
      undo.mapSet(map, key, set);
    }
    return set;
  }

  /** Forgets everything (debug reset); not undoable. */
  clear(): void {
    for (const map of [this.promises, this.tasks, this.callbacksOn, this.callbacksOf, this.listeners, this.schedules, this.outbox, this.branches]) map.clear();
    for (const index of [this.deadlines, this.taskTimers, this.scheduleTimers, this.outboxTimers]) index.clear();
  }
}
