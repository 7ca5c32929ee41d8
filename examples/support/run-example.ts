import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { FreshProject } from "./fresh-project.js";
import type { ReadmeExample } from "./readme-examples.js";

/** How long to wait for an example to print its line, to exit, or to stop after SIGTERM: generous, for a loaded machine. */
const DEADLINE_MS = 60_000;
/** After its line, a worker example must still be running this much later (the bug this catches exited 13 ms after starting). */
const STILL_RUNNING_AFTER_MS = 2_000;

/** The file an example is written to: a test file for vitest, a module otherwise. */
export function exampleFile(example: ReadmeExample): string {
  return `${example.name}${example.runner === "vitest" ? ".test" : ""}.${example.language}`;
}

/** The environment of an example's process: the caller's, minus what the test runner set and what the examples read. */
function childEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (/^VITEST/.test(key) || ["TEST", "NODE_ENV", "NODE_OPTIONS", "DATABASE_URL", "BELAY_STORE"].includes(key)) continue;
    env[key] = value;
  }
  return { ...env, NO_COLOR: "1", FORCE_COLOR: "0", ...extra };
}

class Watched {
  output = "";
  exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  readonly #waiters = new Set<() => void>();

  constructor(readonly child: ChildProcess) {
    const append = (chunk: Buffer) => {
      this.output += chunk.toString("utf8");
      this.#wake();
    };
    child.stdout?.on("data", append);
    child.stderr?.on("data", append);
    child.on("error", (error) => {
      this.output += `\n[spawn error] ${error.message}\n`;
      this.exit ??= { code: null, signal: null };
      this.#wake();
    });
    child.on("close", (code, signal) => {
      this.exit = { code, signal };
      this.#wake();
    });
  }

  #wake(): void {
    for (const waiter of this.#waiters) waiter();
  }

  /** Resolves when `done()` holds (true) or after `ms` (false); checked on every output chunk and on exit. */
  until(done: () => boolean, ms: number): Promise<boolean> {
    if (done()) return Promise.resolve(true);
    return new Promise((resolve) => {
      const check = () => {
        if (!done()) return;
        finish(true);
      };
      const finish = (result: boolean) => {
        clearTimeout(timer);
        this.#waiters.delete(check);
        resolve(result);
      };
      const timer = setTimeout(() => finish(done()), ms);
      this.#waiters.add(check);
    });
  }
}

const describeExit = (exit: Watched["exit"]) => (exit === undefined ? "still running" : exit.signal ? `killed by ${exit.signal}` : `exited with code ${exit.code}`);

/**
 * Runs one example as a child process in `cwd` (a folder inside the fresh project) and checks it
 * behaves as its marker says. Throws with the example's whole output when it does not.
 */
export async function runExample(example: ReadmeExample, project: FreshProject, cwd: string, env: Record<string, string>): Promise<string> {
  mkdirSync(cwd, { recursive: true });
  const file = exampleFile(example);
  writeFileSync(join(cwd, file), example.code);
  const [command, args] =
    example.runner === "vitest"
      ? [project.bin("vitest"), ["run", file]]
      : example.language === "ts"
        ? [project.bin("tsx"), [file]]
        : [process.execPath, [file]];
  // Its own process group, so whatever it starts is killed with it if it misbehaves.
  const child = spawn(command, args, { cwd, env: childEnv(env), stdio: ["ignore", "pipe", "pipe"], detached: true });
  const watched = new Watched(child);
  const fail = (problem: string): never => {
    const shownEnv = Object.entries(env).map(([k, v]) => `${k}=${v} `).join("");
    throw new Error(
      `README example "${example.name}" (${example.readme}:${example.line}): ${problem}\n` +
        `  ran: ${shownEnv}${command} ${args.join(" ")}  (in ${cwd})\n` +
        `----- its output -----\n${watched.output || "(none)"}\n----- end of its output -----`,
    );
  };
  const printed = () => example.prints.every((text) => watched.output.includes(text));
  const expected = example.prints.map((text) => `"${text}"`).join(" and ");
  const exited = () => watched.exit !== undefined;
  try {
    if (!example.runsUntilStopped) {
      if (!(await watched.until(exited, DEADLINE_MS))) fail(`did not exit within ${DEADLINE_MS / 1000} s (it is not marked "runs until stopped")`);
      if (watched.exit!.code !== 0) fail(describeExit(watched.exit));
      if (!printed()) fail(`exited 0 without printing ${expected}`);
      return watched.output;
    }
    await watched.until(() => printed() || exited(), DEADLINE_MS);
    if (!printed()) fail(exited() ? `${describeExit(watched.exit)} before printing ${expected}` : `did not print ${expected} within ${DEADLINE_MS / 1000} s`);
    if (await watched.until(exited, STILL_RUNNING_AFTER_MS)) {
      fail(`${describeExit(watched.exit)} on its own after printing ${expected}: a started worker must keep the process running until it is stopped`);
    }
    child.kill("SIGTERM");
    if (!(await watched.until(exited, DEADLINE_MS))) fail(`did not exit within ${DEADLINE_MS / 1000} s of SIGTERM (does it stop its worker and close its store on SIGTERM?)`);
    if (watched.exit!.code !== 0) fail(`${describeExit(watched.exit)} after SIGTERM, not 0: it should handle SIGTERM with a graceful stop (worker.stop(), then close the store)`);
    return watched.output;
  } finally {
    if (child.pid !== undefined) {
      try {
        process.kill(-child.pid, "SIGKILL");
      } catch {
        // the group is gone already
      }
    }
  }
}
