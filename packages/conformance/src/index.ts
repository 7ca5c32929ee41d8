/**
 * `@belay/conformance` — the Storage Contract as an executable vitest suite. An adapter proves
 * itself with one call to {@link runStoreConformance} from a test file; a bridge that enqueues
 * inside an application's own transactions, with {@link runTransactionalEnqueueConformance}; a
 * promise store (the Promise Store Contract), with {@link runPromiseStoreConformance}.
 */
export { runStoreConformance } from "./run-store-conformance.js";
export { runPromiseStoreConformance } from "./promises/run-promise-store-conformance.js";
export { promiseLifecycleSmoke } from "./promises/smoke.js";
export type {
  PromiseStoreConformanceOptions,
  CreatePromiseStoreOptions,
  PromiseConformanceHooks,
  PromiseSuiteContext,
} from "./promises/suite-context.js";
export { runTransactionalEnqueueConformance } from "./run-transactional-enqueue-conformance.js";
export type {
  TransactionalEnqueueConformanceOptions,
  TransactionalEnqueueFixture,
  TransactionalJob,
  TransactionalReceipt,
  TransactionalWorkflow,
  TransactionalSuiteContext,
} from "./run-transactional-enqueue-conformance.js";
export type {
  StoreConformanceOptions,
  CreateStoreOptions,
  ConformanceHooks,
  ConformanceTransaction,
  TransientProvocation,
  SuiteContext,
} from "./suite-context.js";
export { snapshot } from "./snapshot.js";
export { postgresTarget, randomSchemaName } from "./postgres-target.js";
export type { PostgresTarget, PostgresTargetOptions } from "./postgres-target.js";
export { T0, newJob } from "./fixtures.js";
export { InjectedFault } from "./injected-fault.js";
export type { ConformanceErrorCode } from "./injected-fault.js";
// The torture suite: seeded client processes racing every operation on a real database, a
// drain, and an audit of the end state against every client's journal.
export { runTorture, formatTortureReport } from "./torture/run-torture.js";
export type { TortureRunOptions, TortureReport, TortureClientHandle } from "./torture/run-torture.js";
export { runTortureClient } from "./torture/client.js";
export { tortureSettings, DEFAULT_TORTURE_MS } from "./torture/plan.js";
export type { TortureSettings, TortureClientConfig } from "./torture/plan.js";
export type { Violation } from "./torture/audit-journals.js";
export { SABOTAGE_CHECKS } from "./torture/sabotage.js";
export type { TortureSabotage } from "./torture/sabotage.js";
