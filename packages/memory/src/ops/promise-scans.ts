import { type Instant, type OutboxFilter, type OutboxRef, type OutboxRow, type PromisePageQuery, type PromiseReader, type TaskPageQuery, outboxAccepts } from "@belay/contract";
import { PromiseState } from "../promise-state.js";
import type { UndoLog } from "../undo-log.js";

const byId = <T extends { readonly id: string }>(a: T, b: T) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/** Due deadlines and task timers at `now`, earliest first. */
export function dueTimers(state: PromiseState, now: Instant, max: number): { promises: string[]; tasks: string[] } {
  return { promises: state.deadlines.due(now, max), tasks: state.taskTimers.due(now, max) };
}

/** Takes outbox rows available at `now` that pass `filter`, hiding each until `until` at a new revision. */
export function takeOutbox(state: PromiseState, undo: UndoLog, now: Instant, max: number, until: Instant, filter: OutboxFilter | null): OutboxRow[] {
  const taken: OutboxRow[] = [];
  for (const entry of state.outboxTimers.index.upTo(now)) {
    if (taken.length >= max) break;
    const row = state.outbox.get(entry.id)!;
    if (!outboxAccepts(filter, row.address)) continue;
    taken.push(row);
  }
  return taken.map((row) => {
    const next = { ...row, availableAt: until, revision: state.nextRevision(undo), takes: row.takes + 1 } as OutboxRow;
    state.putOutbox(undo, next);
    return next;
  });
}

/** Deletes outbox rows still at the revision of their take. */
export function acknowledgeOutbox(state: PromiseState, undo: UndoLog, rows: readonly OutboxRef[]): void {
  for (const { kind, id, address, revision } of rows) {
    const key = PromiseState.outboxKey(kind, id, address);
    if (state.outbox.get(key)?.revision === revision) state.deleteOutbox(undo, key);
  }
}

/** Makes outbox rows still at the revision of their take available again at `at`. */
export function releaseOutbox(state: PromiseState, undo: UndoLog, rows: readonly OutboxRef[], at: Instant): void {
  for (const { kind, id, address, revision } of rows) {
    const row = state.outbox.get(PromiseState.outboxKey(kind, id, address));
    if (row?.revision === revision) state.putOutbox(undo, { ...row, availableAt: at, revision: state.nextRevision(undo) } as OutboxRow);
  }
}

/** The read-only queries, over the state as it stands (the caller holds the store's lock). */
export function promiseReader(state: PromiseState): PromiseReader {
  return {
    async promisePage(query: PromisePageQuery) {
      const matches = [...state.promises.values()]
        .filter((row) => query.after === null || row.id > query.after)
        .filter((row) => query.prefix === null || row.id.startsWith(query.prefix))
        .filter((row) => Object.entries(query.tags).every(([key, value]) => row.tags[key] === value))
        .filter(
          (row) =>
            query.states === null ||
            query.states.includes(row.state) ||
            (query.expiredBy !== null && row.state === "pending" && row.timeoutAt <= query.expiredBy),
        )
        .sort(byId);
      return matches.slice(0, query.limit);
    },
    async taskPage(query: TaskPageQuery) {
      const expired = (id: string) => {
        const promise = state.promises.get(id);
        return promise !== undefined && promise.state === "pending" && promise.timeoutAt <= query.now;
      };
      return [...state.tasks.values()]
        .filter((row) => query.after === null || row.id > query.after)
        .filter((row) => query.states === null || query.states.includes(row.state) || (query.states.includes("fulfilled") && expired(row.id)))
        .sort(byId)
        .slice(0, query.limit)
        .map((task) => ({ task, promise: state.promises.get(task.id) ?? null }));
    },
    async schedulePage(query) {
      return [...state.schedules.values()]
        .filter((row) => query.after === null || row.id > query.after)
        .filter((row) => Object.entries(query.tags).every(([key, value]) => row.promiseTags[key] === value))
        .sort(byId)
        .slice(0, query.limit);
    },
    async describe(id: string) {
      const promise = state.promises.get(id);
      if (promise === undefined) return null;
      const outbox = [...state.outbox.values()].filter((row) => row.id === id);
      return {
        promise,
        task: state.tasks.get(id) ?? null,
        awaiters: [...(state.callbacksOn.get(id) ?? [])],
        awaiting: [...(state.callbacksOf.get(id) ?? [])],
        listeners: [...(state.listeners.get(id) ?? [])],
        outbox,
      };
    },
    async dueSchedules(now: Instant, max: number) {
      return state.scheduleTimers.due(now, max).map((id) => state.schedules.get(id)!);
    },
    async everything() {
      const callbacks = [...state.callbacksOn].flatMap(([awaited, awaiters]) => [...awaiters].map((awaiter) => ({ awaited, awaiter })));
      const listeners = [...state.listeners].flatMap(([promiseId, addresses]) => [...addresses].map((address) => ({ promiseId, address })));
      return {
        promises: [...state.promises.values()],
        tasks: [...state.tasks.values()],
        callbacks,
        listeners,
        schedules: [...state.schedules.values()],
        outbox: [...state.outbox.values()],
      };
    },
  };
}
