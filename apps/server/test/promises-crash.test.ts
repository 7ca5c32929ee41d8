import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { Resonate } from "@resonatehq/sdk";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import type { RunningServer } from "../src/index.js";
import { trackedChildren } from "./processes.js";
import { decoded, settled, startTestServer, storeUrlTargets, until } from "./sdk-helpers.js";

// A worker process SIGKILLed in the middle of a durable function: after its lease lapses another
// worker process finishes the function, from the step it was in (the step before it is not run
// again). Two belay-server instances share the store, as several processes share one database:
// the killed worker and the client talk to the first, the worker that finishes to the second,
// which delivers the re-dispatched task from the shared outbox.

const FIXTURE = fileURLToPath(new URL("./fixtures/sdk-worker.mjs", import.meta.url));
const PACKAGE = fileURLToPath(new URL("..", import.meta.url));
const targets = await storeUrlTargets("apps/server/test/promises-crash.test.ts");
afterAll(async () => {
  for (const target of targets) await target.cleanup();
});

interface WorkerProcess {
  readonly child: ChildProcess;
  readonly output: () => string;
}
const track = trackedChildren();
function startWorker(url: string, pid: string, env: Record<string, string> = {}): WorkerProcess {
  const child = spawn(process.execPath, [FIXTURE], {
    cwd: PACKAGE,
    detached: true,
    env: { ...process.env, BELAY_URL: url, PID: pid, GROUP: "workers", TTL: "3000", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  track(child);
  let output = "";
  child.stdout!.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString()));
  return { child, output: () => output };
}

for (const target of targets) {
  describe.skipIf(!target.available)(`a worker process killed mid-function, on ${target.name} (${target.reason})`, () => {
    const servers: RunningServer[] = [];
    afterEach(async () => {
      for (const server of servers.splice(0)) await server.stop();
    });

    it("another worker finishes the function after the lease lapses", async () => {
      const store = target.url();
      const first = await startTestServer(store, { outboxLeaseMs: 1_000 });
      servers.push(first);
      const second = await startTestServer(store, { outboxLeaseMs: 1_000 });
      servers.push(second);
      const key = `crash-${target.name}-${Date.now()}`;

      const doomed = startWorker(first.promises!.url, "doomed", { HANG: "1" });
      await until("the doomed worker's poller", () => (first.promises!.server.pollers.size >= 1 && doomed.output().includes("READY") ? true : undefined));
      const client = new Resonate({ url: first.promises!.url, group: "client", pid: `client-${key}` });
      try {
        await client.beginRpc(key, "job", key, client.options({ target: "poll://any@workers" }));
        await until("the doomed worker to reach its second step", () => (doomed.output().includes(`STEP ${key} doomed`) ? true : undefined));
        process.kill(-doomed.child.pid!, "SIGKILL");
        await new Promise((resolve) => doomed.child.once("exit", resolve));

        const rescuer = startWorker(second.promises!.url, "rescuer");
        const record = await settled(first.promises!.url, key, 60_000);
        expect(record.state).toBe("resolved");
        expect(decoded(record)).toEqual({ fetched: `fetched ${key}`, processed: `processed ${key} by rescuer` });
        expect(rescuer.output()).toContain(`STEP ${key} rescuer`);
        // The rescuer acquired the task after the doomed worker's claim: a higher version.
        const task = (await first.promises!.store.snapshot(Date.now())).tasks.find((t) => t.id === key);
        expect(task?.state).toBe("fulfilled");
        expect(task!.version).toBeGreaterThanOrEqual(2);
      } finally {
        await client.stop();
      }
    });
  });
}
