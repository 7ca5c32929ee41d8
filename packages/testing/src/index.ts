/**
 * `@belay/testing` — run Belay jobs on virtual time against the in-memory store.
 */
export { createTestHarness, TestHarness, DEFAULT_START } from "./test-harness.js";
export type { TestHarnessOptions } from "./test-harness.js";
export { VirtualClock } from "./virtual-clock.js";
