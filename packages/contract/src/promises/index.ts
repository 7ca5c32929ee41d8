/** The Promise Store Contract: the storage of a Distributed Async Await server. Start at `promise-store.ts`. */
export { PROMISE_PROTOCOL_VERSION, PROMISE_STATES, TASK_STATES, PROMISE_TAGS, timeoutState, normalizeValue } from "./records.js";
export type {
  PromiseState,
  SettleState,
  PromiseValue,
  PromiseRecord,
  TaskState,
  TaskRecord,
  PromiseScheduleRecord,
  ExecuteMessage,
  UnblockMessage,
  PromiseMessage,
} from "./records.js";
export { PROMISE_KINDS } from "./requests.js";
export type * from "./requests.js";
export type * from "./rows.js";
export { NO_EFFECTS, noEffects, outboxAccepts } from "./rows.js";
export { DEFAULT_PROMISE_BOUNDS, resolvePromiseBounds, assertPromiseRequest } from "./checks.js";
export type { PromiseBounds } from "./checks.js";
export {
  DEFAULT_PROMISE_SETTINGS,
  PromiseMachine,
  promiseRecord,
  taskRecord,
  scheduleRecord,
  scheduledPromiseId,
  delayOf,
  prefetch,
} from "./machine.js";
export type { PromiseSettings } from "./machine.js";
export { LoadedCache, Workspace, RowsNeeded, rowKeyId } from "./workspace.js";
export type * from "./promise-store.js";
export { CheckedPromiseStore, checkedPromiseStore, resolvePromiseSettings } from "./checked-promise-store.js";
export type { PromiseFrontOptions } from "./checked-promise-store.js";
