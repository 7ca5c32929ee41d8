import type { JobStore } from "@belay/contract";
import { FIXED_LIMIT, RACED_LIMITS, TORTURE_QUEUES } from "./plan.js";

/** What the limit sampler saw. */
export interface LimitSamples {
  readonly samples: number;
  /** The most leased jobs seen at once per limited queue. */
  readonly maxLeased: Readonly<Record<string, number>>;
  readonly violations: readonly string[];
}

/**
 * Watches the limited queues while the clients race, through the store's own reads: the leased
 * jobs per queue (`countJobs`) never exceed the queue's limit (`fixed`: its one limit; `raced`:
 * the largest limit ever set on it, since lowering a limit revokes nothing), and the stored
 * limits are only ever values someone set.
 */
export function sampleLimits(store: JobStore, intervalMs = 10): { stop(): Promise<LimitSamples> } {
  const bounds: Record<string, number> = { [TORTURE_QUEUES.fixed]: FIXED_LIMIT, [TORTURE_QUEUES.raced]: Math.max(...RACED_LIMITS) };
  const maxLeased: Record<string, number> = { [TORTURE_QUEUES.fixed]: 0, [TORTURE_QUEUES.raced]: 0 };
  const violations: string[] = [];
  let samples = 0;
  let running = true;
  const loop = (async () => {
    while (running) {
      try {
        const counts = await store.countJobs();
        for (const [queue, bound] of Object.entries(bounds)) {
          const leased = counts.find((c) => c.queue === queue && c.state === "leased")?.count ?? 0;
          maxLeased[queue] = Math.max(maxLeased[queue]!, leased);
          if (leased > bound) violations.push(`sampled ${leased} leased jobs in queue ${queue}, over its limit ${bound}`);
        }
        for (const settings of await store.listQueueSettings()) {
          if (settings.queue === TORTURE_QUEUES.fixed && settings.concurrencyLimit !== FIXED_LIMIT) {
            violations.push(`queue ${settings.queue} reads limit ${settings.concurrencyLimit}, but only ${FIXED_LIMIT} was ever set`);
          }
          if (settings.queue === TORTURE_QUEUES.raced && settings.concurrencyLimit !== null && !RACED_LIMITS.includes(settings.concurrencyLimit)) {
            violations.push(`queue ${settings.queue} reads limit ${settings.concurrencyLimit}, never set`);
          }
        }
        samples++;
      } catch (error) {
        const code = (error as { code?: unknown }).code;
        if (code !== "BELAY_TRANSIENT_STORE") violations.push(`a sampling read failed: ${String(code)}: ${(error as Error).message}`);
      }
      await new Promise((resolve) => setTimeout(resolve, intervalMs));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return { samples, maxLeased, violations };
    },
  };
}
