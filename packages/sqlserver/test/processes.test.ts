import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type MssqlPool, SqlServerStore } from "../src/index.js";
import { dropSchema, randomSchema, sqlServerTarget, testPool } from "./target.js";

// Real processes on one database: several workers drain a queue together (each job runs and
// succeeds exactly once), and a worker killed with SIGKILL mid-load loses nothing it had
// acknowledged — its leases lapse to a peer, which finishes every job. The children import the
// built package (dist/): the test builds it first.
const target = sqlServerTarget();
const url = target.url;
const packageRoot = fileURLToPath(new URL("..", import.meta.url));

interface Child {
  readonly process: ChildProcess;
  readonly lines: string[];
  readonly exited: Promise<number | null>;
}

function worker(env: Record<string, string>): Child {
  const child = spawn(process.execPath, [fileURLToPath(new URL("fixtures/worker-child.mjs", import.meta.url))], {
    env: { ...process.env, URL: url!, ...env },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const lines: string[] = [];
  let buffer = "";
  child.stdout!.on("data", (chunk: Buffer) => {
    buffer += chunk.toString();
    const parts = buffer.split("\n");
    buffer = parts.pop()!;
    lines.push(...parts);
  });
  return { process: child, lines, exited: new Promise((resolve) => child.on("exit", (code) => resolve(code))) };
}

describe.skipIf(url === undefined)(`sqlserver processes (${target.reason})`, () => {
  let pool: MssqlPool;

  beforeAll(async () => {
    execFileSync("pnpm", ["--filter", "@belay/sqlserver", "build"], { cwd: packageRoot, stdio: "ignore" });
    pool = await testPool(url!, 4);
  }, 180_000);

  afterAll(async () => {
    await pool?.close();
  });

  it("three worker processes drain one queue: every job succeeds exactly once", async () => {
    const schema = randomSchema("drain");
    const store = new SqlServerStore({ pool, schema });
    await store.migrate();
    try {
      const ids = Array.from({ length: 300 }, (_, i) => `d${i}`);
      const T0 = Date.now() - 1_000;
      for (let i = 0; i < ids.length; i += 100) {
        await store.enqueue({ jobs: ids.slice(i, i + 100).map((id) => ({ id, jobName: "t", queue: "q", payload: "{}", dueAt: T0 })), now: T0 });
      }
      const workers = ["w1", "w2", "w3"].map((id) => worker({ SCHEMA: schema, WORKER_ID: id }));
      expect(await Promise.all(workers.map((w) => w.exited))).toEqual([0, 0, 0]);
      const done = workers.map((w) => JSON.parse(w.lines.find((l) => l.startsWith("summary "))!.slice(8)).done as number);
      expect(done.reduce((a, b) => a + b, 0)).toBe(ids.length);
      const counts = await store.countJobs();
      expect(counts).toEqual([{ queue: "q", state: "succeeded", count: ids.length }]);
      for (const id of ids.slice(0, 20)) {
        const history = await store.getJobHistory(id);
        expect(history.filter((t) => t.state === "succeeded")).toHaveLength(1);
        expect(history.filter((t) => t.state === "leased")).toHaveLength(1);
      }
    } finally {
      await store.close();
      await dropSchema(pool, schema);
    }
  }, 180_000);

  it("a worker killed mid-load (SIGKILL) loses no acknowledged enqueue, and a peer finishes its leased jobs", async () => {
    const schema = randomSchema("crash");
    const store = new SqlServerStore({ pool, schema });
    await store.migrate();
    try {
      const victim = worker({ SCHEMA: schema, WORKER_ID: "victim", PRODUCE: "200", LEASE_MS: "2000", HANDLER_SLEEP_MS: "200", IDLE_ROUNDS: "1000" });
      const deadline = Date.now() + 60_000;
      while (!victim.lines.some((l) => l.startsWith("claimed ")) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      victim.process.kill("SIGKILL");
      await victim.exited;
      const acked = victim.lines.filter((l) => l.startsWith("ack ")).flatMap((l) => l.slice(4).split(","));
      expect(acked.length).toBeGreaterThan(0);
      for (const id of acked) expect(await store.getJob(id), `acknowledged ${id}`).not.toBeNull();
      // The recovery worker lives 10 s ahead, so the victim's 2 s leases have lapsed for it.
      const peer = worker({ SCHEMA: schema, WORKER_ID: "peer", EXPIRE: "1", NOW_OFFSET_MS: "10000" });
      expect(await peer.exited).toBe(0);
      const jobs = (await store.listJobs({ limit: 200 })).jobs;
      const all = [...jobs];
      let cursor = (await store.listJobs({ limit: 200 })).nextCursor;
      while (cursor !== null) {
        const page = await store.listJobs({ limit: 200, after: cursor });
        all.push(...page.jobs);
        cursor = page.nextCursor;
      }
      expect(all.filter((j) => j.state !== "succeeded").map((j) => [j.id, j.state])).toEqual([]);
      for (const id of acked) expect(all.some((j) => j.id === id)).toBe(true);
    } finally {
      await store.close();
      await dropSchema(pool, schema);
    }
  }, 180_000);
});
