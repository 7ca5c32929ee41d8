// belay-worker as a child process: flags, health, metrics and the SIGTERM drain. Every wait
// polls state (store, health, metrics) with a generous deadline, and gates, not timers, decide
// when jobs end: nothing here depends on how fast the machine is, so it holds under load.
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { JobStore } from "@belay/contract";
import { openStore } from "@belay/host";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const appDir = fileURLToPath(new URL("..", import.meta.url));
const tsx = join(appDir, "node_modules", ".bin", "tsx");
/** How long any one condition may take to come true, even on a machine busy with other work. */
const PATIENCE_MS = 30_000;

function belayWorker(args: readonly string[]): ChildProcess {
  return spawn(tsx, ["--conditions=@belay/source", "src/main.ts", ...args], { cwd: appDir, stdio: ["ignore", "pipe", "pipe"] });
}

describe("belay-worker as a process", () => {
  let dir: string;
  let storeUrl: string;
  let store: JobStore;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "belay-worker-cli-"));
    storeUrl = `sqlite:${join(dir, "belay.db")}`;
    store = await openStore(storeUrl);
    await store.migrate();
  });

  afterAll(async () => {
    await store?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("prints its usage for --help (exit 0) and names a bad flag (exit 2)", () => {
    const run = (args: string[]) => spawnSync(tsx, ["--conditions=@belay/source", "src/main.ts", ...args], { cwd: appDir, encoding: "utf8", timeout: 60_000 });
    const help = run(["--help"]);
    expect(help.status, help.stderr).toBe(0);
    expect(help.stdout).toContain("usage: belay-worker --store <url> --jobs <module>");
    const bad = run(["--store", "memory:", "--jobs", "test/fixtures/jobs.mjs", "--pool-size", "lots"]);
    expect(bad.status, bad.stderr).toBe(2);
    expect(bad.stderr).toContain("--pool-size");
  }, 120_000);

  it("on SIGTERM turns unready first, finishes or releases its running jobs, and exits 0", async () => {
    // Six jobs end once their gate opens (the test opens it only after the stop has begun); two
    // never end on their own, so the stop deadline releases them.
    const gate = join(dir, "gate");
    const now = Date.now();
    const jobs = [
      ...Array.from({ length: 6 }, (_, i) => ({ id: `gated-${i}`, payload: { gate } })),
      ...Array.from({ length: 2 }, (_, i) => ({ id: `stubborn-${i}`, payload: {} })),
    ];
    await store.enqueue({
      jobs: jobs.map((j) => ({ id: j.id, jobName: "nap", queue: "default", payload: JSON.stringify(j.payload), dueAt: now })),
      now,
    });
    const child = belayWorker([
      "--store",
      storeUrl,
      "--jobs",
      "test/fixtures/jobs.mjs",
      "--port",
      "0",
      "--pool-size",
      "8",
      // Long enough for the gated jobs to finish after the gate opens, on any machine; the
      // stubborn ones hold the process this long.
      "--stop-timeout-ms",
      "10000",
    ]);
    let output = "";
    child.stdout!.on("data", (chunk) => (output += chunk));
    child.stderr!.on("data", (chunk) => (output += chunk));
    let exitCode: number | null | undefined;
    const exited = new Promise<number | null>((resolve) =>
      child.on("exit", (code) => {
        exitCode = code;
        resolve(code);
      }),
    );
    try {
      const url = await waitFor("the health listener", () => /health and metrics at (http:\/\/\S+)/.exec(output)?.[1], () => output);
      await waitFor("readyz 200", async () => ((await fetch(`${url}/readyz`)).status === 200 ? true : undefined), () => output);
      // All eight running at once: leased in the store, started by the handlers, executing per pump.
      await waitFor(
        "eight jobs leased and running",
        async () => {
          const leased = (await store.countJobs()).find((c) => c.queue === "default" && c.state === "leased")?.count;
          const metrics = await (await fetch(`${url}/metrics`)).text();
          const health = (await (await fetch(`${url}/healthz`)).json()) as { groups: { pumps: { executing: number }[] }[] };
          const running =
            leased === 8 &&
            metrics.includes('belay_jobs_started_total{queue="default",job_name="nap"} 8') &&
            health.groups[0]?.pumps[0]?.executing === 8;
          return running ? metrics : undefined;
        },
        () => output,
      ).then((metrics) => {
        expect(metrics).toMatch(/belay_queue_depth\{queue="default",state="leased"\} 8/);
        expect(metrics).toContain('belay_slots_capacity{group="default"} 8');
      });
      expect((await fetch(`${url}/healthz`)).status).toBe(200);

      child.kill("SIGTERM");
      const readiness: number[] = [];
      while (exitCode === undefined) {
        try {
          const status = (await fetch(`${url}/readyz`)).status;
          readiness.push(status);
          // The drain has begun: only now may the gated jobs end, so they end during the stop.
          if (status === 503) writeFileSync(gate, "");
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

      for (const { id, payload } of jobs) {
        const job = await store.getJob(id);
        if ("gate" in payload) expect(job, `${id}\n${output}`).toMatchObject({ state: "succeeded" });
        else expect(job, `${id}\n${output}`).toMatchObject({ state: "scheduled", attempt: 1, releases: 1, leaseOwner: null });
      }
    } finally {
      if (exitCode === undefined) child.kill("SIGKILL");
    }
  }, 180_000);
});

/** Polls `probe` until it yields a value; fails after {@link PATIENCE_MS}, showing the output so far. */
async function waitFor<T>(what: string, probe: () => T | undefined | Promise<T | undefined>, context: () => string): Promise<T> {
  const deadline = Date.now() + PATIENCE_MS;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch {
      // not yet
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; output so far:\n${context()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
