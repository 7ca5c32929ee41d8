import type { ChildProcess } from "node:child_process";
import { afterEach } from "vitest";

/**
 * Kills the process group of `child` (spawned `detached`, so it leads one) if it still runs: the
 * safety net for a test that failed before stopping what it started.
 */
export function killGroup(child: ChildProcess | null): void {
  if (child?.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  try {
    process.kill(-child.pid, "SIGKILL");
  } catch {
    // already gone
  }
}

/**
 * For a test file that spawns processes: answers `track`, which the file calls on each child it
 * spawns (detached); after each test, the groups of those still running are killed.
 */
export function trackedChildren(): (child: ChildProcess) => ChildProcess {
  const children: ChildProcess[] = [];
  afterEach(() => {
    for (const child of children.splice(0)) killGroup(child);
  });
  return (child) => {
    children.push(child);
    return child;
  };
}
