import type { JobStoreOperations } from "./checked-store.js";

/**
 * The operations a store may hand, one to one, to a function of its own context: `claim(request)`
 * becomes `claim(ctx, request)`, run once the store is open. Not among them: `enqueue` (a store
 * may batch or route it), the lifecycle (`migrate`, `close`) and the optional hooks
 * (`subscribeHints`, `setStepHook`), which each store writes itself.
 */
export const DELEGATED_OPERATIONS = [
  // enqueue
  "enqueueWorkflow", "enqueueThrough", "enqueueWorkflowThrough",
  // execution
  "claim", "reportOutcomes", "heartbeat", "release", "expireLeases",
  // schedules
  "upsertSchedule", "removeSchedule", "listSchedules", "getSchedule", "mintDue", "triggerSchedule",
  // operator actions
  "cancelJob", "requeueJob", "pauseQueue", "resumeQueue", "setConcurrencyLimit", "listAuditRecords",
  // monitoring reads
  "getJob", "getJobOutput", "getJobHistory", "listJobs", "countJobs", "listQueueSettings", "getDependencies", "facetTags", "suggestTags",
  // workflows and retention
  "getWorkflow", "listWorkflows", "purgeTerminal",
  // the maintainer lease
  "acquireMaintainerLease", "releaseMaintainerLease",
  // observers
  "registerObserver", "removeObserver", "claimObserverDeliveries", "reportObserverDeliveries", "getObserver", "listObservers", "listObserverDeadLetters",
] as const satisfies readonly (keyof JobStoreOperations)[];

export type DelegatedOperationName = (typeof DELEGATED_OPERATIONS)[number];

/** Every operation of the contract, by name: all of {@link JobStoreOperations} but `capabilities`. */
export type OperationName = Exclude<keyof JobStoreOperations, "capabilities">;

/** The request (the first argument) of operation `K`; `undefined` for one that takes none. */
export type OperationRequest<K extends OperationName> = Parameters<NonNullable<JobStoreOperations[K]>>[0];

/** What operation `K` resolves to. */
export type OperationAnswer<K extends OperationName> = Awaited<ReturnType<NonNullable<JobStoreOperations[K]>>>;

/** The delegated operations, as the store offers them to its checked front. */
export type DelegatedOperations = Required<Pick<JobStoreOperations, DelegatedOperationName>>;

/**
 * Each delegated operation as a function of a store's context `Ctx`: the operation's own
 * arguments after the context, none optional (the front passes an optional page request as `{}`). A store's operation modules (`sql/claim.ts`, `sql/reads.ts`, …)
 * export their functions under the operations' names, so the modules spread together make one.
 */
export type OperationFunctions<Ctx> = {
  readonly [K in DelegatedOperationName]: DelegatedOperations[K] extends (...args: infer A) => infer R ? (ctx: Ctx, ...args: Required<A>) => R : never;
};

// The class declares the delegated operations through this interface; its constructor defines them.
export interface DelegatingOperations<Ctx> extends DelegatedOperations {}

/**
 * A base for a store's operations whose delegated operations (see {@link DELEGATED_OPERATIONS})
 * are each one function of the store's context: it defines every one of them as
 * `(...args) => this.run((ctx) => functions[name](ctx, ...args))`, so the store writes only
 * `run` (open the store, check its schema, hand over the context) and the other operations.
 */
export abstract class DelegatingOperations<Ctx> {
  constructor(functions: OperationFunctions<Ctx>) {
    const self = this as unknown as Record<DelegatedOperationName, (...args: unknown[]) => Promise<unknown>>;
    for (const name of DELEGATED_OPERATIONS) {
      const operation = functions[name] as (ctx: Ctx, ...args: unknown[]) => Promise<unknown>;
      self[name] = (...args) => this.run((ctx) => operation(ctx, ...args));
    }
  }

  /** Runs one operation on the store's context, once the store is open and its schema checked. */
  protected abstract run<T>(operation: (ctx: Ctx) => Promise<T>): Promise<T>;
}

/**
 * Defines on `target`'s prototype one method per entry of `table`, made by `method(name, entry)`:
 * for a class whose operations are each the same call around an entry of a table (the checked
 * front's check, a store's function of its state). Each is what a method written in the class
 * body would be — on the prototype, not enumerable, named, overridable by a subclass — so the
 * class declares them through an interface of the same name. Call it from the class's `static`
 * block: methods made there may read the class's private fields.
 */
export function defineOperations<This, Entry>(
  target: abstract new (...args: never[]) => This,
  table: { readonly [name: string]: Entry },
  method: (name: string, entry: Entry) => (this: This, ...args: never[]) => unknown,
): void {
  for (const [name, entry] of Object.entries(table)) {
    const value = method(name, entry);
    Object.defineProperty(value, "name", { value: name });
    Object.defineProperty(target.prototype, name, { value, writable: true, configurable: true });
  }
}
