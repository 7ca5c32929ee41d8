/**
 * `@belay/conformance` — the Storage Contract as an executable vitest suite. An adapter proves
 * itself with one call to {@link runStoreConformance} from a test file.
 */
export { runStoreConformance } from "./run-store-conformance.js";
export type {
  StoreConformanceOptions,
  CreateStoreOptions,
  ConformanceHooks,
  ConformanceTransaction,
  SuiteContext,
} from "./suite-context.js";
export { snapshot } from "./snapshot.js";
export { T0, newJob } from "./fixtures.js";
