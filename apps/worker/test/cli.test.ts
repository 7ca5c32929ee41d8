import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { JobStore } from "@belay/contract";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openStore } from "../src/index.js";

const appDir = fileURLToPath(new URL("..", import.meta.url));
const tsx = join(appDir, "node_modules", ".bin", "tsx");

describe("belay-worker as a process", () => {
  let dir: string;
  let store: JobStore;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "belay-worker-host-"));
    store = await openStore(`sqlite:${join(dir, "belay.db")}`);
    await store.migrate();
  });

  afterAll(async () => {
    await store?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("on SIGTERM turns unready first, finishes or releases its running jobs, and exits 0", async () => {
    const now = Date.now();
    const jobs = [
      ...Array.from({ length: 6 }, (_, i) => ({ id: `quick-${i}`, ms: 1_000 })),
      ...Array.from({ length: 2 }, (_, i) => ({ id: `slow-${i}`, ms: 60_000 })),
    ];
    await store.enqueue({
      jobs: jobs.map((j) => ({ id: j.id, jobName: "nap", queue: "default", payload: JSON.stringify({ ms: j.ms }), dueAt: now })),
      now,
    });
    const child: ChildProcess = spawn(
      tsx,
      [
        "--conditions=@belay/source",
        "src/main.ts",
        "--store",
        `sqlite:${join(dir, "belay.db")}`,
        "--jobs",
        "test/fixtures/jobs.mjs",
        "--port",
        "0",
        "--pool-size",
        "8",
        "--stop-timeout-ms",
        "3000",
      ],
      { cwd: appDir, stdio: ["ignore", "pipe", "pipe"] },
    );
    let output = "";
    child.stdout!.on("data", (chunk) => (output += chunk));
    child.stderr!.on("data", (chunk) => (output += chunk));
    const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));

    const url = await waitFor(() => /health and metrics at (http:\/\/\S+)/.exec(output)?.[1], 30_000, () => output);
    await waitFor(async () => ((await fetch(`${url}/readyz`)).status === 200 ? true : undefined), 10_000, () => output);
    // Every job running: the quick ones finish in a second, the slow ones would take a minute.
    await waitFor(async () => ((await store.countJobs()).some((c) => c.state === "leased" && c.count === 8) ? true : undefined), 10_000, () => output);

    const metrics = await (await fetch(`${url}/metrics`)).text();
    expect(metrics).toContain('belay_jobs_started_total{queue="default",job_name="nap"} 8');
    expect(metrics).toMatch(/belay_queue_depth\{queue="default",state="leased"\} 8/);
    expect(metrics).toContain('belay_slots_capacity{group="default"} 8');
    const healthz = await fetch(`${url}/healthz`);
    expect(healthz.status).toBe(200);
    const body = (await healthz.json()) as { groups: { pumps: { executing: number }[] }[] };
    expect(body.groups[0]!.pumps[0]!.executing).toBe(8);

    child.kill("SIGTERM");
    const readiness: number[] = [];
    let exitCode: number | null | undefined;
    void exited.then((code) => (exitCode = code));
    while (exitCode === undefined) {
      try {
        readiness.push((await fetch(`${url}/readyz`)).status);
      } catch {
        break; // the listener closed: the process is on its way out
      }
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(await exited, output).toBe(0);
    // The signal lands asynchronously, so the first probes may still see 200; once readyz turns
    // 503 it must stay so, and it must do so while the process still serves (before it exits).
    const firstUnready = readiness.indexOf(503);
    expect(firstUnready, `readyz while stopping: ${readiness.join(",")}`).toBeGreaterThanOrEqual(0);
    expect(readiness.slice(firstUnready).every((s) => s === 503), `readyz while stopping: ${readiness.join(",")}`).toBe(true);

    for (const { id, ms } of jobs) {
      const job = await store.getJob(id);
      if (ms === 1_000) expect(job, id).toMatchObject({ state: "succeeded" });
      else expect(job, id).toMatchObject({ state: "scheduled", attempt: 1, releases: 1, leaseOwner: null });
    }
  }, 60_000);
});

async function waitFor<T>(probe: () => T | undefined | Promise<T | undefined>, ms: number, context: () => string): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch {
      // not yet
    }
    if (Date.now() > deadline) throw new Error(`timed out; output so far:\n${context()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
