import {
  CheckedPromiseStore, Listeners, Mutex, type MigrateResult, type PromiseBackend, type PromiseFrontOptions, type PromiseReader,
  type PromiseTransaction, type StepHook, StoreClosedError,
} from "@belay/contract";
import { applyPromiseEffects, loadPromiseRows } from "./ops/promise-rows.js";
import { acknowledgeOutbox, dueTimers, promiseReader, releaseOutbox, takeOutbox } from "./ops/promise-scans.js";
import { PromiseState } from "./promise-state.js";
import { UndoLog } from "./undo-log.js";

/** The memory store's promise backend: one lock, plain maps, time indexes, an undo log per operation. */
class MemoryPromiseBackend implements PromiseBackend {
  readonly name = "memory";
  readonly stepHook = true;
  readonly #state = new PromiseState();
  readonly #mutex = new Mutex();
  readonly #outboxListeners = new Listeners();
  #hook: StepHook | null = null;
  #closed = false;

  async migrate(): Promise<MigrateResult> {
    this.#assertOpen();
    return { fromVersion: 1, toVersion: 1 };
  }

  async close(): Promise<void> {
    this.#closed = true;
  }

  setStepHook(hook: StepHook | null): void {
    this.#hook = hook;
  }

  transact<T>(operation: string, work: (tx: PromiseTransaction) => Promise<T>): Promise<T> {
    this.#assertOpen();
    return this.#mutex.run(async () => {
      const undo = new UndoLog(operation, this.#hook);
      const state = this.#state;
      let wroteOutbox = false;
      const tx: PromiseTransaction = {
        load: async (keys) => loadPromiseRows(state, keys),
        apply: async (effects) => {
          if (await applyPromiseEffects(state, undo, effects)) wroteOutbox = true;
        },
        step: (name) => undo.step(name),
        dueTimers: async (now, max) => dueTimers(state, now, max),
        takeOutbox: async (now, max, until, filter) => takeOutbox(state, undo, now, max, until, filter),
        acknowledgeOutbox: async (rows) => acknowledgeOutbox(state, undo, rows),
        releaseOutbox: async (rows, at) => {
          releaseOutbox(state, undo, rows, at);
          wroteOutbox = true;
        },
        reset: async () => state.clear(),
      };
      try {
        const result = await work(tx);
        await undo.step("commit");
        if (wroteOutbox) this.#outboxListeners.announce();
        return result;
      } catch (error) {
        undo.rollback();
        throw error;
      }
    });
  }

  async ping(): Promise<void> {
    this.#assertOpen();
  }

  subscribeOutbox(listener: () => void): () => void {
    this.#assertOpen();
    return this.#outboxListeners.subscribe(listener);
  }

  read<T>(work: (reader: PromiseReader) => Promise<T>): Promise<T> {
    this.#assertOpen();
    return this.#mutex.run(() => work(promiseReader(this.#state)));
  }

  #assertOpen(): void {
    if (this.#closed) throw new StoreClosedError();
  }
}

/**
 * The in-memory reference promise store: the Promise Store Contract on plain data structures,
 * deterministic, for tests and the simulator — never production (nothing survives the process).
 *
 * @example
 * ```ts
 * const promises = new MemoryPromiseStore();
 * await promises.migrate();
 * const { status, data } = await promises.handle({ kind: "promise.create", id: "p1", timeoutAt: 60_000 }, 0);
 * ```
 */
export class MemoryPromiseStore extends CheckedPromiseStore {
  constructor(options: PromiseFrontOptions = {}) {
    super(new MemoryPromiseBackend(), options);
  }
}
