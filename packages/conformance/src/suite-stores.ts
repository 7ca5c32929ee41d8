import type { StepHook } from "@belay/contract";
import { afterEach, expect } from "vitest";

/** What the suites need of a store of either contract to open, hook and close it. */
interface SuiteStore {
  readonly capabilities: { readonly stepHook: boolean };
  setStepHook?(hook: StepHook | null): void;
  close(): Promise<void>;
}

/**
 * Asserts what the capabilities of a store of either contract declare alike: a non-empty name,
 * and whether the step hook exists — `setStepHook` is there when it is declared.
 */
export function expectNamedCapabilities(store: SuiteStore & { readonly capabilities: { readonly name: string } }): void {
  const { capabilities } = store;
  expect(typeof capabilities.name).toBe("string");
  expect(capabilities.name.length).toBeGreaterThan(0);
  expect(typeof capabilities.stepHook).toBe("boolean");
  if (capabilities.stepHook) expect(typeof store.setStepHook).toBe("function");
}

/** The part of a suite's options that opens and disposes of stores. */
interface SuiteStoreOptions<S, O> {
  readonly name: string;
  createStore(options: O): Promise<S>;
  destroyStore?(store: S): Promise<void>;
  readonly hooks?: { openPeer?(store: S): Promise<S> };
}

/**
 * The store-opening part of a suite context, the same for both contracts: every store a clause
 * opens, and every peer handle on it, is closed (or destroyed) after the clause, whatever its end.
 * `track` and `trackPeer` let a suite add the other ways it opens stores.
 */
export function suiteStores<S extends SuiteStore, O extends object, C extends S["capabilities"]>(options: SuiteStoreOptions<S, O>) {
  const created: S[] = [];
  const peers: S[] = [];
  let capabilities: C | undefined;

  afterEach(async () => {
    for (const peer of peers.splice(0)) await peer.close();
    for (const store of created.splice(0)) {
      if (options.destroyStore) await options.destroyStore(store);
      else await store.close();
    }
  });

  const stores = {
    track(store: S): S {
      created.push(store);
      return store;
    },
    trackPeer(peer: S, of: S): S {
      if (peer !== of) peers.push(peer);
      return peer;
    },
    async store(storeOptions = {} as O): Promise<S> {
      const store = stores.track(await options.createStore(storeOptions));
      capabilities ??= store.capabilities as C;
      return store;
    },
    async peer(store: S): Promise<S> {
      const open = options.hooks?.openPeer;
      return open ? stores.trackPeer(await open(store), store) : store;
    },
    setStepHook(store: S, hook: StepHook | null): void {
      if (!store.capabilities.stepHook || typeof store.setStepHook !== "function") {
        throw new Error(`${options.name} declares no capabilities.stepHook`);
      }
      store.setStepHook(hook);
    },
    async capabilities(): Promise<C> {
      if (capabilities === undefined) await stores.store();
      return capabilities!;
    },
  };
  return stores;
}
