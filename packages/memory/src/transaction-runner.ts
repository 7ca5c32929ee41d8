import { type EnqueueResult, type EnqueueWorkflowResult, type HintListener, Mutex, type StepHook, StoreClosedError } from "@belay/contract";
import { MemoryTransaction } from "./memory-transaction.js";
import type { MemoryState } from "./state.js";
import { UndoLog } from "./undo-log.js";

/** A write that can be replayed: what a caller's transaction buffers until it commits. */
export type Write<T> = (undo: UndoLog) => Promise<T>;

/**
 * How the memory store runs its calls. Every call takes one lock, so a write parked by the step
 * hook holds back every later call, as a database's locks would. Every write goes through an
 * undo log that anything thrown rolls back, and wake-up hints go out only once it has committed.
 * A caller's transaction (`MemoryTransaction`) buffers its writes and replays them at commit.
 */
export class TransactionRunner {
  readonly #state: MemoryState;
  readonly #mutex = new Mutex();
  readonly #hintListeners = new Set<HintListener>();
  #hook: StepHook | null = null;
  #closed = false;

  constructor(state: MemoryState) {
    this.#state = state;
  }

  /** Refuses every later call with `StoreClosedError`. */
  close(): void {
    this.#closed = true;
  }

  /** Throws `StoreClosedError` once closed. */
  assertOpen(): void {
    if (this.#closed) throw new StoreClosedError();
  }

  /** Runs a write under the lock; anything it throws undoes all its mutations. */
  async write<T>(operation: string, body: (undo: UndoLog) => T | Promise<T>): Promise<T> {
    this.assertOpen();
    return this.#mutex.run(async () => {
      const undo = new UndoLog(operation, this.#hook);
      try {
        const result = await body(undo);
        await undo.step("commit");
        this.#emitHints();
        return result;
      } catch (error) {
        undo.rollback();
        this.#state.dueQueues.clear();
        throw error;
      }
    });
  }

  /** Runs a read under the lock, so it sees only committed writes. */
  async read<T>(body: () => T): Promise<T> {
    this.assertOpen();
    return this.#mutex.run(body);
  }

  /**
   * Runs a transactional write against the current state plus the transaction's earlier writes,
   * to compute its results, then undoes it all: a transaction's jobs stay invisible until commit,
   * which replays them for real. `keep` says whether the write joins the transaction.
   */
  async inTransaction<T>(tx: unknown, write: Write<T>, keep: (result: T) => boolean): Promise<T> {
    const transaction = MemoryTransaction.assertUsable(tx, this);
    return this.#mutex.run(async () => {
      const undo = new UndoLog("transaction", null);
      try {
        for (const earlier of transaction.writes) await earlier(undo);
        const result = await write(undo);
        if (keep(result)) transaction.writes.push(write);
        return result;
      } finally {
        undo.rollback();
        this.#state.dueQueues.clear();
      }
    });
  }

  /** Opens a caller's transaction on this store. */
  beginTransaction(): MemoryTransaction {
    this.assertOpen();
    return new MemoryTransaction(this, (writes) => this.#commit(writes));
  }

  /** Adds a hint listener; returns its removal. */
  subscribeHints(listener: HintListener): () => void {
    this.#hintListeners.add(listener);
    return () => void this.#hintListeners.delete(listener);
  }

  /** Installs (or, with `null`, removes) the hook the undo log calls at each step of a write. */
  setStepHook(hook: StepHook | null): void {
    this.#hook = hook;
  }

  /** Tells hint listeners about queues the committed write made due (lossy by contract). */
  #emitHints(): void {
    const queues = [...this.#state.dueQueues];
    this.#state.dueQueues.clear();
    for (const queue of queues) {
      for (const listener of this.#hintListeners) {
        try {
          listener(queue);
        } catch {
          // A failing listener must not fail the committed write.
        }
      }
    }
  }

  async #commit(writes: readonly Write<unknown>[]): Promise<void> {
    await this.write("commit", async (undo) => {
      for (const write of writes) {
        const result = await write(undo);
        const rejected = Array.isArray(result)
          ? result.some((r: EnqueueResult) => r.status === "rejected")
          : (result as EnqueueWorkflowResult).status === "rejected";
        if (rejected) MemoryTransaction.conflict(result);
      }
    });
  }
}
