import { Client, Worker, defineJob, silentLogger } from "@belay/core";
import { MemoryStore } from "@belay/memory";
import { expect, it } from "vitest";

// A host's onEvent listener is the user's code: when it throws, on every event, the worker still
// runs its jobs, takes the maintainer lease (whose answer comes with an event) and stops.

const noop = defineJob({ name: "noop", handler: async () => "ok" });

it("an onEvent listener that throws stops neither the jobs, nor the maintainer election, nor the stop", async () => {
  const store = new MemoryStore();
  await store.migrate();
  const seen = new Set<string>();
  const worker = new Worker({
    store,
    jobs: [noop],
    logger: silentLogger,
    pollIntervalMs: 20,
    maintenanceIntervalMs: 50,
    onEvent: (event) => {
      seen.add(event.type);
      throw new Error(`listener refuses ${event.type}`);
    },
  });
  await worker.start();
  const client = new Client({ store });
  const ids = [];
  for (let i = 0; i < 5; i++) ids.push((await client.enqueue(noop, undefined)).id);
  for (const id of ids) await expect.poll(async () => (await store.getJob(id))?.state, { timeout: 20_000, interval: 25 }).toBe("succeeded");
  await expect.poll(() => worker.health().maintainer, { timeout: 20_000, interval: 25 }).toBe(true);
  expect(seen).toContain("maintainerLease");
  expect(seen).toContain("jobFinished");
  await worker.stop({ timeoutMs: 20_000 });
  expect(worker.health().inflight).toBe(0);
});
