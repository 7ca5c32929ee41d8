// The package README's example, with checks between its steps (health and metrics are served, the
// job is done). The README's own code runs as written, on every store, in
// examples/readme-examples.test.ts (a fresh project on the packed packages); this test keeps its
// steps and checks what they produce.
import { Client, defineJob } from "@belay/core";
import { expect, it } from "vitest";
import { WorkerHost, hostConfigSchema, jobsFromModule, openStore, startHealthServer } from "../src/index.js";

it("runs a host: a job is done, health and metrics are served, and it stops", async () => {
  const sendWelcome = defineJob({
    name: "email.welcome",
    handler: async ({ userId }: { userId: string }, ctx) => {
      ctx.logger.info("welcoming", { userId });
    },
  });

  // The settings belay-worker takes as flags (parseHostConfig(process.argv.slice(2)) reads those).
  const config = hostConfigSchema.parse({
    store: "memory:", // in production: "sqlite:./belay.db" or "postgres://app@db:5432/app"
    jobs: "./jobs.js", // the module WorkerHost.create imports, unless given `jobs` as below
    migrate: true,
    groups: [{ name: "mail", queues: ["default"], poolSize: 10 }],
    health: { host: "127.0.0.1", port: 0 },
    stopTimeoutMs: 30_000,
  });
  const store = await openStore(config.store);
  const host = await WorkerHost.create(config, { store, jobs: jobsFromModule({ sendWelcome }, "this file") });
  const health = await startHealthServer({ ...config.health, health: () => host.worker.health(), registry: host.metrics.registry });
  await host.start(); // upserts the module's schedules, then runs the groups
  console.log(`health and metrics at ${health.url}`); // GET /healthz, /readyz, /metrics

  const { id } = await new Client({ store }).enqueue(sendWelcome, { userId: "u1" });

  const deadline = Date.now() + 30_000;
  while ((await store.getJob(id))?.state !== "succeeded") {
    if (Date.now() > deadline) throw new Error(`job ${id} not done: ${JSON.stringify(await store.getJob(id))}`);
    await new Promise((r) => setTimeout(r, 25));
  }
  expect((await fetch(`${health.url}/readyz`)).status).toBe(200);
  expect(await (await fetch(`${health.url}/metrics`)).text()).toContain('belay_slots_capacity{group="mail"} 10');

  // … on SIGTERM: stop claiming, let running handlers finish within stopTimeoutMs, then close.
  await host.stop();
  await health.close();
  await store.close();
});
