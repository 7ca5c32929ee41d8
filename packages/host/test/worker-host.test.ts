// WorkerHost in process: groups, schedules, metrics, health and the graceful stop. Handlers end
// when the test opens their gate, and every wait polls state with a generous deadline, so these
// tests assert what happened, never how long it took; they hold on a machine busy with other work.
import type { JobStore } from "@belay/contract";
import { Client, defineJob, silentLogger as silent } from "@belay/core";
import { afterEach, describe, expect, it } from "vitest";
import { type HealthServer, WorkerHost, hostConfigSchema, jobsFromModule, openStore, startHealthServer } from "../src/index.js";

const PATIENCE_MS = 30_000;

/** A promise the test resolves by hand. */
function gate(): { readonly opened: Promise<void>; open(): void } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

/** Polls `probe` until it yields a value; fails after {@link PATIENCE_MS} saying what it waited for. */
async function waitFor<T>(what: string, probe: () => T | undefined | Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + PATIENCE_MS;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last === undefined ? "" : `: ${String(last)}`}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe("WorkerHost", () => {
  let store: JobStore | null = null;
  let host: WorkerHost | null = null;
  let health: HealthServer | null = null;

  afterEach(async () => {
    await host?.stop();
    await health?.close();
    await store?.close();
    host = health = store = null;
  });

  it("runs each configured group on its queues, upserts the module's schedules, and counts in metrics", async () => {
    const ran: string[] = [];
    const mail = defineJob({ name: "mail.send", queue: "mail", handler: async (_: { n: number }, ctx) => void ran.push(ctx.queue) });
    const report = defineJob({ name: "report.build", queue: "reports", handler: async (_: { n: number }, ctx) => void ran.push(ctx.queue) });
    const jobs = jobsFromModule(
      { mail, report, schedules: [{ id: "nightly-report", cron: "0 3 * * *", job: report, payload: { n: 0 } }] },
      "inline jobs",
    );
    const config = hostConfigSchema.parse({
      store: "memory:",
      jobs: "(inline)",
      migrate: true,
      pollIntervalMs: 50,
      groups: [
        { name: "mail", queues: ["mail"], poolSize: 2 },
        { name: "rest", queues: ["*"], poolSize: 3, pumps: 2 },
      ],
    });
    store = await openStore(config.store);
    host = await WorkerHost.create(config, { store, jobs, logger: silent });
    await host.start();

    expect(await store.getSchedule("nightly-report")).toMatchObject({ jobName: "report.build" });
    const groups = host.worker.health().groups.map((g) => ({ name: g.name, pumps: g.pumps.length }));
    expect(groups).toEqual([
      { name: "mail", pumps: 1 },
      { name: "rest", pumps: 2 },
    ]);

    const client = new Client({ store });
    for (let n = 0; n < 3; n++) {
      await client.enqueue(mail, { n });
      await client.enqueue(report, { n });
    }
    const metrics = await waitFor("six outcomes in the metrics", async () => {
      const text = await host!.metrics.registry.metrics();
      return text.includes('belay_outcomes_applied_total{state="succeeded"} 6') ? text : undefined;
    });
    expect(metrics).toContain('belay_jobs_finished_total{queue="mail",job_name="mail.send",result="succeeded"} 3');
    expect(metrics).toContain('belay_jobs_finished_total{queue="reports",job_name="report.build",result="succeeded"} 3');
    expect(metrics).toContain('belay_slots_capacity{group="mail"} 2');
    expect(metrics).toContain('belay_slots_capacity{group="rest"} 6');
    expect(metrics).toContain('belay_pumps_halted{group="rest"} 0');
    expect(ran.sort()).toEqual(["mail", "mail", "mail", "reports", "reports", "reports"]);
  });

  it("stops gracefully: unready at once, finishes handlers that end before the deadline, releases the rest uncounted", async () => {
    const release = gate();
    let started = 0;
    const allStarted = gate();
    const nap = defineJob({
      name: "nap",
      handler: ({ gated }: { gated: boolean }, ctx) => {
        if (++started === 4) allStarted.open();
        return new Promise<void>((resolve, reject) => {
          if (gated) void release.opened.then(resolve);
          ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason));
        });
      },
    });
    const config = hostConfigSchema.parse({
      store: "memory:",
      jobs: "(inline)",
      migrate: true,
      pollIntervalMs: 50,
      groups: [{ name: "default", queues: ["*"], poolSize: 4 }],
      health: { port: 0 },
      // Room for the gated handlers to report after their gate opens; the stubborn ones hold the
      // stop this long, then are released.
      stopTimeoutMs: 5_000,
    });
    store = await openStore(config.store);
    host = await WorkerHost.create(config, { store, jobs: jobsFromModule({ nap }, "inline jobs"), logger: silent });
    const running = host;
    health = await startHealthServer({ ...config.health, health: () => running.worker.health(), registry: running.metrics.registry });
    await host.start();

    const client = new Client({ store });
    const gated = [await client.enqueue(nap, { gated: true }), await client.enqueue(nap, { gated: true })];
    const stubborn = [await client.enqueue(nap, { gated: false }), await client.enqueue(nap, { gated: false })];
    await allStarted.opened;
    expect((await fetch(`${health.url}/readyz`)).status).toBe(200);
    await waitFor("four executing", () => (host!.worker.health().groups[0]!.pumps[0]!.executing === 4 ? true : undefined));

    const stopped = host.stop();
    // The worker leaves "running" as the stop begins, before any handler has been waited for.
    expect(host.worker.health().ready).toBe(false);
    expect((await fetch(`${health.url}/readyz`)).status).toBe(503);
    expect((await fetch(`${health.url}/healthz`)).status).toBe(200);
    release.open();
    await stopped;

    for (const { id } of gated) expect(await store.getJob(id), id).toMatchObject({ state: "succeeded", attempt: 1 });
    for (const { id } of stubborn) {
      expect(await store.getJob(id), id).toMatchObject({ state: "scheduled", attempt: 1, releases: 1, leaseOwner: null });
    }
    expect(await host.metrics.registry.metrics()).toContain('belay_outcomes_applied_total{state="succeeded"} 2');
  });
});

describe("startHealthServer", () => {
  it("answers 503 without a worker, serves the registry's metrics, and 404 elsewhere", async () => {
    const store = await openStore("memory:");
    const config = hostConfigSchema.parse({ store: "memory:", jobs: "(inline)" });
    const nap = defineJob({ name: "nap", handler: async () => {} });
    const host = await WorkerHost.create(config, { store, jobs: jobsFromModule({ nap }, "inline jobs"), logger: silent });
    const server = await startHealthServer({ host: "127.0.0.1", port: 0, health: () => null, registry: host.metrics.registry });
    try {
      expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      const healthz = await fetch(`${server.url}/healthz`);
      expect(healthz.status).toBe(503);
      expect(healthz.headers.get("cache-control")).toBe("no-store");
      expect((await fetch(`${server.url}/readyz?probe=1`)).status).toBe(503);
      const metrics = await fetch(`${server.url}/metrics`);
      expect(metrics.status).toBe(200);
      expect(await metrics.text()).toContain("# TYPE belay_jobs_started_total counter");
      expect((await fetch(`${server.url}/elsewhere`)).status).toBe(404);
    } finally {
      await server.close();
      await store.close();
    }
  });
});
