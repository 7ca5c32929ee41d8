import { type ChildProcess, execFileSync, spawn } from "node:child_process";

// What the tests that run real worker processes share: building what the children import, a
// child with its output collected line by line, and the overlap count of the intervals they report.

/**
 * Builds this package's dist/ and its dependencies' (turbo builds those first; a fresh clone has
 * none): the children import what would be published.
 */
export function buildForChildren(packageDir: string): void {
  try {
    execFileSync("pnpm", ["exec", "turbo", "run", "build", "--filter=@belay/postgres", "--output-logs=errors-only"], { cwd: packageDir, stdio: "pipe" });
  } catch (error) {
    const output = (error as { stdout?: Buffer }).stdout?.toString() ?? "";
    throw new Error(`building @belay/postgres and its dependencies for the child processes failed:\n${output}`);
  }
}

export interface Child {
  readonly process: ChildProcess;
  readonly lines: string[];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>;
  /** Resolves once a printed line satisfies `match`. */
  waitFor(match: (line: string) => boolean): Promise<void>;
}

/** Starts `command` (its first element the program) in `cwd`; a non-zero exit prints its stderr. */
export function startChild(command: readonly string[], cwd: string, env: Record<string, string> = {}): Child {
  const child = spawn(command[0]!, command.slice(1), { cwd, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  const lines: string[] = [];
  const waiters: { match: (line: string) => boolean; resolve: () => void }[] = [];
  let partial = "";
  child.stdout!.setEncoding("utf8").on("data", (chunk: string) => {
    partial += chunk;
    const complete = partial.split("\n");
    partial = complete.pop()!;
    for (const line of complete) {
      lines.push(line);
      for (const waiter of [...waiters]) {
        if (waiter.match(line)) {
          waiters.splice(waiters.indexOf(waiter), 1);
          waiter.resolve();
        }
      }
    }
  });
  let stderr = "";
  child.stderr!.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>((resolve) =>
    child.on("exit", (code, signal) => {
      if (code !== 0 && signal === null) console.error(`[${command.join(" ")}] exited ${code}:\n${stderr}`);
      resolve({ code, signal, stderr });
    }),
  );
  return {
    process: child,
    lines,
    exited,
    waitFor: (match) => (lines.some(match) ? Promise.resolve() : new Promise<void>((resolve) => waiters.push({ match, resolve }))),
  };
}

/** The most intervals open at one instant (at equal instants, ends before starts: touching intervals do not overlap). */
export function maxOverlap(intervals: readonly [number, number, string][]): number {
  const events = intervals.flatMap(([from, to]) => [
    [from, 1],
    [to, -1],
  ]);
  events.sort((a, b) => a[0]! - b[0]! || a[1]! - b[1]!);
  let open = 0;
  let max = 0;
  for (const [, delta] of events) max = Math.max(max, (open += delta!));
  return max;
}
