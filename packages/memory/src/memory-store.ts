import { CheckedJobStore, type Instant, type TransitionRecord } from "@belay/contract";
import { MemoryOperations } from "./memory-operations.js";
import { type MemoryStoreOptions, resolveMemoryStoreOptions } from "./memory-store-config.js";
import type { MemoryTransaction } from "./memory-transaction.js";

/** One entry of the store-wide transition log, with the job's name and queue. */
export interface LoggedTransition extends TransitionRecord {
  readonly jobName: string;
  readonly queue: string;
}

/**
 * The in-memory reference store: every operation of the Storage Contract on plain data
 * structures, deterministic (no clock, no randomness, stable iteration order), with time-ordered
 * indexes for due jobs, leases and terminal jobs so its costs do not grow with finished jobs.
 * For tests, local development and the simulator — never production: nothing survives the
 * process.
 *
 * Capabilities: transactional enqueue (`beginTransaction()`), the step hook (`setStepHook`),
 * and wake-up hints (`subscribeHints`) when constructed with `wakeUpHints: true`; no
 * `enqueueThrough` (there is no other driver's transaction to join).
 */
export class MemoryStore extends CheckedJobStore<MemoryOperations> {
  /**
   * A new, empty store. Throws `InvalidInputError` for a bound or history policy it cannot use.
   *
   * @example
   * ```ts
   * const store = new MemoryStore();
   * await store.migrate();
   * await store.enqueue({
   *   jobs: [{ id: "j1", jobName: "email.send", queue: "default", payload: "{}", dueAt: 0 }],
   *   now: 0,
   * });
   * const { jobs } = await store.claim({ workerId: "w1", queues: ["default"], max: 10, leaseMs: 60_000, now: 0 });
   * ```
   */
  constructor(options: MemoryStoreOptions = {}) {
    super(new MemoryOperations(resolveMemoryStoreOptions(options)));
  }

  /** Opens a transaction for `enqueue`/`enqueueWorkflow` (`tx`); its jobs exist once it commits. */
  beginTransaction(): MemoryTransaction {
    return this.operations.beginTransaction();
  }

  /**
   * The earliest instant after which something will change on its own: a scheduled job falling
   * due or a lease expiring. `null` when nothing is pending. For virtual-time harnesses.
   */
  nextActivityAt(): Promise<Instant | null> {
    return this.operations.nextActivityAt();
  }

  /**
   * Every transition committed after `position`, in commit order (the store-wide log observers
   * walk), with entries already capped away or purged left out once the log is compacted. For
   * simulators that check every transition; not part of the Storage Contract.
   */
  transitionsAfter(position: number): Promise<readonly LoggedTransition[]> {
    return this.operations.transitionsAfter(position);
  }
}
