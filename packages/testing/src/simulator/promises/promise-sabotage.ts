import {
  CheckedPromiseStore, type Instant, type PromiseRequest, type PromiseResponse, type LoadedRows, type PromiseBackend,
  type PromiseEffects, type PromiseReader, type PromiseStore, type PromiseTransaction, type StepHook,
} from "@belay/contract";
import { MemoryPromiseStore } from "@belay/memory";
import type { SabotageName } from "../sabotage.js";

/** The memory promise store's backend, reached through the front's protected field. */
class ExposedMemoryPromiseStore extends MemoryPromiseStore {
  get exposedBackend(): PromiseBackend {
    return this.backend;
  }
}

/**
 * A backend around the memory store's, with one deliberate bug under a sabotage switch — in the
 * loads it answers the promise machine with, the effects it writes, or the scans it runs — so
 * the rules (`PromiseMachine`, written once) decide over a store that breaks the contract.
 */
class SabotagedBackend implements PromiseBackend {
  readonly #inner: PromiseBackend;
  readonly #sabotage: SabotageName;

  constructor(inner: PromiseBackend, sabotage: SabotageName) {
    this.#inner = inner;
    this.#sabotage = sabotage;
  }

  get name(): string {
    return this.#inner.name;
  }

  get stepHook(): boolean {
    return this.#inner.stepHook;
  }

  migrate() {
    return this.#inner.migrate();
  }

  close() {
    return this.#inner.close();
  }

  ping() {
    return this.#inner.ping();
  }

  subscribeOutbox(listener: () => void) {
    return this.#inner.subscribeOutbox(listener);
  }

  read<T>(work: (reader: PromiseReader) => Promise<T>): Promise<T> {
    return this.#inner.read(work);
  }

  setStepHook(hook: StepHook | null): void {
    this.#inner.setStepHook?.(hook);
  }

  transact<T>(operation: string, work: (tx: PromiseTransaction) => Promise<T>): Promise<T> {
    return this.#inner.transact(operation, (tx) => work(this.#wrap(tx, operation)));
  }

  #wrap(tx: PromiseTransaction, operation: string): PromiseTransaction {
    const sabotage = this.#sabotage;
    return {
      ...tx,
      load: async (keys) => {
        const rows: LoadedRows = await tx.load(keys);
        if (sabotage === "staleSettleRead" && operation === "promise.settle") {
          return {
            ...rows,
            promises: rows.promises.map((p) => (p.promise && p.promise.state !== "pending" ? { ...p, promise: { ...p.promise, state: "pending" as const, settledAt: null, value: {} } } : p)),
          };
        }
        if (sabotage === "settleForgetsAwaiters") return { ...rows, awaiters: rows.awaiters.map((a) => ({ ...a, awaiters: [] })) };
        return rows;
      },
      apply: async (effects: PromiseEffects) => {
        let tasks = effects.tasks;
        if (sabotage === "acquireKeepsVersion" && operation === "task.acquire") {
          tasks = tasks.map((t) => (t.row.state === "acquired" ? { ...t, row: { ...t.row, version: t.row.version - 1 } } : t));
        }
        if (sabotage === "noRetryTimer") tasks = tasks.map((t) => (t.row.state === "pending" ? { ...t, row: { ...t.row, timerAt: null } } : t));
        return tx.apply({ ...effects, tasks });
      },
      dueTimers: async (now, max) => {
        const due = await tx.dueTimers(now, max);
        return sabotage === "scanSkipsDeadlines" ? { ...due, promises: [] } : due;
      },
      step: (name) => tx.step(name),
      takeOutbox: (now, max, until, filter) => tx.takeOutbox(now, max, until, filter),
      acknowledgeOutbox: (rows) => tx.acknowledgeOutbox(rows),
      releaseOutbox: (rows, at) => tx.releaseOutbox(rows, at),
      reset: () => tx.reset(),
    };
  }
}

/** A memory promise store, with `sabotage`'s bug in its backend (or its front) when one is given. */
export function simPromiseStore(sabotage: SabotageName | null, settings: { readonly retryTimeoutMs: number }): PromiseStore {
  if (sabotage === null) return new MemoryPromiseStore({ settings });
  if (sabotage === "staleFulfillApplied" || sabotage === "heartbeatIgnoresFence") {
    // Bugs of the front: a refused request sent again as the current holder would send it.
    const store = new MemoryPromiseStore({ settings });
    const handle = store.handle.bind(store);
    store.handle = async <R extends PromiseRequest>(request: R, now: Instant): Promise<PromiseResponse<R>> => {
      const response = await handle(request, now);
      if (sabotage === "staleFulfillApplied") {
        if (request.kind !== "task.fulfill" || response.status !== 409) return response;
        const task = (await store.snapshot(now)).tasks.find((t) => t.id === request.id);
        if (task?.state !== "acquired" || task.version === request.version) return response;
        return handle({ ...request, version: task.version }, now);
      }
      if (request.kind !== "task.heartbeat") return response;
      const { tasks } = await store.snapshot(now);
      for (const sent of request.tasks) {
        const task = tasks.find((t) => t.id === sent.id);
        if (task?.state !== "acquired" || (task.pid === request.pid && task.version === sent.version)) continue;
        await handle({ kind: "task.heartbeat", pid: task.pid!, tasks: [{ id: task.id, version: task.version }] }, now);
      }
      return response;
    };
    return store;
  }
  const exposed = new ExposedMemoryPromiseStore();
  return new CheckedPromiseStore(new SabotagedBackend(exposed.exposedBackend, sabotage), { settings });
}
