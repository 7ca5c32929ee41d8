// What the benchmark entry points (main.ts, promises/main.ts, promises-http/main.ts) record about a
// run and how they end it: the revision, machine and versions measured, the cluster's durability
// settings, the results files (JSON saved after every system, markdown at the end), `--render`
// of an earlier run, and the top-level error handling.
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { cpus, release, tmpdir, totalmem } from "node:os";
import { dirname, join, resolve } from "node:path";
import type pg from "pg";
import type { Option, Teardown } from "./cli.js";
import { log, makeScratch } from "./infra.js";

/** A file-name-safe timestamp of now, to the second (`2026-04-01T12-00-00`). */
export const fileStamp = (): string => new Date().toISOString().replace(/[:]/g, "-").replace(/\..*/, "");

/** `list` with run `run` (1-based) starting at its `run`-th entry, so no entry always goes first. */
export const rotated = <T>(list: readonly T[], run: number): T[] => list.map((_, i) => list[(i + run - 1) % list.length]!);

/**
 * The Belay revision measured: `BENCH_REVISION` (e.g. for a `git archive` snapshot of a commit),
 * else git's, noting uncommitted changes under `dirs` (relative to the repository root).
 */
export function gitDescribe(pkg: string, dirs: readonly string[]): string {
  if (process.env["BENCH_REVISION"]) return process.env["BENCH_REVISION"];
  const r = spawnSync("git", ["-C", pkg, "log", "-1", "--format=%h %s"], { encoding: "utf8" });
  const dirty = spawnSync("git", ["-C", pkg, "status", "--porcelain", "--", ...dirs.map((d) => `../${d}`)], { encoding: "utf8" });
  return `${r.stdout.trim().slice(0, 80)}${dirty.stdout.trim() ? ` (+ uncommitted changes in ${dirs.map((d) => `${d}/`).join(" or ")})` : ""}`;
}

/** The installed version of package `name` below `dir`, or `null` when it is not there. */
export function versionOf(dir: string, name: string): string | null {
  try {
    return (JSON.parse(readFileSync(join(dir, "node_modules", name, "package.json"), "utf8")) as { version: string }).version;
  } catch {
    return null;
  }
}

/** The machine, for the record. */
export const machine = () => ({ nproc: cpus().length, cpu: cpus()[0]?.model ?? "?", mem_gib: Math.round(totalmem() / 2 ** 30), kernel: release() });

/**
 * The options every entry point ends with, read by {@link resultsPaths} and {@link scratchFolder}:
 * the port naming the cluster's socket, the scratch folder, where results go (`<results>` is the
 * folder's default, `prefix` starts the files' names), and CPU profiles of `profiled` (one folder
 * per `cell`).
 */
export function runOptions(o: { readonly pgPort: string; readonly results: string; readonly prefix: string; readonly profiled: string; readonly cell: string }): Option[] {
  return [
    { flag: "pg-port", def: o.pgPort, help: "port naming the cluster's unix socket only (no TCP; each bench has its own, so they can run side by side)" },
    { flag: "scratch", def: "", help: "scratch folder (default: a new one in the OS temp folder, removed at the end)" },
    { flag: "out", def: o.results, help: `a folder for ${o.prefix}<timestamp>.json and .md, or a path ending in .json (the .md goes beside it)` },
    { flag: "keep", def: "false", help: "keep the scratch folder (cluster data, logs, SQLite files)", bool: true },
    { flag: "cpu-prof", def: "false", help: `run ${o.profiled} with --cpu-prof (profiles under <out>/${o.prefix}<timestamp>-profiles/${o.cell}/)`, bool: true },
    {
      flag: "belay-from",
      def: "dist",
      help: "run Belay's packages as users install them (dist: built first, by turbo, cached when fresh) or from their TypeScript sources through tsx (source: no build, slower)",
    },
  ];
}

/**
 * Where the children load Belay's packages from (`--belay-from`): `dist` builds them first (turbo
 * rebuilds only what changed) and loads the built JavaScript, as a user's application does;
 * `source` loads the TypeScript through tsx's transform, whose wrappers (`__name` around every
 * function) cost a few per cent of CPU. Returns the node arguments that choose it.
 */
export function belayFrom(values: Record<string, string>, pkg: string): { readonly from: "dist" | "source"; readonly nodeConditions: readonly string[] } {
  const from = values["belay-from"];
  if (from === "source") return { from, nodeConditions: ["--conditions=@belay/source"] };
  if (from !== "dist") throw new Error(`--belay-from must be dist or source, not ${JSON.stringify(from)}`);
  log("building Belay's packages (turbo; cached when fresh)");
  const built = spawnSync("pnpm", ["exec", "turbo", "run", "build", "--filter=./packages/*", "--output-logs=errors-only"], {
    cwd: resolve(pkg, ".."),
    stdio: ["ignore", "inherit", "inherit"],
  });
  if (built.error !== undefined) throw new Error(`could not run pnpm to build Belay's packages (${built.error.message}); run with --belay-from source`, { cause: built.error });
  if (built.status !== 0) throw new Error(`building Belay's packages failed (exit ${built.status ?? built.signal}); fix the build or run with --belay-from source`);
  return { from, nodeConditions: [] };
}

/** Where `--out` puts the run's results (its folder made) and, with `--cpu-prof`, its profiles. */
export function resultsPaths(values: Record<string, string>, prefix: string): { readonly jsonPath: string; readonly profRoot: string | null } {
  const out = resolve(values["out"]!);
  const jsonPath = out.endsWith(".json") ? out : join(out, `${prefix}${fileStamp()}.json`);
  mkdirSync(dirname(jsonPath), { recursive: true });
  return { jsonPath, profRoot: values["cpu-prof"] === "true" ? jsonPath.replace(/\.json$/, "-profiles") : null };
}

/**
 * The scratch folder: `--scratch` or a new `<prefix>*` in the OS temp folder, removed at teardown
 * unless `--keep`.
 */
export function scratchFolder(values: Record<string, string>, prefix: string, teardown: Teardown): string {
  const scratch = values["scratch"] ? makeScratch(resolve(values["scratch"])) : makeScratch(mkdtempSync(join(tmpdir(), prefix)));
  if (values["keep"] !== "true") teardown.removeAtEnd(scratch);
  log(`scratch ${scratch}${values["keep"] === "true" ? " (kept)" : ""}`);
  return scratch;
}

/**
 * The cluster's settings `names`, logged; throws unless fsync and synchronous_commit are on (the
 * benchmarks measure durable commits, unlike the test projects' clusters).
 */
export async function durableSettings(admin: pg.Client, names: readonly string[]): Promise<Record<string, string>> {
  const settings: Record<string, string> = {};
  for (const name of names) settings[name] = (await admin.query(`show ${name}`)).rows[0][name];
  log(`postgres settings: ${Object.entries(settings).map(([k, v]) => `${k}=${v}`).join(", ")}`);
  if (settings["fsync"] !== "on" || settings["synchronous_commit"] !== "on") throw new Error("the benchmark cluster must run with fsync and synchronous_commit on");
  return settings;
}

/** A run's records and metadata in `jsonPath` (saved after every system, so a crash loses little) and its markdown beside it. */
export class ResultsFile<M extends { finished: string | null }, R> {
  readonly records: R[] = [];
  readonly mdPath: string;

  constructor(
    readonly jsonPath: string,
    readonly meta: M,
  ) {
    this.mdPath = jsonPath.replace(/\.json$/, ".md");
  }

  save(): void {
    writeFileSync(this.jsonPath, `${JSON.stringify({ meta: this.meta, records: this.records }, null, 1)}\n`);
  }

  /** Stamps the end, saves, and writes and prints the markdown `render` makes of the records. */
  finish(render: (records: readonly R[]) => string): void {
    this.meta.finished = new Date().toISOString();
    this.save();
    const md = render(this.records);
    writeFileSync(this.mdPath, md);
    console.log(md);
    log(`results: ${this.jsonPath}, ${this.mdPath}`);
  }
}

/**
 * Runs an entry point's `main`, then `cleanup` and the teardown, also on error (logged, exit code
 * 1). With `render`, `--render <results.json> [--raw <shown path>]` prints the markdown of an
 * earlier run instead (e.g. after the summary changed), `raw` naming where its records are.
 */
export async function runEntry<M, R>(
  main: () => Promise<void>,
  options: { readonly teardown: Teardown; readonly cleanup?: () => Promise<void>; readonly render?: (meta: M & { readonly raw: string }, records: readonly R[]) => string },
): Promise<void> {
  const renderAt = process.argv.indexOf("--render");
  if (options.render && renderAt >= 0) {
    const file = process.argv[renderAt + 1]!;
    const { meta, records } = JSON.parse(readFileSync(file, "utf8")) as { meta: M; records: R[] };
    const rawAt = process.argv.indexOf("--raw");
    console.log(options.render({ ...meta, raw: rawAt >= 0 ? process.argv[rawAt + 1]! : file }, records));
    process.exit(0);
  }
  try {
    await main();
    await options.cleanup?.();
    options.teardown.teardown();
  } catch (error) {
    log(`error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    await options.cleanup?.();
    options.teardown.teardown();
    process.exitCode = 1;
  }
}
