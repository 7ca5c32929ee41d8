import type { LoadedRows, PromiseEffects, RowKey } from "@belay/contract";
import { PromiseState } from "../promise-state.js";
import type { UndoLog } from "../undo-log.js";

/** Reads the rows of `keys` (the memory store holds its lock for the whole operation: nothing to lock). */
export function loadPromiseRows(state: PromiseState, keys: readonly RowKey[]): LoadedRows {
  const promises: { id: string; promise: ReturnType<PromiseState["promises"]["get"]> | null; task: ReturnType<PromiseState["tasks"]["get"]> | null }[] = [];
  const awaiters: LoadedRows["awaiters"][number][] = [];
  const listeners: LoadedRows["listeners"][number][] = [];
  const branches: LoadedRows["branches"][number][] = [];
  const schedules: LoadedRows["schedules"][number][] = [];
  const promise = (id: string) => promises.push({ id, promise: state.promises.get(id) ?? null, task: state.tasks.get(id) ?? null });
  for (const key of keys) {
    switch (key.kind) {
      case "promise":
        promise(key.id);
        break;
      case "awaiters": {
        const ids = [...(state.callbacksOn.get(key.promiseId) ?? [])].sort();
        awaiters.push({ promiseId: key.promiseId, awaiters: ids });
        for (const id of ids) promise(id);
        break;
      }
      case "listeners":
        listeners.push({ promiseId: key.promiseId, addresses: [...(state.listeners.get(key.promiseId) ?? [])].sort() });
        break;
      case "branch":
        branches.push({ branch: key.branch, promises: [...(state.branches.get(key.branch) ?? [])].map((id) => state.promises.get(id)!).filter(Boolean) });
        break;
      case "branchOf": {
        const branch = state.promises.get(key.id)?.tags["resonate:branch"];
        if (branch !== undefined) branches.push({ branch, promises: [...(state.branches.get(branch) ?? [])].map((id) => state.promises.get(id)!).filter(Boolean) });
        break;
      }
      case "schedule":
        schedules.push({ id: key.id, schedule: state.schedules.get(key.id) ?? null });
        break;
    }
  }
  return { promises: promises as LoadedRows["promises"], awaiters, listeners, branches, schedules };
}

/** Writes an operation's effects: deletions first, then rows (see `PromiseEffects`). */
export async function applyPromiseEffects(state: PromiseState, undo: UndoLog, effects: PromiseEffects): Promise<boolean> {
  for (const id of effects.callbacksOnDeleted) state.deleteCallbacksOn(undo, id);
  for (const id of effects.callbacksOfDeleted) state.deleteCallbacksOf(undo, id);
  for (const id of effects.listenersDeleted) state.deleteListeners(undo, id);
  for (const id of effects.executesDeleted) state.deleteOutbox(undo, PromiseState.outboxKey("execute", id, ""));
  for (const id of effects.schedulesDeleted) state.deleteSchedule(undo, id);
  await undo.step("deletions written");
  for (const { row } of effects.promises) state.putPromise(undo, row);
  for (const { row } of effects.tasks) state.putTask(undo, row);
  await undo.step("promises and tasks written");
  for (const { awaited, awaiter } of effects.callbacksAdded) state.addCallback(undo, awaited, awaiter);
  for (const { promiseId, address } of effects.listenersAdded) state.addListener(undo, promiseId, address);
  let wroteOutbox = false;
  for (const write of effects.outbox) {
    const key = PromiseState.outboxKey(write.kind, write.id, write.address);
    // An `unblock` is written once per (promise, address); an `execute` replaces the task's entry.
    if (write.kind === "unblock" && state.outbox.has(key)) continue;
    const revision = state.nextRevision(undo);
    const fresh = { revision, createdAt: write.availableAt, takes: 0 };
    state.putOutbox(undo, write.kind === "execute" ? { ...write, ...fresh } : { ...write, version: 0, ...fresh });
    wroteOutbox = true;
  }
  for (const { row } of effects.schedules) state.putSchedule(undo, row);
  await undo.step("callbacks, listeners, outbox and schedules written");
  return wroteOutbox;
}
