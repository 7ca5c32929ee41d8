export { MemoryStore } from "./memory-store.js";
export type { MemoryStoreOptions } from "./memory-store.js";
export { MemoryTransaction } from "./memory-transaction.js";
