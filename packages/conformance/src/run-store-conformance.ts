import type { JobStore, StoreCapabilities } from "@belay/contract";
import { describe } from "vitest";
import { atomicityClauses } from "./clauses/atomicity.js";
import { boundClauses } from "./clauses/bounds.js";
import { claimClauses } from "./clauses/claim.js";
import { concurrencyClauses } from "./clauses/concurrency.js";
import { enqueueClauses } from "./clauses/enqueue.js";
import { expiryClauses } from "./clauses/expiry.js";
import { hintClauses } from "./clauses/hints.js";
import { historyClauses } from "./clauses/history.js";
import { inputClauses } from "./clauses/input.js";
import { leaseClauses } from "./clauses/leases.js";
import { maintainerClauses } from "./clauses/maintainer.js";
import { migrationClauses } from "./clauses/migrations.js";
import { observerSubscriptionClauses } from "./clauses/observer-subscriptions.js";
import { observerClauses } from "./clauses/observers.js";
import { operatorClauses } from "./clauses/operator.js";
import { provenanceClauses } from "./clauses/provenance.js";
import { outcomeClauses } from "./clauses/outcomes.js";
import { readClauses } from "./clauses/reads.js";
import { retentionClauses } from "./clauses/retention.js";
import { scheduleClauses } from "./clauses/schedules.js";
import { storeClauses } from "./clauses/store.js";
import { tagClauses } from "./clauses/tags.js";
import { throughClauses } from "./clauses/through.js";
import { workflowClauses } from "./clauses/workflows.js";
import type { CreateStoreOptions, StoreConformanceOptions, SuiteContext } from "./suite-context.js";
import { suiteStores } from "./suite-stores.js";

/**
 * Registers the whole Storage Contract as vitest tests against an adapter, one test per clause,
 * grouped by behaviour. Call it at the top level of a test file:
 *
 * @example
 * ```ts
 * import { runStoreConformance } from "@belay/conformance";
 * import { MemoryStore } from "@belay/memory";
 *
 * runStoreConformance({
 *   name: "memory",
 *   createStore: async (options) => new MemoryStore(options),
 *   hooks: {
 *     beginTransaction: async (store) => {
 *       const tx = (store as MemoryStore).beginTransaction();
 *       return { tx, commit: () => tx.commit(), rollback: () => tx.rollback() };
 *     },
 *   },
 * });
 * ```
 */
export function runStoreConformance(options: StoreConformanceOptions): void {
  const hooks = options.hooks ?? {};
  const stores = suiteStores<JobStore, CreateStoreOptions, StoreCapabilities>(options);
  const ctx: SuiteContext = {
    name: options.name,
    hooks,
    withoutDatabase: options.withoutDatabase,
    store: stores.store,
    peer: stores.peer,
    async reopen(store, storeOptions) {
      if (!hooks.reopen) throw new Error(`${options.name} grants no hooks.reopen`);
      return stores.trackPeer(await hooks.reopen(store, storeOptions), store);
    },
    async unmigrated(storeOptions = {}) {
      if (!hooks.openUnmigrated) throw new Error(`${options.name} grants no hooks.openUnmigrated`);
      return stores.track(await hooks.openUnmigrated(storeOptions));
    },
    setStepHook: stores.setStepHook,
    capabilities: stores.capabilities,
  };

  describe(`${options.name}: Storage Contract`, () => {
    describe("store", () => storeClauses(ctx));
    describe("enqueue", () => enqueueClauses(ctx));
    describe("enqueueThrough", () => throughClauses(ctx));
    describe("claim", () => claimClauses(ctx));
    describe("outcomes", () => outcomeClauses(ctx));
    describe("leases", () => leaseClauses(ctx));
    describe("expiry", () => expiryClauses(ctx));
    describe("schedules", () => scheduleClauses(ctx));
    describe("operator", () => operatorClauses(ctx));
    describe("reads", () => readClauses(ctx));
    describe("history", () => historyClauses(ctx));
    describe("tags", () => tagClauses(ctx));
    describe("workflows", () => workflowClauses(ctx));
    describe("retention", () => retentionClauses(ctx));
    describe("maintainer", () => maintainerClauses(ctx));
    describe("observers", () => {
      observerClauses(ctx);
      observerSubscriptionClauses(ctx);
    });
    describe("atomicity", () => atomicityClauses(ctx));
    describe("input", () => inputClauses(ctx));
    describe("provenance", () => provenanceClauses(ctx));
    describe("bounds", () => boundClauses(ctx));
    describe("concurrency", () => concurrencyClauses(ctx));
    describe("hints", () => hintClauses(ctx));
    describe("migrations", () => migrationClauses(ctx));
  });
}
