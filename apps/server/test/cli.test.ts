import { type ChildProcess, spawn } from "node:child_process";
import { delimiter, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { trackedChildren } from "./processes.js";

// `belay-server` as a process: flags, an embedded worker from a jobs module, graceful stop.

const PACKAGE = fileURLToPath(new URL("..", import.meta.url));
const track = trackedChildren();

function run(args: string[]): { child: ChildProcess; output: () => string; exited: Promise<number | null> } {
  const child = spawn("tsx", ["--conditions=@belay/source", "src/main.ts", ...args], {
    cwd: PACKAGE,
    detached: true,
    env: { ...process.env, PATH: `${join(PACKAGE, "node_modules", ".bin")}${delimiter}${process.env["PATH"]}`, BELAY_SERVER_TOKENS: "" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  track(child);
  let output = "";
  child.stdout!.on("data", (c: Buffer) => (output += c.toString()));
  child.stderr!.on("data", (c: Buffer) => (output += c.toString()));
  return { child, output: () => output, exited: new Promise((resolve) => child.once("exit", (code) => resolve(code))) };
}

async function waitFor(pattern: RegExp, output: () => string, timeoutMs = 30_000): Promise<RegExpExecArray> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const match = pattern.exec(output());
    if (match) return match;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${pattern}:\n${output()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe("belay-server", () => {
  it("prints its usage for --help and refuses bad flags with exit code 2", async () => {
    const help = run(["--help"]);
    expect(await help.exited).toBe(0);
    expect(help.output()).toContain("usage: belay-server --store <url>");
    const bad = run(["--store", "memory:", "--token", "nocolon"]);
    expect(await bad.exited).toBe(2);
    expect(bad.output()).toContain("token");
  }, 60_000);

  it("serves the API and dashboard with an embedded worker, and stops gracefully on SIGTERM", async () => {
    const server = run(["--store", "memory:", "--port", "0", "--promises-port", "0", "--migrate", "--with-worker", "--jobs", "test/fixtures/jobs.ts", "--token", "ops:secret-for-ops"]);
    const [, base] = await waitFor(/dashboard (http:\/\/\S+?)\/ /, server.output);
    // The durable-promise listener of the same process: with a token configured, anonymous callers get nothing.
    const [, promises] = await waitFor(/durable promises (http:\/\/\S+)/, server.output);
    expect(server.output()).toContain("a token with the promises permission required");
    expect((await fetch(`${promises}/health`)).status).toBe(200);
    const envelope = (token?: string) =>
      fetch(promises!, {
        method: "POST",
        headers: { "content-type": "application/json", ...(token === undefined ? {} : { authorization: `Bearer ${token}` }) },
        body: JSON.stringify({ kind: "promise.create", head: { corrId: "c1", version: "2026-04-01" }, data: { id: "p1", timeoutAt: Date.now() + 60_000 } }),
      });
    expect((await envelope()).status).toBe(401);
    const created = await envelope("secret-for-ops");
    expect(created.status).toBe(200);
    expect(await created.json()).toMatchObject({ kind: "promise.create", head: { corrId: "c1", status: 200 }, data: { promise: { id: "p1", state: "pending" } } });
    const enqueue = await fetch(`${base}/api/v1/jobs`, {
      method: "POST",
      headers: { authorization: "Bearer secret-for-ops", "content-type": "application/json" },
      body: JSON.stringify({ jobs: [{ id: "g1", jobName: "greet", payload: { name: "ada" } }] }),
    });
    expect(enqueue.status).toBe(201);
    let state = "";
    for (const deadline = Date.now() + 30_000; state !== "succeeded" && Date.now() < deadline; ) {
      const detail = (await (await fetch(`${base}/api/v1/jobs/g1`, { headers: { authorization: "Bearer secret-for-ops" } })).json()) as {
        job: { state: string; queue: string };
        output: unknown;
      };
      state = detail.job.state;
      if (state === "succeeded") {
        expect(detail.job.queue).toBe("greetings");
        expect(detail.output).toEqual({ greeting: "hello ada" });
      } else await new Promise((r) => setTimeout(r, 100));
    }
    expect(state).toBe("succeeded");
    const health = (await (await fetch(`${base}/api/v1/health`)).json()) as { worker: { status: string } };
    expect(health.worker.status).toBe("running");
    const schedules = (await (await fetch(`${base}/api/v1/schedules`)).json()) as { schedules: { id: string }[] };
    expect(schedules.schedules.map((s) => s.id)).toEqual(["every-minute"]);
    const invalid = await fetch(`${base}/api/v1/jobs`, {
      method: "POST",
      headers: { authorization: "Bearer secret-for-ops", "content-type": "application/json" },
      body: JSON.stringify({ jobs: [{ jobName: "greet", payload: { name: 42 } }] }),
    });
    expect(invalid.status).toBe(400);
    server.child.kill("SIGTERM");
    expect(await server.exited).toBe(0);
    expect(server.output()).toContain("belay-server: stopped");
  }, 60_000);
});
