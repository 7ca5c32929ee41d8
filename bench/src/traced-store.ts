// A job store that counts the calls a worker makes on it, for the runners and tools that report
// them (systems/belay.ts, tools/measure-postgres.ts). Only counting: every call goes through
// unchanged.
import type { JobStore } from "@belay/contract";

/** One store operation's calls so far. */
export interface StoreCallStats {
  calls: number;
  /** Jobs claimed, reported or heartbeated, summed over the calls. */
  jobs: number;
  /** Each call's duration. */
  ms: number[];
  inFlight: number;
  maxInFlight: number;
}

/** `store` counting its calls of the operations `traced` into `ops` (behaviour unchanged). */
export function tracedJobStore(store: JobStore, traced: readonly string[], ops: Map<string, StoreCallStats>): JobStore {
  return new Proxy(store, {
    get(target, prop, receiver) {
      const v = Reflect.get(target, prop, receiver) as unknown;
      if (typeof v !== "function") return v;
      const name = String(prop);
      if (!traced.includes(name)) return v.bind(target);
      return async (req: Record<string, unknown>) => {
        const s = ops.get(name) ?? { calls: 0, jobs: 0, ms: [], inFlight: 0, maxInFlight: 0 };
        ops.set(name, s);
        s.maxInFlight = Math.max(s.maxInFlight, ++s.inFlight);
        const t = performance.now();
        try {
          const res = (await (v as (r: unknown) => Promise<unknown>).call(target, req)) as Record<string, unknown>;
          s.calls++;
          s.ms.push(performance.now() - t);
          if (name === "claim") s.jobs += (res["jobs"] as unknown[]).length;
          else if (name === "reportOutcomes") s.jobs += (req["reports"] as unknown[]).length;
          else if (name === "heartbeat") s.jobs += (req["leases"] as unknown[]).length;
          return res;
        } finally {
          s.inFlight--;
        }
      };
    },
  });
}
