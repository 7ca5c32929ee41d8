// What the benchmark entry points (main.ts, promises/main.ts, promises-http/main.ts) share: their
// option parsing, the children they spawn, and the teardown that stops everything they started,
// by PID, also on error and ctrl-c.
import { type ChildProcess, spawn } from "node:child_process";
import { rmSync } from "node:fs";
import { log } from "./infra.js";

// ---- options: --flag value | --flag=value, each with an environment fallback BENCH_<FLAG> ----

export interface Option {
  readonly flag: string;
  readonly def: string;
  readonly help: string;
  readonly bool?: boolean;
}

/**
 * The options both promise benchmarks measure with: the systems (run 1's order, rotated after),
 * the runs, and each window's least duration and lifecycle count (the same rule in both).
 */
export function lifecycleWindowOptions(systems: readonly string[], d: { readonly seconds: string; readonly minLifecycles: string }): Option[] {
  return [
    { flag: "systems", def: systems.join(","), help: `comma list of ${systems.join(", ")} (the order of run 1; later runs rotate it)` },
    { flag: "runs", def: "3", help: "runs (medians are reported)" },
    { flag: "seconds", def: d.seconds, help: "each measured window runs at least this long" },
    { flag: "min-lifecycles", def: d.minLifecycles, help: "…and at least this many lifecycles (capped at 4 × seconds)" },
  ];
}

const envName = (flag: string) => `BENCH_${flag.toUpperCase().replaceAll("-", "_")}`;

/**
 * The options' values: defaults, then `BENCH_<FLAG>`, then `argv`; `--help` prints them (and the
 * `systems` described, if given) and exits.
 */
export function parseArgs(options: readonly Option[], argv: readonly string[], usage: string, systems?: Record<string, string>): Record<string, string> {
  const values: Record<string, string> = {};
  for (const o of options) values[o.flag] = process.env[envName(o.flag)] ?? o.def;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "--") continue;
    if (arg === "-h" || arg === "--help") {
      console.log(`usage: ${usage} [--flag value ...]\n`);
      for (const o of options) console.log(`  --${o.flag.padEnd(22)} ${o.help} (default ${o.def || "none"}; env ${envName(o.flag)})`);
      if (systems) {
        console.log("\nSystems:");
        for (const [name, what] of Object.entries(systems)) console.log(`  ${name.padEnd(16)} ${what}`);
      }
      process.exit(0);
    }
    if (!arg.startsWith("--")) throw new Error(`unexpected argument ${arg} (try --help)`);
    const [name, inline] = arg.slice(2).split(/=(.*)/s, 2) as [string, string | undefined];
    const opt = options.find((o) => o.flag === name);
    if (!opt) throw new Error(`unknown option --${name} (try --help)`);
    if (opt.bool) values[name] = inline ?? "true";
    else {
      const v = inline ?? argv[++i];
      if (v === undefined) throw new Error(`--${name} needs a value`);
      values[name] = v;
    }
  }
  return values;
}

export const list = (s: string) => s.split(",").map((x) => x.trim()).filter(Boolean);

export const ints = (s: string, name: string) =>
  list(s).map((x) => {
    const n = Number(x);
    if (!Number.isSafeInteger(n) || n < 1) throw new Error(`--${name}: ${x} is not a positive integer`);
    return n;
  });

export function int(values: Record<string, string>, name: string, min = 0): number {
  const n = Number(values[name]);
  if (!Number.isSafeInteger(n) || n < min) throw new Error(`--${name} must be an integer ≥ ${min}, got ${values[name]}`);
  return n;
}

// ---- children and teardown ----

/**
 * What a benchmark run started and must stop: the running child (its own process group), the
 * servers (each by its `stop`) and the scratch folder. `install` stops them on exit and on
 * SIGINT/SIGTERM/SIGHUP; `teardown` runs once.
 */
export class Teardown {
  #child: ChildProcess | null = null;
  readonly #stops: (() => void)[] = [];
  #scratch: string | null = null;
  #done = false;

  /** Stops everything on exit and on a signal (`what` names it in the log line). */
  install(what: string): void {
    // pnpm pipes a filtered script's output; after ctrl-c that pipe may be gone: never die of EPIPE.
    process.stdout.on("error", () => undefined);
    process.stderr.on("error", () => undefined);
    for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
      process.on(sig, () => {
        log(`${sig}: stopping ${what}`);
        this.teardown();
        process.exit(130);
      });
    }
    process.on("exit", () => this.teardown());
  }

  /** `stop` runs at teardown, in the order added. */
  onTeardown(stop: () => void): void {
    this.#stops.push(stop);
  }

  /** The folder is removed at teardown. */
  removeAtEnd(scratch: string): void {
    this.#scratch = scratch;
  }

  /** Kills the running child's process group, if a child is running. */
  killChild(): void {
    const c = this.#child;
    if (c?.pid && c.exitCode === null && c.signalCode === null) {
      try {
        process.kill(-c.pid, "SIGKILL"); // its own process group (detached)
      } catch {
        /* gone */
      }
    }
  }

  teardown(): void {
    if (this.#done) return;
    this.#done = true;
    this.killChild();
    for (const stop of this.#stops) stop();
    if (this.#scratch) rmSync(this.#scratch, { recursive: true, force: true });
  }

  /**
   * Spawns `script` under tsx (with `nodeConditions` and, with `profDir`, a CPU profile) in its
   * own process group, as the running child until it exits; past `timeoutMs` `onTimeout` is told
   * and the child's group killed. Resolves with how it ended. With `prefix` (e.g. `["ip", "netns",
   * "exec", name]`) the node command runs through it; the prefix must exec node in its own place
   * (as `ip netns exec` does), so the process group is still the child's.
   */
  runChild(
    script: string,
    options: {
      readonly cwd: string;
      readonly env: NodeJS.ProcessEnv;
      readonly profDir: string | null;
      readonly timeoutMs: number;
      readonly onTimeout: () => void;
      readonly prefix?: readonly string[];
      /** Node's `--conditions` for resolving Belay's packages (`belayFrom`). */
      readonly nodeConditions: readonly string[];
    },
    attach: (child: ChildProcess) => void,
  ): Promise<{ code: number | null; signal: string | null; timedOut: boolean }> {
    return new Promise((done) => {
      const nodeArgs = ["--import", "tsx", ...options.nodeConditions];
      if (options.profDir) nodeArgs.push("--cpu-prof", "--cpu-prof-dir", options.profDir);
      const [file, ...args] = [...(options.prefix ?? []), process.execPath, ...nodeArgs, script];
      const child = spawn(file!, args, { cwd: options.cwd, env: options.env, detached: true, stdio: ["ignore", "pipe", "pipe"] });
      this.#child = child;
      let timedOut = false;
      const timer = setTimeout(() => {
        timedOut = true;
        options.onTimeout();
        this.killChild();
      }, options.timeoutMs);
      attach(child);
      child.on("exit", (code, signal) => {
        clearTimeout(timer);
        this.#child = null;
        done({ code, signal, timedOut });
      });
    });
  }
}

/** Calls `onLine` with each line of `stream` (the last one even without a newline). */
export function forEachLine(stream: NodeJS.ReadableStream, onLine: (line: string) => void): void {
  let buf = "";
  stream.setEncoding("utf8");
  stream.on("data", (d: string) => {
    buf += d;
    let i: number;
    while ((i = buf.indexOf("\n")) >= 0) {
      onLine(buf.slice(0, i));
      buf = buf.slice(i + 1);
    }
  });
  stream.on("end", () => buf && onLine(buf));
}
