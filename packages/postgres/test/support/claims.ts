import type { PostgresStore } from "../../src/index.js";

/**
 * `store` as a worker sees it, counting its claims: `claims` says how many have finished and how
 * many are in flight. Its other methods are bound to the store (it keeps private fields).
 */
export function countingClaims(store: PostgresStore): { readonly counted: PostgresStore; readonly claims: { finished: number; inFlight: number } } {
  const claims = { finished: 0, inFlight: 0 };
  const counted = new Proxy(store, {
    get(target, property) {
      const value = Reflect.get(target, property, target) as unknown;
      if (typeof value !== "function") return value;
      if (property !== "claim") return value.bind(target);
      return async (...args: Parameters<PostgresStore["claim"]>) => {
        claims.inFlight++;
        try {
          return await target.claim(...args);
        } finally {
          claims.inFlight--;
          claims.finished++;
        }
      };
    },
  });
  return { counted, claims };
}
