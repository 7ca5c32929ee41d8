import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import { PostgresPromiseStore } from "../src/index.js";
import { pgTarget, testDatabase } from "./pg-target.js";
import { buildForChildren } from "./support/children.js";

// Durable before acknowledged, across a real process boundary: a child process writing promises
// (importing the built package, dist/) is SIGKILLed right after acknowledged writes; every write
// it acknowledged is read back, as it was acknowledged.

const target = await pgTarget("promise-processes.test.ts");
const url = target.url;
const packageDir = fileURLToPath(new URL("..", import.meta.url));
const fixture = fileURLToPath(new URL("./fixtures/promise-writer-child.mjs", import.meta.url));
const T = 1_800_000_000_000;

function start(env: Record<string, string>): { process: ChildProcess; lines: string[]; exited: Promise<NodeJS.Signals | null>; stderr: () => string } {
  const child = spawn(process.execPath, [fixture], { cwd: packageDir, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  const lines: string[] = [];
  let partial = "";
  let stderr = "";
  child.stdout!.setEncoding("utf8").on("data", (chunk: string) => {
    partial += chunk;
    const complete = partial.split("\n");
    partial = complete.pop()!;
    lines.push(...complete);
  });
  child.stderr!.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on("exit", (_code, signal) => resolve(signal)));
  return { process: child, lines, exited, stderr: () => stderr };
}

describe.skipIf(url === undefined)(`postgres promise store across processes (${target.reason})`, () => {
  const { pool, schema: newSchema } = testDatabase(target);
  beforeAll(() => buildForChildren(packageDir), 120_000);

  it("a writer killed (SIGKILL) right after acknowledged writes: every acknowledged create and settle is read back", async () => {
    const schema = newSchema("pcrash");
    const store = new PostgresPromiseStore({ pool, schema });
    await store.migrate();
    const child = start({ URL: url!, SCHEMA: schema, PREFIX: "w", T: String(T), IN_FLIGHT: "8" });
    // Kill it the instant it has acknowledged enough (with operations in flight on every connection).
    await new Promise<void>((resolve, reject) => {
      const timer = setInterval(() => {
        if (child.lines.filter((l) => l.startsWith("settled ")).length >= 400) {
          child.process.kill("SIGKILL");
          clearInterval(timer);
          resolve();
        }
      }, 1);
      void child.exited.then((signal) => {
        if (signal !== "SIGKILL") {
          clearInterval(timer);
          reject(new Error(`the writer exited on its own:\n${child.stderr()}`));
        }
      });
    });
    expect(await child.exited).toBe("SIGKILL");
    await new Promise((resolve) => setTimeout(resolve, 100)); // the last lines written before the kill
    const created = child.lines.filter((l) => l.startsWith("created ")).map((l) => l.slice(8));
    const settled = child.lines.filter((l) => l.startsWith("settled ")).map((l) => l.slice(8));
    expect(created.length).toBeGreaterThanOrEqual(800);

    const snap = await store.snapshot(T + 3);
    const stored = new Map(snap.promises.map((p) => [p.id, p]));
    const lost = created.filter((id) => !stored.has(id));
    expect(lost, "acknowledged creates missing after the kill").toEqual([]);
    const unsettled = settled.filter((id) => stored.get(id)?.state !== "resolved");
    expect(unsettled, "acknowledged settles not resolved after the kill").toEqual([]);
    for (const id of settled) expect(stored.get(id)?.value).toEqual({ data: `done-${id.slice(2)}` });
    for (const id of created) expect(stored.get(id)?.param).toEqual({ data: id.slice(2) });
    const tasks = new Map(snap.tasks.map((t) => [t.id, t]));
    for (const id of settled) expect(tasks.get(id)?.state).toBe("fulfilled");
    // Whatever was in flight at the kill either committed whole or not at all: no task without its promise.
    expect(snap.tasks.filter((t) => !stored.has(t.id))).toEqual([]);
    console.info(`[promise crash] ${created.length} creates and ${settled.length} settles acknowledged before SIGKILL, all read back; ${snap.promises.length} promises stored`);
    await store.close();
  }, 120_000);
});
