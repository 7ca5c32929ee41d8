import { type ChildProcess, spawn } from "node:child_process";
import { delimiter, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { PromiseRecord, PromiseStore } from "@belay/contract";
import { openPromiseStore } from "@belay/host";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectPoller, until, storeUrlTargets } from "./sdk-helpers.js";

// Several belay-server processes on one PostgreSQL, as a deployment runs them: three server
// processes, six SDK worker processes (two polling each server) and three SDK client processes
// (one per server), all child processes. The clients start 1,000 durable functions, each a
// ctx.run step and two ctx.rpc children (each a step and a ctx.sleep): their messages cross
// between the processes through the shared outbox, woken by LISTEN/NOTIFY. Checked from the store
// and from what the processes print:
//
// - every function completes with the right result;
// - every promise is settled once: each settle answer any worker got agrees with the promise's
//   final record (state, settledAt, value), and each step's body ran exactly once;
// - no message is lost: the outbox ends empty, and the retry timer (30 s) dispatched a task again
//   rarely if ever (counted from the servers' "timeout scan: tasks dispatched again" log lines);
// - a message for poll://any@group reaches a poller of the group connected to any of the servers,
//   and an unblock for poll://uni@group/id reaches that poller wherever it is connected.

const PACKAGE = fileURLToPath(new URL("..", import.meta.url));
const WORKER = fileURLToPath(new URL("./fixtures/sdk-fanout-worker.mjs", import.meta.url));
const CLIENT = fileURLToPath(new URL("./fixtures/sdk-fanout-client.mjs", import.meta.url));
const ROOTS = Number(process.env["BELAY_MANY_SERVERS_ROOTS"] ?? 1_000);
const SERVERS = 3;
const WORKERS_PER_SERVER = 2;

const targets = await storeUrlTargets("apps/server/test/promises-many-servers.test.ts");
const postgres = targets.find((target) => target.name === "postgres")!;
afterAll(async () => {
  for (const target of targets) await target.cleanup();
});

interface Child {
  readonly child: ChildProcess;
  /** Everything printed so far (stdout and stderr). */
  readonly output: () => string;
  readonly lines: () => readonly string[];
  readonly exited: Promise<unknown>;
}

const children: Child[] = [];

function start(command: string, args: readonly string[], env: Record<string, string>): Child {
  const child = spawn(command, args, {
    cwd: PACKAGE,
    detached: true,
    env: { ...process.env, PATH: `${join(PACKAGE, "node_modules", ".bin")}${delimiter}${process.env["PATH"]}`, BELAY_SERVER_TOKENS: "", ...env },
    stdio: ["pipe", "pipe", "pipe"],
  });
  let output = "";
  const lines: string[] = [];
  let partial = "";
  const take = (chunk: Buffer) => {
    const text = chunk.toString();
    output += text;
    partial += text;
    const parts = partial.split("\n");
    partial = parts.pop()!;
    lines.push(...parts);
  };
  child.stdout!.on("data", take);
  child.stderr!.on("data", take);
  const entry: Child = { child, output: () => output, lines: () => lines, exited: new Promise((resolve) => child.once("exit", resolve)) };
  children.push(entry);
  return entry;
}

async function stopAll(): Promise<void> {
  for (const { child, exited } of children.splice(0).reverse()) {
    if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) continue;
    try {
      process.kill(-child.pid, "SIGTERM");
    } catch {
      continue;
    }
    const timer = setTimeout(() => {
      try {
        process.kill(-child.pid!, "SIGKILL");
      } catch {
        // gone
      }
    }, 5_000);
    await exited;
    clearTimeout(timer);
  }
}

async function waitForLine(process: Child, pattern: RegExp, timeoutMs = 60_000): Promise<RegExpExecArray> {
  return until(
    `${pattern} in ${process.child.spawnargs.join(" ")}:\n${process.output().slice(-2_000)}`,
    () => pattern.exec(process.output()) ?? undefined,
    timeoutMs,
  );
}

let corr = 0;
async function send(url: string, kind: string, data: unknown): Promise<{ status: number; data: any }> {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ kind, head: { corrId: `m${++corr}`, version: "2026-04-01" }, data }),
  });
  const body = (await response.json()) as { head: { status: number }; data: unknown };
  return { status: body.head.status, data: body.data };
}

describe.skipIf(!postgres.available)(`${SERVERS} belay-server processes on one PostgreSQL (${postgres.reason})`, () => {
  const run = `many-${Date.now().toString(36)}`;
  let storeUrl: string;
  let servers: { readonly process: Child; readonly url: string }[] = [];
  let store: PromiseStore;

  beforeAll(async () => {
    storeUrl = postgres.url();
    const startServer = () => start("tsx", ["--conditions=@belay/source", "src/main.ts", "--store", storeUrl, "--migrate", "--port", "0", "--promises-port", "0"], {});
    // The first migrates alone; the others find the schema there.
    const first = startServer();
    const [, firstUrl] = await waitForLine(first, /durable promises (http:\/\/\S+)/);
    const rest = Array.from({ length: SERVERS - 1 }, startServer);
    const restUrls = await Promise.all(rest.map(async (p) => (await waitForLine(p, /durable promises (http:\/\/\S+)/))[1]!));
    servers = [{ process: first, url: firstUrl! }, ...rest.map((p, i) => ({ process: p, url: restUrls[i]! }))];
    store = await openPromiseStore(storeUrl);
  }, 120_000);

  afterAll(async () => {
    await stopAll();
    await store?.close();
  });

  it("a message for poll://any@group reaches a poller of the group on any server; an unblock for poll://uni@group/id reaches that poller wherever it is", async () => {
    const latencies: number[] = [];
    for (let k = 0; k < SERVERS; k++) {
      const home = servers[k]!;
      const other = servers[(k + 1) % SERVERS]!;
      const third = servers[(k + 2) % SERVERS]!;
      const group = `solo-${run}-${k}`;
      const poller = await connectPoller(home.url, group, "p1");
      // Registered once the server answers the stream's first line; a promise.get round trip on the same server follows it.
      await new Promise((resolve) => setTimeout(resolve, 100));
      const id = `${group}-task`;
      const sentAt = Date.now();
      expect((await send(other.url, "promise.create", { id, timeoutAt: Date.now() + 60_000, tags: { "resonate:target": `poll://any@${group}` } })).status).toBe(200);
      const execute = await until(`the execute for ${id} at ${home.url}`, () => poller.messages.find((m) => m.message.kind === "execute"), 20_000);
      expect(execute.message.data.task).toEqual({ id, version: 0 });
      latencies.push(execute.at - sentAt);
      // Nobody will run it: settled, so its retry timer does not count below.
      expect((await send(other.url, "promise.settle", { id, state: "rejected_canceled" })).status).toBe(200);

      const awaited = `${group}-awaited`;
      expect((await send(third.url, "promise.create", { id: awaited, timeoutAt: Date.now() + 60_000 })).status).toBe(200);
      expect((await send(third.url, "promise.register_listener", { awaited, address: `poll://uni@${group}/p1` })).status).toBe(200);
      const settledAt = Date.now();
      expect((await send(other.url, "promise.settle", { id: awaited, state: "resolved", value: { data: "eQ==" } })).status).toBe(200);
      const unblock = await until(`the unblock for ${awaited} at ${home.url}`, () => poller.messages.find((m) => m.message.kind === "unblock"), 20_000);
      expect(unblock.message.data.promise).toMatchObject({ id: awaited, state: "resolved" });
      latencies.push(unblock.at - settledAt);
      poller.close();
    }
    console.info(`[many-servers] cross-process deliveries: ${latencies.map((ms) => `${ms} ms`).join(", ")}`);
  }, 120_000);

  it(`${ROOTS} durable functions with children complete across the processes; every promise settled once, no message lost`, async () => {
    const workers = Array.from({ length: SERVERS * WORKERS_PER_SERVER }, (_, w) =>
      start(process.execPath, [WORKER], { BELAY_URL: servers[w % SERVERS]!.url, GROUP: `workers-${run}`, PID: `w${w}` }),
    );
    const ids = Array.from({ length: ROOTS }, (_, i) => ({ id: `${run}-${i}`, i }));
    const clients = Array.from({ length: SERVERS }, (_, c) =>
      start(process.execPath, [CLIENT], {
        BELAY_URL: servers[c]!.url,
        PID: `client-${run}-${c}`,
        GROUP: `workers-${run}`,
        CONCURRENCY: "25",
        ROOTS: ids
          .filter((_, i) => i % SERVERS === c)
          .map(({ id, i }) => `${id}=${i}`)
          .join(","),
      }),
    );
    await Promise.all([...workers, ...clients].map((p) => waitForLine(p, /POLLING/)));

    const started = Date.now();
    for (const client of clients) client.child.stdin!.write("GO\n");
    await Promise.all(clients.map((client) => waitForLine(client, /^(DONE|FAILED.*)$/m, 240_000)));
    const elapsed = Date.now() - started;
    for (const client of clients) expect(client.output()).not.toMatch(/FAILED/);

    // Every function's result, from the client that started it.
    const results = new Map<string, { ms: number; value: unknown }>();
    for (const client of clients) {
      for (const line of client.lines()) {
        const match = /^RESULT (\S+) (\d+) (.*)$/.exec(line);
        if (match !== null) results.set(match[1]!, { ms: Number(match[2]), value: JSON.parse(match[3]!) });
      }
    }
    expect(results.size).toBe(ROOTS);
    for (const { id, i } of ids) {
      expect(results.get(id)?.value, id).toEqual([`parent ${i}`, `child ${2 * i} done`, `child ${2 * i + 1} done`]);
    }

    // The outbox drains to nothing: every message was delivered and acknowledged.
    const now = () => Date.now();
    const snapshot = await until(
      "an empty outbox",
      async () => {
        const s = await store.snapshot(now());
        return s.outbox.length === 0 ? s : undefined;
      },
      30_000,
    );
    const ours = snapshot.promises.filter((p) => p.id.startsWith(`${run}-`));
    const byId = new Map<string, PromiseRecord>(ours.map((p) => [p.id, p]));
    // Each root: itself, its step, two children, each child's step and timer.
    expect(ours.length).toBe(8 * ROOTS);
    expect(ours.filter((p) => p.state === "pending")).toEqual([]);
    const tasks = snapshot.tasks.filter((t) => t.id.startsWith(`${run}-`));
    expect(tasks.filter((t) => t.state !== "fulfilled")).toEqual([]);

    // Every settle answer agrees with the final record: nobody settled a promise a second time.
    let answers = 0;
    const disagreements: string[] = [];
    const workerLines = workers.flatMap((w) => w.lines());
    for (const line of workerLines) {
      if (!line.startsWith("SETTLE ")) continue;
      const answer = JSON.parse(line.slice("SETTLE ".length)) as { kind: string; id: string; status: number; inner: number; promise: { state: string; settledAt?: number; value: unknown } | null };
      if (!answer.id.startsWith(`${run}-`)) continue;
      answers++;
      if (answer.inner !== 200 || answer.promise === null) continue;
      const final = byId.get(answer.id);
      const same = final !== undefined && final.state === answer.promise.state && final.settledAt === answer.promise.settledAt && JSON.stringify(final.value) === JSON.stringify(answer.promise.value);
      if (!same) disagreements.push(`${line} vs ${JSON.stringify(final)}`);
    }
    expect(disagreements).toEqual([]);
    expect(answers).toBeGreaterThanOrEqual(3 * ROOTS);

    // Each step's body ran exactly once.
    const effects = new Map<string, number>();
    for (const line of workerLines) {
      const match = /^EFFECT (\S+)$/.exec(line);
      if (match !== null && match[1]!.startsWith(`${run}-`)) effects.set(match[1]!, (effects.get(match[1]!) ?? 0) + 1);
    }
    expect(effects.size).toBe(3 * ROOTS);
    expect([...effects].filter(([, n]) => n !== 1)).toEqual([]);

    // Tasks the retry timer (or a lapsed lease) dispatched again: a message nobody took in time.
    let retried = 0;
    let leases = 0;
    for (const { process: server } of servers) {
      for (const line of server.lines()) {
        if (!line.includes("timeout scan: tasks dispatched again")) continue;
        const entry = JSON.parse(line) as { tasksRetried: number; leasesExpired: number };
        retried += entry.tasksRetried;
        leases += entry.leasesExpired;
      }
    }
    const latencies = [...results.values()].map((r) => r.ms).sort((a, b) => a - b);
    const quantile = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))]!;
    console.info(
      `[many-servers] ${ROOTS} functions (${ours.length} promises, ${tasks.length} tasks) on ${SERVERS} servers, ${workers.length} workers, ${clients.length} clients: ` +
        `${(elapsed / 1000).toFixed(1)} s; per function p50 ${quantile(0.5)} ms, p99 ${quantile(0.99)} ms, max ${latencies.at(-1)} ms; ` +
        `${answers} settle answers checked, ${effects.size} step effects once each; tasks dispatched again by the retry timer ${retried}, by a lapsed lease ${leases}`,
    );
    // A lost message costs its function the 30 s retry timer (an execute) or the SDK's 60 s re-registration (an unblock).
    expect(latencies.filter((ms) => ms >= 30_000).length).toBeLessThanOrEqual(Math.ceil(ROOTS / 200));
    expect(retried).toBeLessThanOrEqual(Math.ceil(ROOTS / 200));
  }, 300_000);
});
