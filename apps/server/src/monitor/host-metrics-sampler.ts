import type { Clock } from "@belay/core";
import type { HostMetrics } from "@belay/host";
import type { ThroughputRing } from "./throughput.js";

/**
 * Feeds the throughput ring from a worker host's Prometheus counters: once a second it reads the
 * executions finished so far, by result, and records the increase. Returns the stop function.
 */
export function sampleHostMetrics(metrics: HostMetrics, ring: ThroughputRing, clock: Clock): () => void {
  let previous: { succeeded: number; failed: number } | null = null;
  let busy = false;
  const sample = async () => {
    if (busy) return;
    busy = true;
    try {
      const metric = metrics.registry.getSingleMetric("belay_jobs_finished_total");
      if (metric === undefined) return;
      const { values } = await metric.get();
      let succeeded = 0;
      let failed = 0;
      for (const { value, labels } of values) {
        if (labels["result"] === "succeeded") succeeded += value;
        else if (labels["result"] === "failed" || labels["result"] === "unroutable") failed += value;
      }
      if (previous !== null) {
        const now = clock.now();
        ring.add(now, "succeeded", succeeded - previous.succeeded);
        ring.add(now, "failed", failed - previous.failed);
      }
      previous = { succeeded, failed };
    } finally {
      busy = false;
    }
  };
  const timer = setInterval(() => void sample(), 1_000);
  timer.unref?.();
  void sample();
  return () => clearInterval(timer);
}
