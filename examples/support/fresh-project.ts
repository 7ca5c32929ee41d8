import { execFile, spawnSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, renameSync, rmSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import type { PublicPackage } from "./readme-examples.js";

// ONE fresh npm project ("type": "module") holding the packed public packages and what the
// README examples import from the registry. It is built in two cached layers under
// $BELAY_EXAMPLES_CACHE (default: <tmpdir>/belay-readme-examples):
//   base-<key>     the registry packages only (better-sqlite3 is compiled here, once), keyed by
//                  their versions, Node's ABI and the platform;
//   project-<key>  a copy of the base plus the tarballs, keyed by the tarballs' hashes too.
// Each layer is installed in a private temp folder and renamed into place when complete, so
// concurrent runs never see (or break) a half-installed one.

/** Bump when the layout of the cached project changes. */
const LAYOUT = "1";

export interface FreshProject {
  readonly dir: string;
  readonly bin: (name: string) => string;
  /** What was done and how long it took, for the log. */
  readonly steps: readonly string[];
}

export function examplesCache(): string {
  return process.env["BELAY_EXAMPLES_CACHE"] ?? join(tmpdir(), "belay-readme-examples");
}

/** Runs a command to its end (asynchronously: a first install takes minutes); throws with its output when it fails. */
function run(cmd: string, args: readonly string[], options: { cwd: string; env?: NodeJS.ProcessEnv; timeoutMs?: number }): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(cmd, args, { cwd: options.cwd, env: options.env ?? process.env, encoding: "utf8", timeout: options.timeoutMs ?? 600_000, maxBuffer: 64 << 20 }, (error, stdout, stderr) => {
      const output = `${stdout}${stderr}`;
      // The lines that name an error first (a build's or an install's), then the output's end.
      const errors = output.split("\n").filter((line) => /\berr(or)?\b|✘/i.test(line)).slice(0, 40).join("\n");
      if (error) reject(new Error(`${cmd} ${args.join(" ")} (in ${options.cwd}) failed: ${error.message.split("\n")[0]}\n${errors}\n----- output (end) -----\n${output.slice(-6000)}`));
      else resolve(output);
    });
  });
}

export const seconds = (since: number) => `${((performance.now() - since) / 1000).toFixed(1)} s`;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Whether a process of this machine is alive. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * Runs `fn` while holding the lock `name` of the cache, so that the test files of this project,
 * which run at the same time, do not build, or compile better-sqlite3, twice at once: the second
 * waits, then finds the work done. A lock whose holder died is taken over.
 */
async function withLock<T>(name: string, fn: () => Promise<T>): Promise<T> {
  const cache = examplesCache();
  mkdirSync(cache, { recursive: true });
  const lock = join(cache, `.lock-${name}`);
  for (;;) {
    try {
      mkdirSync(lock);
      writeFileSync(join(lock, "pid"), String(process.pid));
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      let holder = Number.NaN;
      try {
        holder = Number(readFileSync(join(lock, "pid"), "utf8"));
      } catch {
        // being created or removed right now
      }
      const ageMs = existsSync(lock) ? Date.now() - statSync(lock).mtimeMs : 0;
      if ((Number.isInteger(holder) && !alive(holder)) || (Number.isNaN(holder) && ageMs > 10_000)) rmSync(lock, { recursive: true, force: true });
      else await sleep(250);
    }
  }
  try {
    return await fn();
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

/** The newest modification time of the files under `path` (0 when it does not exist). */
function newest(path: string, skip: (name: string) => boolean = () => false): number {
  if (!existsSync(path)) return 0;
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  return Math.max(0, ...readdirSync(path).filter((n) => !skip(n)).map((n) => newest(join(path, n), skip)));
}

/**
 * Builds the packages whose dist/ is missing or older than their sources (CI builds before it
 * tests, so there this finds nothing to do; locally it keeps the packed code the checked-out code).
 */
export async function ensureBuilt(root: string, packages: readonly PublicPackage[], steps: string[]): Promise<void> {
  await withLock("build", () => buildStale(root, packages, steps));
}

async function buildStale(root: string, packages: readonly PublicPackage[], steps: string[]): Promise<void> {
  const stale = packages.filter((p) => {
    const built = newest(join(p.dir, "dist"));
    const sources = Math.max(newest(join(p.dir, "src"), (n) => n.endsWith(".test.ts")), newest(join(p.dir, "package.json")), newest(join(p.dir, "tsup.config.ts")));
    return built === 0 || built < sources;
  });
  if (stale.length === 0) return;
  const started = performance.now();
  await run("pnpm", ["exec", "turbo", "run", "build", ...stale.map((p) => `--filter=${p.name}`)], { cwd: root, env: { ...process.env, TURBO_TELEMETRY_DISABLED: "1" } });
  steps.push(`built ${stale.map((p) => p.name).join(", ")} (dist missing or older than src) in ${seconds(started)}`);
}

/** `pnpm pack` of every package into `into`: name → tarball path. */
export async function pack(packages: readonly PublicPackage[], into: string, steps: string[]): Promise<Map<string, string>> {
  const started = performance.now();
  const tarballs = new Map<string, string>();
  for (const p of packages) {
    const before = new Set(readdirSync(into));
    await run("pnpm", ["pack", "--pack-destination", into], { cwd: p.dir });
    const made = readdirSync(into).filter((f) => !before.has(f) && f.endsWith(".tgz"));
    if (made.length !== 1) throw new Error(`pnpm pack of ${p.name} made ${made.length} tarballs in ${into}: ${made.join(", ")}`);
    tarballs.set(p.name, join(into, made[0]!));
  }
  steps.push(`packed ${packages.length} packages in ${seconds(started)}`);
  return tarballs;
}

/** A dependency's version spec as the workspace declares it (the examples use the same versions). */
export function workspaceSpec(root: string, name: string, from: readonly string[]): string {
  for (const dir of from) {
    const json = JSON.parse(readFileSync(join(root, dir, "package.json"), "utf8")) as Record<string, Record<string, string> | undefined>;
    const spec = json["devDependencies"]?.[name] ?? json["dependencies"]?.[name];
    if (spec !== undefined && !spec.startsWith("workspace:")) return spec;
  }
  throw new Error(`no workspace package declares ${name} (looked in ${from.join(", ")})`);
}

/**
 * What the examples import from the registry, plus the tools that run and check them, at the
 * workspace's versions; and every registry dependency of the packages themselves, so the tarball
 * layer needs no network.
 */
export function registryDependencies(root: string, packages: readonly PublicPackage[]): Record<string, string> {
  const deps: Record<string, string> = {
    zod: workspaceSpec(root, "zod", ["packages/core"]),
    pg: workspaceSpec(root, "pg", ["packages/postgres"]),
    "better-sqlite3": workspaceSpec(root, "better-sqlite3", ["packages/sqlite"]),
    // @belay/sqlserver's peer, at the workspace's version (npm would take the newest 12.x).
    mssql: workspaceSpec(root, "mssql", ["packages/sqlserver"]),
    kysely: workspaceSpec(root, "kysely", ["packages/kysely"]),
    tsx: workspaceSpec(root, "tsx", ["apps/worker"]),
    vitest: workspaceSpec(root, "vitest", ["."]),
    typescript: workspaceSpec(root, "typescript", ["."]),
    "@types/node": workspaceSpec(root, "@types/node", ["."]),
    "@types/pg": workspaceSpec(root, "@types/pg", ["packages/postgres"]),
    "@types/better-sqlite3": workspaceSpec(root, "@types/better-sqlite3", ["packages/sqlite"]),
  };
  // better-sqlite3 13 needs Node 22 and crashes on Node 20.
  if (!/^\D*12\./.test(deps["better-sqlite3"]!)) throw new Error(`better-sqlite3 must be 12.x, the workspace declares ${deps["better-sqlite3"]}`);
  for (const p of packages) {
    for (const [name, spec] of Object.entries((p.json["dependencies"] ?? {}) as Record<string, string>)) {
      if (!spec.startsWith("workspace:")) deps[name] ??= spec;
    }
  }
  return Object.fromEntries(Object.entries(deps).sort(([a], [b]) => a.localeCompare(b)));
}

function npmEnv(): NodeJS.ProcessEnv {
  return {
    ...process.env,
    // better-sqlite3 builds against the local Node headers: never a downloaded binary or headers.
    npm_config_nodedir: process.env["npm_config_nodedir"] ?? join(process.execPath, "..", ".."),
    npm_config_build_from_source: "better-sqlite3",
    npm_config_update_notifier: "false",
    npm_config_fund: "false",
    npm_config_audit: "false",
  };
}

function packageJson(dependencies: Record<string, string>, overrides: Record<string, string> = {}, name = "belay-readme-examples"): string {
  return `${JSON.stringify(
    {
      name,
      private: true,
      type: "module",
      dependencies,
      ...(Object.keys(overrides).length > 0 ? { overrides } : {}),
      // npm 12 runs no dependency install script unless listed (as pnpm's allowBuilds).
      allowScripts: { "better-sqlite3": true, esbuild: true },
    },
    null,
    2,
  )}\n`;
}

const hash = (...parts: readonly string[]) => createHash("sha256").update(parts.join("\0")).digest("hex").slice(0, 16);
const fileHash = (path: string) => createHash("sha256").update(readFileSync(path)).digest("hex");

/**
 * `cache/<name>`, made by `fill(tempFolder)` unless it is there already. A folder only ever
 * appears complete (renamed into place); a concurrent run that finished first wins.
 */
async function cachedFolder(cache: string, name: string, fill: (dir: string) => Promise<void>): Promise<{ dir: string; made: boolean }> {
  const dir = join(cache, name);
  const cached = () => {
    if (!existsSync(join(dir, ".complete"))) return false;
    const now = new Date();
    utimesSync(dir, now, now); // recently used: kept by prune()
    return true;
  };
  if (cached()) return { dir, made: false };
  return withLock(name, async () => (cached() ? { dir, made: false } : fillFolder(cache, name, dir, fill)));
}

async function fillFolder(cache: string, name: string, dir: string, fill: (dir: string) => Promise<void>): Promise<{ dir: string; made: boolean }> {
  const temp = join(cache, `.tmp-${name}-${process.pid}-${randomBytes(4).toString("hex")}`);
  mkdirSync(temp, { recursive: true });
  try {
    await fill(temp);
    writeFileSync(join(temp, ".complete"), new Date().toISOString());
    rmSync(dir, { recursive: true, force: true }); // an incomplete leftover, never a complete one
    renameSync(temp, dir);
  } catch (error) {
    rmSync(temp, { recursive: true, force: true });
    if (existsSync(join(dir, ".complete"))) return { dir, made: false };
    throw error;
  }
  return { dir, made: true };
}

/**
 * Removes the folders of a kind beyond the `keep` most recently used (never `current`, and none
 * used within the last 20 minutes: another run may be in it), and temp folders left by killed runs.
 */
function prune(cache: string, prefix: string, current: string, keep: number): void {
  const idleSince = Date.now() - 20 * 60_000; // longer than any run
  const aged = (n: string) => statSync(join(cache, n)).mtimeMs < idleSince;
  for (const n of readdirSync(cache).filter((n) => n.startsWith(`.tmp-${prefix}`) && aged(n))) rmSync(join(cache, n), { recursive: true, force: true });
  const folders = readdirSync(cache)
    .filter((n) => n.startsWith(prefix) && n !== current)
    .sort((a, b) => statSync(join(cache, b)).mtimeMs - statSync(join(cache, a)).mtimeMs);
  for (const n of folders.slice(Math.max(0, keep - 1)).filter(aged)) rmSync(join(cache, n), { recursive: true, force: true });
}

/** The base layer's folder name: the registry packages, Node's ABI and the platform. */
function baseNameFor(root: string, packages: readonly PublicPackage[]): string {
  const platform = [LAYOUT, process.version, process.versions.modules, process.platform, process.arch].join(" ");
  return `base-${hash(platform, JSON.stringify(registryDependencies(root, packages)))}`;
}

/**
 * Builds (when stale), packs and installs the public packages into the cached fresh project, and
 * returns it. Throws with the failing command's output.
 */
export async function freshProject(root: string, packages: readonly PublicPackage[]): Promise<FreshProject> {
  const steps: string[] = [];
  const cache = examplesCache();
  mkdirSync(cache, { recursive: true });
  await ensureBuilt(root, packages, steps);

  const packed = mkdtempSync(join(tmpdir(), "belay-examples-pack-"));
  try {
    const tarballs = await pack(packages, packed, steps);
    const registry = registryDependencies(root, packages);
    const base = await baseLayer(root, packages, steps);
    const baseName = base.name;

    const started = performance.now();
    const tarballKey = [...tarballs].map(([name, path]) => `${name}=${fileHash(path)}`).join(" ");
    const projectName = `project-${hash(baseName, tarballKey)}`;
    const project = await cachedFolder(cache, projectName, async (dir) => {
      cpSync(base.dir, dir, { recursive: true, verbatimSymlinks: true });
      rmSync(join(dir, ".complete"));
      mkdirSync(join(dir, "tarballs"));
      const dependencies: Record<string, string> = { ...registry };
      const overrides: Record<string, string> = {};
      for (const [name, path] of tarballs) {
        const file = path.slice(packed.length + 1);
        copyFileSync(path, join(dir, "tarballs", file));
        dependencies[name] = `file:./tarballs/${file}`;
        // A package's own dependency on another (@belay/core → @belay/contract ^0.1.0) must take
        // this tarball, never a release from the registry.
        overrides[name] = `$${name}`;
      }
      writeFileSync(join(dir, "package.json"), packageJson(dependencies, overrides));
      await run("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund"], { cwd: dir, env: npmEnv() });
    });
    steps.push(project.made ? `installed the tarballs into a copy of the base in ${seconds(started)} (${projectName})` : `tarballs unchanged: project cached (${projectName})`);

    prune(cache, "project-", projectName, 3);
    return { dir: project.dir, bin: (name) => join(project.dir, "node_modules", ".bin", name), steps };
  } finally {
    rmSync(packed, { recursive: true, force: true });
  }
}

/**
 * The registry layer of the README examples' project: every registry package the examples and
 * the public packages need, installed once (better-sqlite3 is compiled here).
 */
export async function baseLayer(root: string, packages: readonly PublicPackage[], steps: string[]): Promise<{ dir: string; name: string }> {
  const cache = examplesCache();
  mkdirSync(cache, { recursive: true });
  const registry = registryDependencies(root, packages);
  const started = performance.now();
  const name = baseNameFor(root, packages);
  const base = await cachedFolder(cache, name, async (dir) => {
    writeFileSync(join(dir, "package.json"), packageJson(registry));
    await run("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund"], { cwd: dir, env: npmEnv() });
  });
  steps.push(base.made ? `installed the registry packages (${Object.keys(registry).join(", ")}) in ${seconds(started)}` : `registry packages cached (${name})`);
  prune(cache, "base-", name, 2);
  return { dir: base.dir, name };
}

/** A project as a user makes it: `npm install` of what a README's install lines name. */
export interface InstallScenario {
  /** Folder prefix in the cache (kebab-case). */
  readonly name: string;
  /** What is installed: `@belay/*` from the tarballs, anything else from the registry at the workspace's version. */
  readonly packages: readonly string[];
}

/**
 * A fresh npm project that installs only `scenario.packages`: the `@belay/*` ones from the
 * tarballs, and every `@belay/*` package they depend on from the tarballs too (npm `overrides`,
 * so nothing named `@belay/*` ever comes from the registry). It is installed in an empty folder,
 * except when it installs better-sqlite3: then it starts from a copy of the README examples'
 * registry layer (whose better-sqlite3 is compiled already) and `npm install` prunes everything
 * the scenario does not name, so its `node_modules` is what a fresh install makes. Cached by the
 * tarballs' hashes.
 */
export async function scenarioProject(
  root: string,
  scenario: InstallScenario,
  tarballs: ReadonlyMap<string, string>,
  libraries: readonly PublicPackage[],
  steps: string[],
): Promise<FreshProject> {
  const cache = examplesCache();
  mkdirSync(cache, { recursive: true });
  const manifests = new Map<string, Record<string, unknown>>();
  for (const dir of workspaceDirs(root)) {
    const json = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as Record<string, unknown>;
    manifests.set(json["name"] as string, json);
  }
  // The @belay/* packages the scenario installs, with their @belay/* dependencies (not their peers).
  const closure = new Set<string>();
  const visit = (name: string) => {
    if (closure.has(name)) return;
    if (!tarballs.has(name)) throw new Error(`${scenario.name}: no tarball for ${name} (packed: ${[...tarballs.keys()].join(", ")})`);
    closure.add(name);
    for (const dep of Object.keys((manifests.get(name)?.["dependencies"] ?? {}) as Record<string, string>)) if (dep.startsWith("@belay/")) visit(dep);
  };
  const dependencies: Record<string, string> = {};
  for (const name of scenario.packages) {
    if (name.startsWith("@belay/")) visit(name);
    else dependencies[name] = workspaceSpec(root, name, workspaceDirs(root).map((d) => d.slice(root.length)));
  }
  const file = (name: string) => `file:./tarballs/${basename(tarballs.get(name)!)}`;
  const overrides = Object.fromEntries([...closure].sort().map((name) => [name, file(name)]));
  for (const name of scenario.packages) if (name.startsWith("@belay/")) dependencies[name] = file(name);
  const native = "better-sqlite3" in dependencies;
  const base = native ? await baseLayer(root, libraries, steps) : undefined;
  const started = performance.now();
  const key = hash(LAYOUT, base?.name ?? "empty", JSON.stringify(dependencies), ...[...closure].sort().map((n) => `${n}=${fileHash(tarballs.get(n)!)}`));
  const name = `install-${scenario.name}-${key}`;
  const project = await cachedFolder(cache, name, async (dir) => {
    if (base !== undefined) {
      cpSync(base.dir, dir, { recursive: true, verbatimSymlinks: true });
      for (const leftover of [".complete", "package-lock.json"]) rmSync(join(dir, leftover), { force: true });
    }
    mkdirSync(join(dir, "tarballs"));
    for (const name of closure) copyFileSync(tarballs.get(name)!, join(dir, "tarballs", basename(tarballs.get(name)!)));
    writeFileSync(join(dir, "package.json"), packageJson(dependencies, overrides, `belay-install-${scenario.name}`));
    await run("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund"], { cwd: dir, env: npmEnv() });
  });
  steps.push(project.made ? `${scenario.name}: installed ${scenario.packages.join(" ")} in ${seconds(started)}` : `${scenario.name}: tarballs unchanged, project cached (${name})`);
  prune(cache, `install-${scenario.name}-`, name, 2);
  return { dir: project.dir, bin: (bin) => join(project.dir, "node_modules", ".bin", bin), steps };
}

/** Every workspace package folder (packages/*, apps/*, bench), absolute, with a trailing "/" removed. */
function workspaceDirs(root: string): string[] {
  const dirs = [root];
  for (const folder of ["packages", "apps"]) {
    for (const entry of readdirSync(join(root, folder))) if (existsSync(join(root, folder, entry, "package.json"))) dirs.push(join(root, folder, entry));
  }
  return dirs;
}

/** Whether the npm registry answers (for the skip reason when it does not). */
export function registryAnswers(): { ok: true } | { ok: false; reason: string } {
  const r = spawnSync("npm", ["ping", "--fetch-retries=0", "--fetch-timeout=15000"], { encoding: "utf8", timeout: 30_000, env: npmEnv() });
  if (r.status === 0) return { ok: true };
  const errors = `${r.stderr}${r.stdout}`.split("\n").filter((line) => line.startsWith("npm error"));
  return { ok: false, reason: `npm ping failed: ${r.error?.message ?? errors.slice(0, 2).join(" ")}` };
}

/** Whether a base layer for these registry packages is cached already (then no network is needed). */
export function baseCached(root: string, packages: readonly PublicPackage[]): boolean {
  return existsSync(join(examplesCache(), baseNameFor(root, packages), ".complete"));
}
