import { type Context, Resonate } from "@resonatehq/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RunningServer } from "../src/index.js";
import { decoded, settled, startTestServer, storeUrlTargets, until } from "./sdk-helpers.js";

// Real @resonatehq/sdk 0.11.5 durable functions against belay-server, unchanged: the SDK points
// its `url` at the promise listener. On SQLite and on PostgreSQL. Waits poll state with generous
// deadlines; no duration is asserted.

const targets = await storeUrlTargets("apps/server/test/promises-sdk.test.ts");
afterAll(async () => {
  for (const target of targets) await target.cleanup();
});

// ---- the durable functions ----------------------------------------------------------------

const double = (_ctx: Context, x: number) => x * 2;

function* child(ctx: Context, x: number): Generator<any, number, any> {
  const doubled: number = yield* ctx.run(double, x);
  return doubled + 1;
}

function* nestedWorkflow(ctx: Context, x: number): Generator<any, { local: number; remote: number; slept: boolean }, any> {
  const local: number = yield* ctx.run(double, x);
  const remote: number = yield* ctx.rpc<number>("child", local);
  yield* ctx.sleep(300);
  return { local, remote, slept: true };
}

const latentIds = new Map<string, string>();
function* awaitsLatent(ctx: Context, key: string): Generator<any, string, any> {
  const latent = yield* ctx.promise<string>();
  latentIds.set(key, latent.id);
  const value: string = yield* latent;
  return `got ${value}`;
}

const slowRuns = new Map<string, number>();
async function slowStep(_ctx: Context, key: string, ms: number): Promise<string> {
  slowRuns.set(key, (slowRuns.get(key) ?? 0) + 1);
  await new Promise((resolve) => setTimeout(resolve, ms));
  return `${key} done`;
}
function* longWorkflow(ctx: Context, key: string, ms: number): Generator<any, string, any> {
  return yield* ctx.run(slowStep, key, ms);
}

const ticks = new Map<string, number>();
function* tick(_ctx: Context, key: string): Generator<any, string, any> {
  ticks.set(key, (ticks.get(key) ?? 0) + 1);
  return key;
}

// ---- the suites ---------------------------------------------------------------------------

for (const target of targets) {
  describe.skipIf(!target.available)(`@resonatehq/sdk 0.11.5 against belay-server on ${target.name} (${target.reason})`, () => {
    let running: RunningServer;
    let url: string;
    let worker: Resonate;
    let client: Resonate;
    const run = `${target.name}-${Date.now()}`;

    beforeAll(async () => {
      running = await startTestServer(target.url());
      url = running.promises!.url;
      // ttl 3 s: heartbeats every 1.5 s; a step of 6 s outlives two leases.
      worker = new Resonate({ url, group: "default", pid: `worker-${run}`, ttl: 3_000 });
      for (const [name, fn] of [
        ["child", child],
        ["nested", nestedWorkflow],
        ["latent", awaitsLatent],
        ["long", longWorkflow],
        ["tick", tick],
      ] as const) {
        worker.register(name, fn as never);
      }
      client = new Resonate({ url, group: "client", pid: `client-${run}` });
      await until("the worker's poller", () => (running.promises!.server.pollers.size >= 2 ? true : undefined));
    });

    afterAll(async () => {
      await client?.stop();
      await worker?.stop();
      await running?.stop();
    });

    it("runs a workflow with a ctx.run step, a ctx.rpc child (its own task) and a ctx.sleep", async () => {
      const id = `nested-${run}`;
      const handle = await client.beginRpc(id, "nested", 5, client.options({ target: "poll://any@default" }));
      const record = await settled(url, id);
      expect(record.state).toBe("resolved");
      expect(decoded(record)).toEqual({ local: 10, remote: 21, slept: true });
      expect(await handle.result()).toEqual({ local: 10, remote: 21, slept: true });
      // The children are durable promises of their own: the step (local), the rpc (with a task) and the timer.
      const snapshot = await running.promises!.store.snapshot(Date.now());
      const children = snapshot.promises.filter((p) => p.id.startsWith(`${id}:`));
      expect(children.map((p) => [p.tags["resonate:scope"], p.tags["resonate:timer"] ?? null, p.state])).toEqual(
        expect.arrayContaining([
          ["local", null, "resolved"],
          ["global", null, "resolved"],
          ["global", "true", "resolved"],
        ]),
      );
      expect(snapshot.tasks.filter((t) => t.id.startsWith(id)).every((t) => t.state === "fulfilled")).toBe(true);
    });

    it("runs a workflow started with run (task.create) in the starting process", async () => {
      const id = `direct-${run}`;
      expect(await worker.run(id, "child", 20)).toBe(41);
      expect(decoded(await settled(url, id))).toBe(41);
    });

    it("resumes a workflow awaiting a latent promise (ctx.promise) when it is resolved from outside", async () => {
      const id = `latent-${run}`;
      await client.beginRpc(id, "latent", id, client.options({ target: "poll://any@default" }));
      const latent = await until("the latent promise", () => latentIds.get(id));
      // Still waiting: the task is suspended on the latent promise.
      await until("the workflow to suspend", async () => {
        const snapshot = await running.promises!.store.snapshot(Date.now());
        return snapshot.tasks.find((t) => t.id === id)?.state === "suspended" ? true : undefined;
      });
      await client.promises.resolve(latent, { data: Buffer.from(JSON.stringify("hello")).toString("base64") });
      expect(decoded(await settled(url, id))).toBe("got hello");
    });

    it("keeps a step that outlasts the lease alive on heartbeats: the step runs once", async () => {
      const id = `long-${run}`;
      await client.beginRpc(id, "long", id, 6_000, client.options({ target: "poll://any@default" }));
      expect(decoded(await settled(url, id))).toBe(`${id} done`);
      expect(slowRuns.get(id)).toBe(1);
      const task = (await running.promises!.store.snapshot(Date.now())).tasks.find((t) => t.id === id);
      // Acquired once (version 1), never re-dispatched by a lapsed lease.
      expect(task).toMatchObject({ state: "fulfilled", version: 1 });
    });

    it("fires a schedule (cron every second) that runs a function each time, until deleted", async () => {
      const key = `sched-${run}`;
      const schedule = await client.schedule(key, "* * * * * *", "tick", key, client.options({ target: "poll://any@default" }));
      await until("two firings to run", () => ((ticks.get(key) ?? 0) >= 2 ? true : undefined));
      await schedule.delete();
      const fired = (await running.promises!.store.snapshot(Date.now())).promises.filter((p) => p.tags["resonate:schedule"] === key);
      expect(fired.length).toBeGreaterThanOrEqual(2);
      expect(fired.every((p) => p.id.startsWith(`${key}-`))).toBe(true);
    });
  });
}
