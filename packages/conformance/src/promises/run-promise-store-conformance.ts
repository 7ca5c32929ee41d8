import type { PromiseStore, PromiseStoreCapabilities } from "@belay/contract";
import { describe } from "vitest";
import { acquireClauses } from "./clauses/acquire.js";
import { promiseAtomicityClauses } from "./clauses/atomicity.js";
import { callbackClauses } from "./clauses/callbacks.js";
import { fenceClauses } from "./clauses/fence.js";
import { fencingClauses } from "./clauses/fencing.js";
import { fulfillClauses } from "./clauses/fulfill.js";
import { haltClauses } from "./clauses/halt.js";
import { heartbeatClauses } from "./clauses/heartbeat.js";
import { promiseInputClauses } from "./clauses/input.js";
import { outboxClauses } from "./clauses/outbox.js";
import { promiseClauses } from "./clauses/promises.js";
import { scheduleClauses } from "./clauses/schedules.js";
import { sdkClauses } from "./clauses/sdk.js";
import { searchClauses } from "./clauses/search.js";
import { settleClauses } from "./clauses/settle.js";
import { promiseStoreClauses } from "./clauses/store.js";
import { suspendClauses } from "./clauses/suspend.js";
import { taskCreateClauses } from "./clauses/task-create.js";
import { taskGetClauses } from "./clauses/task-get.js";
import { timerClauses } from "./clauses/timers.js";
import { suiteStores } from "../suite-stores.js";
import type { CreatePromiseStoreOptions, PromiseStoreConformanceOptions, PromiseSuiteContext } from "./suite-context.js";

/**
 * Registers the whole Promise Store Contract as vitest tests against an adapter, one test per
 * clause, grouped by behaviour. Call it at the top level of a test file:
 *
 * @example
 * ```ts
 * import { runPromiseStoreConformance } from "@belay/conformance";
 * import { MemoryPromiseStore } from "@belay/memory";
 *
 * runPromiseStoreConformance({
 *   name: "memory",
 *   createStore: async (options) => {
 *     const store = new MemoryPromiseStore(options);
 *     await store.migrate();
 *     return store;
 *   },
 * });
 * ```
 */
export function runPromiseStoreConformance(options: PromiseStoreConformanceOptions): void {
  const stores = suiteStores<PromiseStore, CreatePromiseStoreOptions, PromiseStoreCapabilities>(options);
  const ctx: PromiseSuiteContext = {
    name: options.name,
    hooks: options.hooks ?? {},
    machineDefects: options.machineDefects ?? "expect-failure",
    store: stores.store,
    peer: stores.peer,
    setStepHook: stores.setStepHook,
    capabilities: stores.capabilities,
  };

  describe(`${options.name}: Promise Store Contract`, () => {
    describe("store", () => promiseStoreClauses(ctx));
    describe("promises", () => promiseClauses(ctx));
    describe("settle", () => settleClauses(ctx));
    describe("callbacks and listeners", () => callbackClauses(ctx));
    describe("searches", () => searchClauses(ctx));
    describe("task.create", () => taskCreateClauses(ctx));
    describe("acquire and release", () => acquireClauses(ctx));
    describe("fulfill", () => fulfillClauses(ctx));
    describe("suspend", () => suspendClauses(ctx));
    describe("fence", () => fenceClauses(ctx));
    describe("heartbeat", () => heartbeatClauses(ctx));
    describe("halt and continue", () => haltClauses(ctx));
    describe("task.get", () => taskGetClauses(ctx));
    describe("fencing", () => fencingClauses(ctx));
    describe("schedules", () => scheduleClauses(ctx));
    describe("timers", () => timerClauses(ctx));
    describe("outbox", () => outboxClauses(ctx));
    describe("atomicity", () => promiseAtomicityClauses(ctx));
    describe("sdk 0.11.5", () => sdkClauses(ctx));
    describe("input", () => promiseInputClauses(ctx));
  });
}
