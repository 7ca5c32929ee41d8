import { InvalidTransactionError } from "@belay/contract";
import type { UndoLog } from "./undo-log.js";

type Write = (undo: UndoLog) => Promise<unknown>;
const BRAND = Symbol.for("@belay/memory/transaction");

/**
 * A transaction of a {@link MemoryStore}, passed as `tx` to `enqueue` and `enqueueWorkflow`.
 * Its jobs are invisible to everyone until `commit()`, which writes them all atomically;
 * `rollback()` discards them. A finished transaction is rejected with `InvalidTransactionError`.
 *
 * @example
 * ```ts
 * const tx = store.beginTransaction();
 * await store.enqueue({ jobs: [job], now, tx });
 * await tx.commit();
 * ```
 */
export class MemoryTransaction {
  readonly [BRAND] = true;
  /** @internal The writes to replay at commit. */
  readonly writes: Write[] = [];
  #status: "open" | "committed" | "rolledBack" = "open";
  readonly #owner: object;
  readonly #commit: (writes: readonly Write[]) => Promise<void>;

  /** @internal Created by `MemoryStore.beginTransaction()`. */
  constructor(owner: object, commit: (writes: readonly Write[]) => Promise<void>) {
    this.#owner = owner;
    this.#commit = commit;
  }

  get status(): "open" | "committed" | "rolledBack" {
    return this.#status;
  }

  /** Writes every job enqueued in this transaction, all or nothing. */
  async commit(): Promise<void> {
    this.#assertOpen();
    this.#status = "committed";
    await this.#commit(this.writes);
  }

  /** Discards every job enqueued in this transaction. */
  async rollback(): Promise<void> {
    this.#assertOpen();
    this.#status = "rolledBack";
    this.writes.length = 0;
  }

  #assertOpen(): void {
    if (this.#status !== "open") throw new InvalidTransactionError(`the transaction is already ${this.#status}`);
  }

  /** @internal The transaction `tx` is, if it is an open one of `owner`; throws otherwise. */
  static assertUsable(tx: unknown, owner: object): MemoryTransaction {
    if (typeof tx !== "object" || tx === null || !(BRAND in tx)) {
      throw new InvalidTransactionError("not a MemoryTransaction (use store.beginTransaction())");
    }
    const transaction = tx as MemoryTransaction;
    if (transaction.#owner !== owner) throw new InvalidTransactionError("the transaction belongs to a different store");
    transaction.#assertOpen();
    return transaction;
  }

  /** @internal A buffered write can no longer be applied at commit (e.g. its parent was purged). */
  static conflict(result: unknown): never {
    throw new InvalidTransactionError(`a write of the transaction no longer applies: ${JSON.stringify(result)}`);
  }
}
