import { fork } from "node:child_process";
import { join } from "node:path";
import Database from "better-sqlite3";
import { expect } from "vitest";
import { testDir } from "../../../../tests/support/fixtures.mjs";
import { fixtureScript } from "./bundle.js";

/**
 * Forks `script` (a bundled fixture) with `args`; each line it writes to stdout is one write it
 * has had acknowledged. Once `count` lines are in it is killed with SIGKILL, on the spot (its
 * other writes are in flight). Returns every line it wrote, those still in the pipe at the kill
 * too: each was acknowledged before the kill.
 */
export async function acknowledgedBeforeKill(script: string, args: readonly string[], count: number): Promise<string[]> {
  const child = fork(script, [...args], { execArgv: [], stdio: ["ignore", "pipe", "inherit", "ipc"] });
  const exited = new Promise<NodeJS.Signals | null>((resolve) => child.once("exit", (_code, signal) => resolve(signal)));
  // 'close' comes after the child's stdout has ended: every line it wrote has been read.
  const drained = new Promise<void>((resolve) => child.once("close", () => resolve()));
  const acknowledged: string[] = [];
  let pending = "";
  await new Promise<void>((resolve, reject) => {
    child.once("exit", () => reject(new Error("the child exited before it was killed")));
    child.stdout!.setEncoding("utf8").on("data", (chunk: string) => {
      const lines = (pending + chunk).split("\n");
      pending = lines.pop()!;
      acknowledged.push(...lines);
      if (acknowledged.length >= count) {
        child.kill("SIGKILL");
        resolve();
      }
    });
  });
  expect(await exited).toBe("SIGKILL");
  await drained;
  acknowledged.push(...pending.split("\n").filter((line) => line.length > 0));
  return acknowledged;
}

/**
 * A crash run for the current test file: the fixture `name` (writing to the SQLite file it is given
 * in a loop) is bundled before the file's tests; each call runs it on a new file in a temporary
 * folder (`tmpPrefix`) until 3,000 of its writes are acknowledged, kills it with SIGKILL, and checks
 * that the file passes SQLite's integrity check. Resolves to the acknowledged lines (see
 * {@link acknowledgedBeforeKill}) and a store `open` made on the file, migrated.
 */
export function killedMidLoad<S extends { migrate(): Promise<unknown> }>(
  name: string,
  tmpPrefix: string,
  open: (path: string) => S,
): () => Promise<{ acknowledged: string[]; store: S }> {
  const dir = testDir(tmpPrefix);
  const fixture = fixtureScript(name);
  let runs = 0;
  return async () => {
    const path = join(dir, `crash-${++runs}.db`);
    const acknowledged = await acknowledgedBeforeKill(fixture.script, [path], 3_000);
    const check = new Database(path, { readonly: true });
    expect(check.pragma("integrity_check", { simple: true })).toBe("ok");
    check.close();
    const store = open(path);
    await store.migrate();
    return { acknowledged, store };
  };
}
