import type * as contract from "./index.js";
import { CapabilityNotSupportedError, TransactionNotSupportedError } from "./errors.js";
import { requireId } from "./input.js";
import { type OperationName, type OperationRequest, defineOperations } from "./delegating-operations.js";
import type { HintListener, JobStore, StepHook, StoreCapabilities } from "./job-store.js";
import {
  assertAcquireMaintainerLeaseRequest, assertClaimObserverDeliveriesRequest, assertClaimRequest, assertEnqueueRequest,
  assertEnqueueWorkflowRequest, assertExpireLeasesRequest, assertFacetRequest, assertHeartbeatRequest, assertJobActionRequest,
  assertListAuditRequest, assertListJobsRequest, assertListWorkflowsRequest, assertLookupId, assertMintDueRequest,
  assertPurgeTerminalRequest, assertQueueActionRequest, assertRegisterObserverRequest, assertReleaseMaintainerLeaseRequest,
  assertReleaseRequest, assertReportObserverDeliveriesRequest, assertReportOutcomesRequest, assertSetConcurrencyLimitRequest,
  assertSuggestTagsRequest, assertTriggerScheduleRequest, assertUpsertScheduleRequest,
} from "./requests.js";

/**
 * The operations a store implements behind the checked front: the same signatures as
 * {@link JobStore}, but each receives a request the front has already checked (shape, types,
 * bounds of ids and queue names, `now`), so it only validates what needs its data (duplicates,
 * unknown parents, cursors it issued). Optional-page requests arrive as `{}`, never `undefined`.
 */
export type JobStoreOperations = JobStore;

/** The operations the front hands on after one check of their request: all but the optional capabilities. */
type ForwardedOperation = Exclude<OperationName, "subscribeHints" | "setStepHook" | "enqueueThrough" | "enqueueWorkflowThrough">;

/** The check of an operation's request, throwing for a malformed one; `null` for an operation that takes none. */
type RequestCheck<Request> = ((request: Exclude<Request, undefined>, bounds: Readonly<contract.Bounds>) => void) | null;

const lookup = (field: string) => (id: string) => assertLookupId(id, field);

/** Each forwarded operation's check — one per operation, the same for every store. */
const CHECKS: { readonly [K in ForwardedOperation]: RequestCheck<OperationRequest<K>> } = {
  migrate: null,
  close: null,
  enqueue: assertEnqueueRequest,
  enqueueWorkflow: assertEnqueueWorkflowRequest,
  claim: assertClaimRequest,
  reportOutcomes: assertReportOutcomesRequest,
  heartbeat: assertHeartbeatRequest,
  release: assertReleaseRequest,
  expireLeases: assertExpireLeasesRequest,
  upsertSchedule: assertUpsertScheduleRequest,
  removeSchedule: (request, bounds) => requireId(request?.scheduleId, "scheduleId", bounds),
  listSchedules: null,
  getSchedule: lookup("scheduleId"),
  mintDue: assertMintDueRequest,
  triggerSchedule: assertTriggerScheduleRequest,
  cancelJob: assertJobActionRequest,
  requeueJob: assertJobActionRequest,
  pauseQueue: assertQueueActionRequest,
  resumeQueue: assertQueueActionRequest,
  setConcurrencyLimit: assertSetConcurrencyLimitRequest,
  listAuditRecords: assertListAuditRequest,
  getJob: lookup("jobId"),
  getJobOutput: lookup("jobId"),
  getJobHistory: lookup("jobId"),
  listJobs: assertListJobsRequest,
  countJobs: null,
  listQueueSettings: null,
  getDependencies: lookup("jobId"),
  facetTags: assertFacetRequest,
  suggestTags: assertSuggestTagsRequest,
  getWorkflow: lookup("workflowId"),
  listWorkflows: assertListWorkflowsRequest,
  purgeTerminal: assertPurgeTerminalRequest,
  acquireMaintainerLease: assertAcquireMaintainerLeaseRequest,
  releaseMaintainerLease: assertReleaseMaintainerLeaseRequest,
  registerObserver: assertRegisterObserverRequest,
  removeObserver: (request, bounds) => requireId(request?.observerId, "observerId", bounds),
  claimObserverDeliveries: assertClaimObserverDeliveriesRequest,
  reportObserverDeliveries: assertReportObserverDeliveriesRequest,
  getObserver: lookup("observerId"),
  listObservers: null,
  listObserverDeadLetters: lookup("observerId"),
};

/** The operations whose request is an optional page: an omitted one is checked and handed on as `{}`. */
const PAGED: ReadonlySet<string> = new Set<ForwardedOperation>(["listAuditRecords", "listJobs", "listWorkflows"]);

// The forwarded operations are defined from CHECKS, in the class's static block, and declared
// here as the methods of JobStore (a Pick<> would declare them as properties, which a subclass
// could not override with a method calling super).
export interface CheckedJobStore<Operations extends JobStoreOperations = JobStoreOperations> extends JobStore {}

/**
 * The checked front of every store: each method runs the contract's check of its request —
 * one check per operation, the same for every store — then calls the store's own operation.
 * A store (built-in or third-party) extends it and hands its operations to the constructor:
 *
 * @example
 * ```ts
 * class MyStore extends CheckedJobStore {
 *   constructor(config: MyConfig) {
 *     super(new MyOperations(config)); // implements JobStoreOperations
 *   }
 * }
 * ```
 *
 * Optional capabilities pass through when the operations declare them (`capabilities.wakeUpHints`,
 * `enqueueThrough`, `stepHook`); otherwise their methods throw `CapabilityNotSupportedError`
 * (`TransactionNotSupportedError` for `enqueueThrough`), never ignoring the call.
 */
export class CheckedJobStore<Operations extends JobStoreOperations = JobStoreOperations> implements JobStore {
  readonly capabilities: StoreCapabilities;
  /** The unchecked operations this front guards. */
  protected readonly operations: Operations;
  readonly #bounds: Readonly<contract.Bounds>;

  constructor(operations: Operations) {
    this.operations = operations;
    this.capabilities = operations.capabilities;
    this.#bounds = operations.capabilities.bounds;
  }

  static {
    type Forward = (request?: unknown) => Promise<unknown>;
    defineOperations<CheckedJobStore, RequestCheck<never>>(this, CHECKS, (name, check) => {
      if (check === null) {
        return function (this: CheckedJobStore) {
          return (this.operations as unknown as Record<string, Forward>)[name]!();
        };
      }
      const paged = PAGED.has(name);
      // async: a refused request is a rejected promise, as from the store itself.
      return async function (this: CheckedJobStore, request: unknown) {
        const checked = paged && request === undefined ? {} : request;
        check(checked as never, this.#bounds);
        return (this.operations as unknown as Record<string, Forward>)[name]!(checked);
      };
    });
  }

  async enqueueThrough(executor: contract.QueryExecutor, request: contract.EnqueueThroughRequest): Promise<contract.EnqueuedThrough<readonly contract.EnqueueResult[]>> {
    const operations = this.#through();
    assertEnqueueRequest(request);
    return operations.enqueueThrough(executor, request);
  }

  async enqueueWorkflowThrough(
    executor: contract.QueryExecutor,
    request: contract.EnqueueWorkflowThroughRequest,
  ): Promise<contract.EnqueuedThrough<contract.EnqueueWorkflowResult>> {
    const operations = this.#through();
    assertEnqueueWorkflowRequest(request);
    return operations.enqueueWorkflowThrough(executor, request);
  }

  // ---- optional capabilities -----------------------------------------------------------------

  subscribeHints(listener: HintListener): () => void {
    const { subscribeHints } = this.operations;
    if (!this.capabilities.wakeUpHints || subscribeHints === undefined) {
      throw new CapabilityNotSupportedError(this.capabilities.name, "wakeUpHints");
    }
    if (typeof listener !== "function") throw new TypeError("subscribeHints needs a listener function");
    return subscribeHints.call(this.operations, listener);
  }

  setStepHook(hook: StepHook | null): void {
    const { setStepHook } = this.operations;
    if (!this.capabilities.stepHook || setStepHook === undefined) {
      throw new CapabilityNotSupportedError(this.capabilities.name, "stepHook");
    }
    setStepHook.call(this.operations, hook);
  }

  #through(): Required<Pick<JobStoreOperations, "enqueueThrough" | "enqueueWorkflowThrough">> {
    const { enqueueThrough, enqueueWorkflowThrough } = this.operations;
    if (!this.capabilities.enqueueThrough || enqueueThrough === undefined || enqueueWorkflowThrough === undefined) {
      throw new TransactionNotSupportedError(this.capabilities.name);
    }
    return {
      enqueueThrough: enqueueThrough.bind(this.operations),
      enqueueWorkflowThrough: enqueueWorkflowThrough.bind(this.operations),
    };
  }
}

/** The checked front over `operations`, for a store that needs no class of its own. */
export function checkedJobStore(operations: JobStoreOperations): JobStore {
  return new CheckedJobStore(operations);
}
