/**
 * `@belay/memory` — the in-memory reference store of the Belay Storage Contract: deterministic,
 * for tests, local development and the simulator. Nothing survives the process.
 */
export { MemoryStore } from "./memory-store.js";
export type { LoggedTransition } from "./memory-store.js";
export type { MemoryStoreOptions } from "./memory-store-config.js";
export { MemoryTransaction } from "./memory-transaction.js";
export { MemoryPromiseStore } from "./memory-promise-store.js";
