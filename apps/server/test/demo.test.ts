import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { killGroup } from "./processes.js";

// The README's main command: `pnpm start` runs the root script, which runs this package's `demo`
// script. This runs that script's command line as pnpm would (with INIT_CWD set to a temporary
// folder, where the demo's belay.db goes), waits for the printed dashboard link, and stops it.

const PACKAGE = fileURLToPath(new URL("..", import.meta.url));
const ROOT = fileURLToPath(new URL("../../..", import.meta.url));
const scripts = (dir: string) => (JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as { scripts: Record<string, string> }).scripts;

describe("pnpm start (the demo)", () => {
  const workdir = mkdtempSync(join(tmpdir(), "belay-demo-"));
  let child: ChildProcess | null = null;
  afterAll(() => {
    // A safety net for a failed run: the demo runs in its own process group; end all of it.
    killGroup(child);
    rmSync(workdir, { recursive: true, force: true });
  });

  it("the root start script runs this package's demo script", () => {
    expect(scripts(ROOT)["start"]).toBe("pnpm --filter @belay/server demo");
    expect(scripts(PACKAGE)["demo"]).toMatch(/^tsx --conditions=@belay\/source /);
  });

  it("serves the dashboard at the printed link, writes belay.db where it was started, and stops on SIGTERM", async () => {
    // `exec`: the shell becomes the demo process, so SIGTERM reaches it as it would from pnpm.
    const command = `exec ${scripts(PACKAGE)["demo"]} --port 0 --promises-port 0`;
    child = spawn("sh", ["-c", command], {
      cwd: PACKAGE,
      detached: true,
      env: { ...process.env, INIT_CWD: workdir, PATH: `${join(PACKAGE, "node_modules", ".bin")}${delimiter}${process.env["PATH"]}` },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout!.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child!.once("exit", (code) => resolve(code)));

    const deadline = Date.now() + 45_000;
    let link: string | null = null;
    while (link === null && Date.now() < deadline && child.exitCode === null) {
      link = /Dashboard: (http:\/\/\S+\?token=\S+)/.exec(output)?.[1] ?? null;
      if (link === null) await new Promise((r) => setTimeout(r, 100));
    }
    expect(link, `no dashboard link printed:\n${output}`).not.toBeNull();

    // Both listeners' addresses are printed; the promise listener answers.
    const promises = /Promises: +(http:\/\/\S+)/.exec(output)?.[1];
    expect(promises, `no promise listener printed:\n${output}`).toBeDefined();
    expect((await fetch(`${promises}/ready`)).status).toBe(200);

    const page = await fetch(link!);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain("Belay");
    const base = new URL(link!).origin;
    const token = new URL(link!).searchParams.get("token")!;
    const me = await (await fetch(`${base}/api/v1/me`, { headers: { authorization: `Bearer ${token}` } })).json();
    expect(me).toMatchObject({ actor: "admin" });
    // The worker runs the demo's jobs and the trickle keeps enqueueing.
    let succeeded = 0;
    for (const deadline = Date.now() + 30_000; succeeded === 0 && Date.now() < deadline; ) {
      const counts = (await (await fetch(`${base}/api/v1/counts`)).json()) as { totals: Record<string, number> };
      succeeded = counts.totals["succeeded"] ?? 0;
      if (succeeded === 0) await new Promise((r) => setTimeout(r, 200));
    }
    expect(succeeded).toBeGreaterThan(0);
    const schedules = (await (await fetch(`${base}/api/v1/schedules`)).json()) as { schedules: { id: string }[] };
    expect(schedules.schedules.map((s) => s.id)).toContain("heartbeat");

    expect(existsSync(join(workdir, "belay.db"))).toBe(true);
    expect(existsSync(join(PACKAGE, "belay.db"))).toBe(false);
    expect(existsSync(join(ROOT, "belay.db"))).toBe(false);

    child.kill("SIGTERM");
    expect(await exited).toBe(0);
  }, 90_000);
});
