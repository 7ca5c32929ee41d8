import { fork } from "node:child_process";
import { expect } from "vitest";

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
