import { randomInt } from "node:crypto";
import {
  type LoadedRows, PROMISE_TAGS, type PromiseEffects, type PromiseRow, type PromiseState, type RowKey, type TaskRow, keysByKind,
} from "@belay/contract";

// What a `PostgresPromiseStore` remembers of the promises it last read and wrote, so that an
// operation whose rows it all remembers can skip its load: a guess, never trusted. The write of
// such an operation carries what the operation decided on (each promise's revision, each task's
// columns, the members of the branch it preloaded), locks those rows and compares them in the
// same statement, and aborts (SQLSTATE BLY02, nothing committed) when any differs; the operation
// then runs again with a real load. The machine is pure, so rows equal to the remembered ones
// decide exactly what a load of them would have: a wrong guess costs a round trip, never an
// answer. Why each remembered fact can be checked by the write:
//
// - A promise row by its revision, which rises with every write of the row (see promise
//   migration 1), whoever writes it.
// - A task row by all its columns (it has no revision of its own); equal columns are the same row
//   to the machine.
// - "No callbacks on P" and "no listeners on P" by P's revision: adding either raises it. Their
//   removal does not, so a list that is not empty is never remembered.
// - The callbacks P awaits, which a settle of P deletes by awaiter without reading them: adding
//   one raises P's revision unless the same write changes P's task (see `raisedRevisions`). The
//   one statement of a remembered operation reads at its start, before the locks it may wait for;
//   a callback committed meanwhile by the lock's holder is then seen by the check, not missed by
//   the delete.
// - A promise created again after a reset: a new promise's revision starts at random (48 bits),
//   so what was remembered of the one before matches it with a chance of one in 2^48.
// - A branch by its members' ids and revisions (the members are read without locks, as the load
//   reads them).

/** A promise as stored: its JSON columns as text (each hit parses a row of its own, as a load would), its revision and its branch. */
export interface StoredPromise {
  readonly id: string;
  readonly state: PromiseState;
  readonly param: string;
  readonly value: string;
  readonly tags: string;
  readonly timeoutAt: number;
  readonly createdAt: number;
  readonly settledAt: number | null;
  readonly revision: number;
  /** The `resonate:branch` tag, or `null`. */
  readonly branch: string | null;
}

/** A stored promise as the machine's row (new objects every time: callers may keep or change what they are handed). */
export function promiseOf(stored: StoredPromise): PromiseRow {
  return {
    id: stored.id,
    state: stored.state,
    param: JSON.parse(stored.param) as never,
    value: JSON.parse(stored.value) as never,
    tags: JSON.parse(stored.tags) as never,
    timeoutAt: stored.timeoutAt,
    createdAt: stored.createdAt,
    settledAt: stored.settledAt,
  };
}

/** The branch a promise's tags name (`resonate:branch`), or `null`. */
export function branchOfTags(tags: Readonly<Record<string, string>>): string | null {
  return tags[PROMISE_TAGS.branch] ?? null;
}

/** The revision a new promise starts at: random, so a promise deleted and created again starts elsewhere. */
export const firstRevision = (): number => randomInt(1, 2 ** 48);

/**
 * The promises whose revision a write raises without writing their row: those that gain a
 * callback or a listener, and the awaiter of a new callback whose task the write leaves alone.
 */
export function raisedRevisions(effects: PromiseEffects): string[] {
  const written = new Set(effects.promises.map((w) => w.row.id));
  const tasksWritten = new Set(effects.tasks.map((w) => w.row.id));
  const raised = new Set([...effects.callbacksAdded.map((c) => c.awaited), ...effects.listenersAdded.map((l) => l.promiseId)]);
  for (const { awaiter } of effects.callbacksAdded) if (!tasksWritten.has(awaiter)) raised.add(awaiter);
  return [...raised].filter((id) => !written.has(id));
}

/** What one operation's write must find unchanged: the rows its decision rests on that no load of its own locked. */
export interface RowGuards {
  readonly promises: readonly { readonly id: string; readonly revision: number }[];
  /** Tasks that must still have exactly these columns. */
  readonly tasks: readonly TaskRow[];
  /** Promises that must still have no task. */
  readonly absentTasks: readonly string[];
  /** A branch whose members must still be exactly these (`id:revision`). */
  readonly branch: { readonly name: string; readonly members: readonly string[] } | null;
}

/**
 * What one attempt of an operation knows of its rows: what its loads found (under their locks)
 * and what it took from the cache, in the form the write and the cache need. It lives for one
 * attempt, like the transaction.
 */
export class AttemptRows {
  /** Promises loaded or remembered: `null` when a locked load found none. */
  readonly promises = new Map<string, StoredPromise | null>();
  /** Tasks of the promises loaded or remembered: `null` when the promise has none. */
  readonly tasks = new Map<string, TaskRow | null>();
  /** How many callbacks (on) and listeners each promise of an `awaiters`/`listeners` key had. */
  readonly awaiterCounts = new Map<string, number>();
  readonly listenerCounts = new Map<string, number>();
  /** The members of each branch read. */
  readonly branches = new Map<string, readonly string[]>();
  /** Branch members' rows (read without locks), by id. */
  readonly branchRows = new Map<string, StoredPromise>();
  /** Set when the first load came from the cache: the write must carry these. */
  guards: RowGuards | null = null;
}

/**
 * The promise rows a write sent: each one's values as `promiseValues` built them (param and tags
 * `null` when as loaded), an inserted one's followed by its first revision.
 */
export interface WrittenPromises {
  readonly inserted: readonly (readonly unknown[])[];
  readonly updated: readonly (readonly unknown[])[];
}

/** One remembered promise. */
interface Entry {
  readonly promise: StoredPromise;
  /** Its task (`null`: none), `undefined` when not known (read as a branch member only). */
  readonly task: TaskRow | null | undefined;
  readonly noAwaiters: boolean;
  readonly noListeners: boolean;
}

/** Rows whose JSON is longer than this (in characters, param + value + tags) are not remembered. */
export const MAX_REMEMBERED_TEXT = 16 * 1024;

const storedSize = (s: StoredPromise) => s.param.length + s.value.length + s.tags.length;

/** The promise rows a store remembers, least recently used first out. */
export class PromiseRowCache {
  readonly #capacity: number;
  readonly #entries = new Map<string, Entry>();
  readonly #branches = new Map<string, Set<string>>();

  /** `capacity`: the most promises (and, apart, branches) remembered. */
  constructor(capacity: number) {
    this.#capacity = capacity;
  }

  /** How many promises are remembered (for tests). */
  get size(): number {
    return this.#entries.size;
  }

  /**
   * The rows of `keys` as a load would answer them, and the guards the write must carry, when
   * every one is remembered; `null` otherwise (the operation loads). Fills `rows` as a load does.
   */
  lookup(keys: readonly RowKey[], rows: AttemptRows): LoadedRows | null {
    const { promise, awaiters, listeners, branch, branchOf, schedule } = keysByKind(keys);
    if (schedule.size > 0) return null;
    const named = new Set([...promise, ...awaiters, ...listeners]);
    const entries = new Map<string, Entry>();
    for (const id of new Set([...named, ...branchOf])) {
      const entry = this.#entries.get(id);
      if (entry === undefined || (named.has(id) && entry.task === undefined)) return null;
      entries.set(id, entry);
    }
    for (const id of awaiters) if (!entries.get(id)!.noAwaiters) return null;
    for (const id of listeners) if (!entries.get(id)!.noListeners) return null;
    const branchNames = new Set(branch);
    for (const id of branchOf) {
      const name = entries.get(id)!.promise.branch;
      if (name !== null) branchNames.add(name);
    }
    if (branchNames.size > 1) return null;
    let preload: { name: string; members: StoredPromise[] } | null = null;
    for (const name of branchNames) {
      const ids = this.#branches.get(name);
      if (ids === undefined) return null;
      const members: StoredPromise[] = [];
      for (const id of ids) {
        const entry = this.#entries.get(id);
        if (entry === undefined) return null;
        members.push(entry.promise);
      }
      preload = { name, members };
    }

    // A hit: touch what was used, answer as the load would, and say what the write must check.
    for (const [id, entry] of entries) this.#touch(id, entry);
    const loaded: LoadedRows = {
      promises: [...named].map((id) => {
        const entry = entries.get(id)!;
        return { id, promise: promiseOf(entry.promise), task: entry.task! };
      }),
      awaiters: [...awaiters].map((promiseId) => ({ promiseId, awaiters: [] })),
      listeners: [...listeners].map((promiseId) => ({ promiseId, addresses: [] })),
      branches: preload === null ? [] : [{ branch: preload.name, promises: preload.members.map(promiseOf) }],
      schedules: [],
    };
    for (const id of named) {
      const entry = entries.get(id)!;
      rows.promises.set(id, entry.promise);
      rows.tasks.set(id, entry.task!);
    }
    for (const id of awaiters) rows.awaiterCounts.set(id, 0);
    for (const id of listeners) rows.listenerCounts.set(id, 0);
    rows.guards = {
      promises: [...entries].map(([id, entry]) => ({ id, revision: entry.promise.revision })),
      tasks: [...named].map((id) => entries.get(id)!.task).filter((task): task is TaskRow => task != null),
      absentTasks: [...named].filter((id) => entries.get(id)!.task === null),
      branch: preload === null ? null : { name: preload.name, members: preload.members.map((m) => `${m.id}:${m.revision}`) },
    };
    return loaded;
  }

  /**
   * After a commit: what the attempt's rows are now — what it loaded or took from the cache,
   * with its own writes applied. A promise whose row or revision it cannot tell is forgotten.
   */
  learn(rows: AttemptRows, effects: PromiseEffects | null, written: WrittenPromises | null): void {
    const next = new Map<string, StoredPromise | null>(rows.promises);
    const tasks = new Map<string, TaskRow | null | undefined>(rows.tasks);
    const noAwaiters = new Map<string, boolean>();
    const noListeners = new Map<string, boolean>();
    for (const [id, n] of rows.awaiterCounts) noAwaiters.set(id, n === 0);
    for (const [id, n] of rows.listenerCounts) noListeners.set(id, n === 0);
    const movedBranches = new Set<string>();
    const joined: StoredPromise[] = [];

    if (effects !== null && written !== null) {
      const writtenRow = (values: readonly unknown[], before: StoredPromise | null | undefined, revision: number): StoredPromise | null => {
        const [id, , param, value, tags, timeoutAt, createdAt, settledAt] = values as [string, number, string | null, string, string | null, number, number, number | null];
        const row = effects.promises.find((w) => w.row.id === id)!.row;
        const paramText = param ?? before?.param;
        const tagsText = tags ?? before?.tags;
        if (paramText === undefined || tagsText === undefined || Number.isNaN(revision)) return null;
        return { id, state: row.state, param: paramText, value, tags: tagsText, timeoutAt, createdAt, settledAt, revision, branch: branchOfTags(row.tags) };
      };
      for (const values of written.inserted) {
        const id = values[0] as string;
        const stored = writtenRow(values, undefined, values[8] as number);
        next.set(id, stored);
        tasks.set(id, null);
        noAwaiters.set(id, true);
        noListeners.set(id, true);
        if (stored !== null) joined.push(stored);
      }
      for (const values of written.updated) {
        const id = values[0] as string;
        const before = next.get(id);
        const stored = writtenRow(values, before, before == null ? Number.NaN : before.revision + 1);
        next.set(id, stored);
        if (before != null && stored !== null && before.branch !== stored.branch) {
          if (before.branch !== null) movedBranches.add(before.branch);
          if (stored.branch !== null) movedBranches.add(stored.branch);
        }
      }
      for (const id of raisedRevisions(effects)) {
        const before = next.get(id);
        next.set(id, before == null ? null : { ...before, revision: before.revision + 1 });
      }
      for (const id of effects.callbacksOnDeleted) noAwaiters.set(id, true);
      for (const id of effects.listenersDeleted) noListeners.set(id, true);
      for (const c of effects.callbacksAdded) noAwaiters.set(c.awaited, false);
      for (const l of effects.listenersAdded) noListeners.set(l.promiseId, false);
      for (const { row } of effects.tasks) tasks.set(row.id, row);
    }

    for (const [id, stored] of next) {
      const current = this.#entries.get(id);
      if (stored === null || storedSize(stored) > MAX_REMEMBERED_TEXT) {
        if (current !== undefined) this.#forget(id);
        continue;
      }
      // Remembered from a later commit already (two operations on one promise at once): keep that.
      if (current !== undefined && current.promise.revision > stored.revision) continue;
      // What the cache held of the row this attempt started from (the same revision) still holds
      // where the attempt neither read nor changed it: its task, and the callbacks and listeners
      // on it (a revision raised for a callback the promise awaits changes neither).
      const before = rows.promises.get(id) ?? stored;
      const carried = current !== undefined && current.promise.revision === before.revision ? current : undefined;
      this.#set(id, {
        promise: stored,
        task: tasks.has(id) ? tasks.get(id) : carried?.task,
        noAwaiters: noAwaiters.get(id) ?? carried?.noAwaiters ?? false,
        noListeners: noListeners.get(id) ?? carried?.noListeners ?? false,
      });
    }
    // Tasks written under promises this attempt did not read (none the machine writes today): forget.
    for (const id of tasks.keys()) if (!next.has(id) && this.#entries.has(id)) this.#forget(id);

    // Branch members read without locks: remembered as members only, where nothing newer is.
    for (const [id, stored] of rows.branchRows) {
      if (next.has(id)) continue;
      const current = this.#entries.get(id);
      if (current !== undefined && current.promise.revision >= stored.revision) continue;
      if (storedSize(stored) > MAX_REMEMBERED_TEXT) continue;
      this.#set(id, { promise: stored, task: undefined, noAwaiters: false, noListeners: false });
    }
    for (const [name, members] of rows.branches) if (!this.#branches.has(name) && !movedBranches.has(name)) this.#setBranch(name, new Set(members));
    for (const name of movedBranches) this.#branches.delete(name);
    for (const stored of joined) {
      if (stored.branch === null) continue;
      const members = this.#branches.get(stored.branch);
      if (members !== undefined) members.add(stored.id);
      // A new root of its own branch: presumed its only member (the write of the next operation checks).
      else if (stored.branch === stored.id) this.#setBranch(stored.branch, new Set([stored.id]));
    }
  }

  /** Forgets what the guards named: the write found some of it changed. */
  forgetGuarded(guards: RowGuards): void {
    for (const { id } of guards.promises) this.#forget(id);
    if (guards.branch !== null) this.#branches.delete(guards.branch.name);
  }

  /** Forgets everything (after a reset of the tables). */
  clear(): void {
    this.#entries.clear();
    this.#branches.clear();
  }

  #touch(id: string, entry: Entry): void {
    this.#entries.delete(id);
    this.#entries.set(id, entry);
  }

  #set(id: string, entry: Entry): void {
    this.#entries.delete(id);
    this.#entries.set(id, entry);
    if (this.#entries.size > this.#capacity) this.#forget(this.#entries.keys().next().value!);
  }

  #forget(id: string): void {
    const entry = this.#entries.get(id);
    this.#entries.delete(id);
    if (entry?.promise.branch != null) this.#branches.delete(entry.promise.branch);
  }

  #setBranch(name: string, members: Set<string>): void {
    this.#branches.delete(name);
    this.#branches.set(name, members);
    if (this.#branches.size > this.#capacity) this.#branches.delete(this.#branches.keys().next().value!);
  }
}
