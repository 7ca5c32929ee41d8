import type { Instant } from "../job.js";
import { PROMISE_TAGS } from "./records.js";
import type {
  CallbackRow, ListenerRow, LoadedRows, OutboxWrite, PromiseEffects, PromiseRow, PromiseScheduleRow, RowKey, TaskRow,
} from "./rows.js";

/**
 * Thrown by a read of rows the store has not loaded yet: the runner loads `key` in the same
 * transaction and runs the operation again from the start (the machine is pure, so a rerun with
 * more rows decides the same way).
 */
export class RowsNeeded extends Error {
  /** Every key the run found missing at once (loaded together, in one round trip). */
  readonly keys: readonly RowKey[];

  constructor(keys: RowKey | readonly RowKey[]) {
    const list = Array.isArray(keys) ? (keys as readonly RowKey[]) : [keys as RowKey];
    super(`rows needed: ${list.map((key) => key.kind).join(", ")}`);
    this.keys = list;
  }
}

/** A string key for a `RowKey`, to remember what was loaded. */
export function rowKeyId(key: RowKey): string {
  switch (key.kind) {
    case "promise":
    case "schedule":
    case "branchOf":
      return `${key.kind}\u0000${key.id}`;
    case "awaiters":
    case "listeners":
      return `${key.kind}\u0000${key.promiseId}`;
    case "branch":
      return `branch\u0000${key.branch}`;
  }
}

/** Every row an operation has loaded so far in its transaction; it only grows across reruns. */
export class LoadedCache {
  readonly loaded = new Set<string>();
  readonly promises = new Map<string, PromiseRow | null>();
  readonly tasks = new Map<string, TaskRow | null>();
  readonly awaiters = new Map<string, readonly string[]>();
  readonly listeners = new Map<string, readonly string[]>();
  readonly branches = new Map<string, readonly PromiseRow[]>();
  readonly schedules = new Map<string, PromiseScheduleRow | null>();

  /** The keys of `keys` not loaded yet. */
  missing(keys: readonly RowKey[]): RowKey[] {
    const seen = new Set<string>();
    return keys.filter((key) => {
      const id = rowKeyId(key);
      if (this.loaded.has(id) || seen.has(id)) return false;
      seen.add(id);
      return true;
    });
  }

  /** Records what a store loaded for `keys`. */
  add(keys: readonly RowKey[], rows: LoadedRows): void {
    for (const key of keys) this.loaded.add(rowKeyId(key));
    for (const { id, promise, task } of rows.promises) {
      this.promises.set(id, promise);
      this.tasks.set(id, task);
      this.loaded.add(rowKeyId({ kind: "promise", id }));
    }
    for (const { promiseId, awaiters } of rows.awaiters) this.awaiters.set(promiseId, awaiters);
    for (const { promiseId, addresses } of rows.listeners) this.listeners.set(promiseId, addresses);
    for (const { branch, promises } of rows.branches) this.branches.set(branch, promises);
    for (const { id, schedule } of rows.schedules) this.schedules.set(id, schedule);
  }
}

/**
 * One run of an operation: reads go to the loaded rows overlaid with this run's own writes; the
 * writes become the operation's {@link PromiseEffects}. Reading a row that was not loaded throws
 * {@link RowsNeeded}.
 */
export class Workspace {
  readonly #cache: LoadedCache;
  readonly #promises = new Map<string, PromiseRow>();
  readonly #tasks = new Map<string, TaskRow>();
  readonly #callbacksOnDeleted = new Set<string>();
  readonly #callbacksOfDeleted = new Set<string>();
  readonly #callbacksAdded = new Map<string, CallbackRow>();
  readonly #listenersDeleted = new Set<string>();
  readonly #listenersAdded = new Map<string, ListenerRow>();
  readonly #executesDeleted = new Set<string>();
  readonly #outbox = new Map<string, OutboxWrite>();
  readonly #schedules = new Map<string, PromiseScheduleRow>();
  readonly #schedulesDeleted = new Set<string>();

  constructor(cache: LoadedCache) {
    this.#cache = cache;
  }

  // ---- reads -------------------------------------------------------------------------------

  /** Throws one {@link RowsNeeded} for every key of `keys` not loaded yet (so they load together). */
  need(keys: readonly RowKey[]): void {
    const missing = this.#cache.missing(keys);
    if (missing.length > 0) throw new RowsNeeded(missing);
  }

  promise(id: string): PromiseRow | null {
    const own = this.#promises.get(id);
    if (own !== undefined) return own;
    if (!this.#cache.promises.has(id)) throw new RowsNeeded({ kind: "promise", id });
    return this.#cache.promises.get(id)!;
  }

  task(id: string): TaskRow | null {
    const own = this.#tasks.get(id);
    if (own !== undefined) return own;
    if (!this.#cache.tasks.has(id)) throw new RowsNeeded({ kind: "promise", id });
    return this.#cache.tasks.get(id)!;
  }

  /** The awaiters of the callbacks on `promiseId`, after this run's writes. */
  awaiters(promiseId: string): string[] {
    const out = this.#stored("awaiters", promiseId, this.#callbacksOnDeleted).filter((awaiter) => !this.#callbacksOfDeleted.has(awaiter));
    for (const { awaited, awaiter } of this.#callbacksAdded.values()) if (awaited === promiseId && !out.includes(awaiter)) out.push(awaiter);
    return out;
  }

  /** The listener addresses on `promiseId`, after this run's writes. */
  listeners(promiseId: string): string[] {
    const out = [...this.#stored("listeners", promiseId, this.#listenersDeleted)];
    for (const { promiseId: p, address } of this.#listenersAdded.values()) if (p === promiseId && !out.includes(address)) out.push(address);
    return out;
  }

  /** The stored awaiters or listener addresses on `promiseId`: none once this run deleted them all, else as loaded. */
  #stored(kind: "awaiters" | "listeners", promiseId: string, deleted: ReadonlySet<string>): readonly string[] {
    if (deleted.has(promiseId)) return [];
    const loaded = this.#cache[kind].get(promiseId);
    if (loaded === undefined) throw new RowsNeeded({ kind, promiseId });
    return loaded;
  }

  /** The promises of a branch (for preloads), with this run's writes. */
  branch(branch: string): PromiseRow[] {
    const loaded = this.#cache.branches.get(branch);
    if (loaded === undefined) throw new RowsNeeded({ kind: "branch", branch });
    const byId = new Map(loaded.map((row) => [row.id, row]));
    for (const row of this.#promises.values()) if (row.tags[PROMISE_TAGS.branch] === branch) byId.set(row.id, row);
    return [...byId.values()];
  }

  schedule(id: string): PromiseScheduleRow | null {
    if (this.#schedulesDeleted.has(id)) return null;
    const own = this.#schedules.get(id);
    if (own !== undefined) return own;
    if (!this.#cache.schedules.has(id)) throw new RowsNeeded({ kind: "schedule", id });
    return this.#cache.schedules.get(id)!;
  }

  // ---- writes ------------------------------------------------------------------------------

  putPromise(row: PromiseRow): void {
    this.#promises.set(row.id, row);
  }

  putTask(row: TaskRow): void {
    this.#tasks.set(row.id, row);
  }

  addCallback(awaited: string, awaiter: string): void {
    this.#callbacksAdded.set(`${awaited}\u0000${awaiter}`, { awaited, awaiter });
  }

  deleteCallbacksOn(promiseId: string): void {
    this.#callbacksOnDeleted.add(promiseId);
    for (const [key, edge] of this.#callbacksAdded) if (edge.awaited === promiseId) this.#callbacksAdded.delete(key);
  }

  deleteCallbacksOf(awaiter: string): void {
    this.#callbacksOfDeleted.add(awaiter);
    for (const [key, edge] of this.#callbacksAdded) if (edge.awaiter === awaiter) this.#callbacksAdded.delete(key);
  }

  addListener(promiseId: string, address: string): void {
    this.#listenersAdded.set(`${promiseId}\u0000${address}`, { promiseId, address });
  }

  deleteListeners(promiseId: string): void {
    this.#listenersDeleted.add(promiseId);
    for (const [key, listener] of this.#listenersAdded) if (listener.promiseId === promiseId) this.#listenersAdded.delete(key);
  }

  /** Queues (or replaces) the task's `execute` message. */
  execute(taskId: string, version: number, address: string, availableAt: Instant): void {
    this.#executesDeleted.delete(taskId);
    this.#outbox.set(`execute\u0000${taskId}`, { kind: "execute", id: taskId, address, version, availableAt });
  }

  /** Drops the task's waiting `execute` message, if any. */
  dropExecute(taskId: string): void {
    this.#outbox.delete(`execute\u0000${taskId}`);
    this.#executesDeleted.add(taskId);
  }

  unblock(promiseId: string, address: string, availableAt: Instant): void {
    this.#outbox.set(`unblock\u0000${promiseId}\u0000${address}`, { kind: "unblock", id: promiseId, address, availableAt });
  }

  putSchedule(row: PromiseScheduleRow): void {
    this.#schedulesDeleted.delete(row.id);
    this.#schedules.set(row.id, row);
  }

  deleteSchedule(id: string): void {
    this.#schedules.delete(id);
    this.#schedulesDeleted.add(id);
  }

  /** The run's writes, for the store to apply. */
  effects(): PromiseEffects {
    const cache = this.#cache;
    const insertedPromise = (id: string) => cache.promises.get(id) === null;
    const insertedTask = (id: string) => cache.tasks.get(id) === null;
    return {
      promises: [...this.#promises.values()].map((row) => ({ row, insert: insertedPromise(row.id) })),
      tasks: [...this.#tasks.values()].map((row) => ({ row, insert: insertedTask(row.id) })),
      callbacksOnDeleted: [...this.#callbacksOnDeleted],
      callbacksOfDeleted: [...this.#callbacksOfDeleted],
      callbacksAdded: [...this.#callbacksAdded.values()],
      listenersDeleted: [...this.#listenersDeleted],
      listenersAdded: [...this.#listenersAdded.values()],
      executesDeleted: [...this.#executesDeleted],
      outbox: [...this.#outbox.values()],
      schedules: [...this.#schedules.values()].map((row) => ({ row, insert: cache.schedules.get(row.id) === null })),
      schedulesDeleted: [...this.#schedulesDeleted].filter((id) => cache.schedules.get(id) != null),
    };
  }
}
