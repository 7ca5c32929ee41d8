import {
  type EnqueueRequest, type EnqueueResult, type EnqueueWorkflowRequest, type EnqueueWorkflowResult, type HintListener, type Instant,
  type JobStoreOperations, type MigrateResult, type OperationAnswer, type OperationName, type OperationRequest,
  type PurgeTerminalRequest, type PurgeTerminalResult, type StepHook, type StoreCapabilities, defineOperations,
} from "@belay/contract";
import type { LoggedTransition } from "./memory-store.js";
import type { ResolvedMemoryStoreOptions } from "./memory-store-config.js";
import type { MemoryTransaction } from "./memory-transaction.js";
import { listAuditRecords } from "./ops/audit.js";
import { claim } from "./ops/claim.js";
import { enqueue } from "./ops/enqueue.js";
import { expireLeases, heartbeat, release } from "./ops/leases.js";
import { acquireMaintainerLease, releaseMaintainerLease } from "./ops/maintainer.js";
import {
  claimObserverDeliveries, getObserver, listObserverDeadLetters, listObservers, registerObserver, removeObserver,
  reportObserverDeliveries,
} from "./ops/observers.js";
import { cancelJob, listQueueSettings, pauseQueue, requeueJob, resumeQueue, setConcurrencyLimit } from "./ops/operator.js";
import { reportOutcomes } from "./ops/outcomes.js";
import { countJobs, getDependencies, getJob, getJobHistory, getJobOutput, listJobs } from "./ops/reads.js";
import { compactLog, purgeTerminal } from "./ops/retention.js";
import { getSchedule, listSchedules, mintDue, removeSchedule, triggerSchedule, upsertSchedule } from "./ops/schedules.js";
import { facetTags, suggestTags } from "./ops/tags.js";
import { enqueueWorkflow, getWorkflow, listWorkflows } from "./ops/workflows.js";
import { MemoryState } from "./state.js";
import { TransactionRunner, type Write } from "./transaction-runner.js";
import type { UndoLog } from "./undo-log.js";

/** The operations that are one write of an `ops/` function, under the write's undo log. */
const WRITES = {
  claim, reportOutcomes, heartbeat, release, expireLeases, upsertSchedule, removeSchedule, mintDue, triggerSchedule, cancelJob,
  requeueJob, pauseQueue, resumeQueue, setConcurrencyLimit, acquireMaintainerLease, releaseMaintainerLease, registerObserver,
  removeObserver, claimObserverDeliveries, reportObserverDeliveries,
} satisfies {
  readonly [K in OperationName]?: (state: MemoryState, undo: UndoLog, request: OperationRequest<K>) => OperationAnswer<K> | Promise<OperationAnswer<K>>;
};

/** The operations that are one read of an `ops/` function, of the committed state. */
const READS = {
  listSchedules, getSchedule, listAuditRecords, getJob, getJobOutput, getJobHistory, listJobs, countJobs, listQueueSettings,
  getDependencies, facetTags, suggestTags, getWorkflow, listWorkflows, getObserver, listObservers, listObserverDeadLetters,
} satisfies { readonly [K in OperationName]?: (state: MemoryState, argument: Exclude<OperationRequest<K>, undefined>) => OperationAnswer<K> };

// The operations of WRITES and READS are defined from them, in the class's static block.
export interface MemoryOperations extends Pick<JobStoreOperations, keyof typeof WRITES | keyof typeof READS> {}

/**
 * The memory store's operations behind the checked front: each one is a read or a write of the
 * {@link TransactionRunner} around one call into `ops/`. Requests arrive checked, so nothing
 * here validates what the front already has.
 */
export class MemoryOperations implements JobStoreOperations {
  readonly capabilities: StoreCapabilities;
  readonly #state: MemoryState;
  readonly #runner: TransactionRunner;

  constructor(options: ResolvedMemoryStoreOptions) {
    this.#state = new MemoryState(options.bounds, options.historyPolicy);
    this.#runner = new TransactionRunner(this.#state);
    this.capabilities = Object.freeze({
      name: "memory",
      transactionalEnqueue: true,
      enqueueThrough: false,
      stepHook: true,
      wakeUpHints: options.wakeUpHints,
      bounds: options.bounds,
      historyPolicy: options.historyPolicy,
    });
  }

  static {
    defineOperations<MemoryOperations, (state: MemoryState, undo: UndoLog, request: never) => unknown>(this, WRITES, (name, op) =>
      function (this: MemoryOperations, request: never) {
        return this.#runner.write(name, (undo) => op(this.#state, undo, request));
      });
    defineOperations<MemoryOperations, (state: MemoryState, argument: never) => unknown>(this, READS, (_name, op) =>
      function (this: MemoryOperations, argument: never) {
        return this.#runner.read(() => op(this.#state, argument));
      });
  }

  async migrate(): Promise<MigrateResult> {
    this.#runner.assertOpen();
    return { fromVersion: 1, toVersion: 1 };
  }

  async close(): Promise<void> {
    this.#runner.close();
  }

  enqueue(request: EnqueueRequest): Promise<readonly EnqueueResult[]> {
    const write: Write<EnqueueResult[]> = (undo) => enqueue(this.#state, undo, request);
    if (request.tx === undefined) return this.#runner.write("enqueue", write);
    return this.#runner.inTransaction(request.tx, write, (results) => !results.some((r) => r.status === "rejected"));
  }

  enqueueWorkflow(request: EnqueueWorkflowRequest): Promise<EnqueueWorkflowResult> {
    const write: Write<EnqueueWorkflowResult> = (undo) => enqueueWorkflow(this.#state, undo, request);
    if (request.tx === undefined) return this.#runner.write("enqueueWorkflow", write);
    return this.#runner.inTransaction(request.tx, write, (result) => result.status === "created");
  }

  async purgeTerminal(request: PurgeTerminalRequest): Promise<PurgeTerminalResult> {
    const result = await this.#runner.write("purgeTerminal", (undo) => purgeTerminal(this.#state, undo, request));
    if (result.purged > 0) await this.#runner.read(() => compactLog(this.#state));
    return result;
  }

  // ---- capabilities and extras (see MemoryStore) ---------------------------------------------

  subscribeHints(listener: HintListener): () => void {
    return this.#runner.subscribeHints(listener);
  }

  setStepHook(hook: StepHook | null): void {
    this.#runner.setStepHook(hook);
  }

  beginTransaction(): MemoryTransaction {
    return this.#runner.beginTransaction();
  }

  transitionsAfter(position: number): Promise<readonly LoggedTransition[]> {
    return this.#runner.read(() => {
      const { log } = this.#state;
      // The log is in position order (compaction only removes entries): find the first one after.
      let lo = 0;
      let hi = log.length;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if (log[mid]!.position <= position) lo = mid + 1;
        else hi = mid;
      }
      return log.slice(lo).map(({ dropped: _dropped, ...entry }) => entry);
    });
  }

  nextActivityAt(): Promise<Instant | null> {
    return this.#runner.read(() => {
      let next: Instant | null = null;
      for (const indexes of [this.#state.due, this.#state.leases]) {
        for (const index of indexes.values()) {
          const first = index.first();
          if (first !== undefined && (next === null || first.at < next)) next = first.at;
        }
      }
      return next;
    });
  }
}
