// Installs from the tarballs alone, as a user would from the registry: each scenario is a fresh
// npm project that installs what a README's install lines name (the @belay/* packages from
// `pnpm pack` of their build, never from the registry; the rest at the workspace's versions), then
// runs that README's marked examples there, or the CLIs:
//   core + SQLite        packages/sqlite/README.md: its examples; no pg, kysely or hono installed
//   core + PostgreSQL    packages/postgres/README.md: its examples on a database of their own
//   a store's conformance packages/conformance/README.md: the suite under vitest; require() says ESM
//   the two CLIs         npx @belay/server --help, npx @belay/worker --help, both running on memory:
// (packages.test.ts checks the tarballs' contents; readme-examples.test.ts runs every README
// example together in one project.)
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { postgresTarget } from "../packages/conformance/src/postgres-target.js";
import { ExampleDatabases } from "./support/databases.js";
import { type FreshProject, type InstallScenario, ensureBuilt, pack, registryAnswers, scenarioProject, seconds } from "./support/fresh-project.js";
import { installedByReadme, publicPackages, publishedPackages, readmeExamples } from "./support/readme-examples.js";
import { runExample } from "./support/run-example.js";

const root = fileURLToPath(new URL("..", import.meta.url));
const packages = publishedPackages(root);
const libraries = publicPackages(root);
const { examples } = readmeExamples(root);

// The projects install from the registry (or npm's cache): skip without one, fail under CI.
const registry = registryAnswers();
const noRegistry = registry.ok ? undefined : `no npm registry (${registry.reason})`;
if (noRegistry !== undefined) {
  if (process.env["CI"] === "true") throw new Error(`[fresh-installs] ${noRegistry}: under CI the installs must run.`);
  console.warn(`\n[fresh-installs] ${noRegistry}.\n[fresh-installs] SKIPPING every install from the tarballs.\n`);
}
const postgres = await postgresTarget("examples/fresh-installs.test.ts");

/** A scenario of this file: what is installed, which README's examples run there, what must not be installed. */
interface Scenario extends InstallScenario {
  readonly title: string;
  readonly readme?: string;
  readonly absent: readonly string[];
}

/** The install lines of a README, plus the runner its TypeScript examples need (tsx, as a user's dev dependency). */
const fromReadme = (readme: string, tools: readonly string[]) => [...installedByReadme(root, readme), ...tools];
const scenarios: Scenario[] = [
  { name: "core-sqlite", title: "core + SQLite", readme: "packages/sqlite/README.md", packages: fromReadme("packages/sqlite/README.md", ["tsx"]), absent: ["pg", "kysely", "hono", "@hono/node-server"] },
  { name: "core-postgres", title: "core + PostgreSQL", readme: "packages/postgres/README.md", packages: fromReadme("packages/postgres/README.md", ["tsx"]), absent: ["better-sqlite3", "kysely", "hono"] },
  { name: "conformance", title: "the conformance suite for a third-party adapter", readme: "packages/conformance/README.md", packages: fromReadme("packages/conformance/README.md", []), absent: ["pg", "better-sqlite3"] },
  // A jobs module imports @belay/core: the project that runs belay-worker has it (as the worker README says).
  { name: "clis", title: "the two CLIs", packages: ["@belay/server", "@belay/worker", "@belay/core"], absent: ["@belay/sqlite", "@belay/postgres", "pg", "better-sqlite3"] },
];

/** Every package folder under node_modules (scoped and nested ones included): name → paths. */
function installed(dir: string): Map<string, string[]> {
  const found = new Map<string, string[]>();
  const walk = (modules: string) => {
    if (!existsSync(modules)) return;
    for (const entry of readdirSync(modules)) {
      if (entry.startsWith(".")) continue;
      const names = entry.startsWith("@") ? readdirSync(join(modules, entry)).map((n) => `${entry}/${n}`) : [entry];
      for (const name of names) {
        const path = join(modules, name);
        if (!existsSync(join(path, "package.json"))) continue; // npm leaves empty scope folders behind when it prunes
        found.set(name, [...(found.get(name) ?? []), path]);
        walk(join(path, "node_modules"));
      }
    }
  };
  walk(join(dir, "node_modules"));
  return found;
}

/** Runs a command in the project to its end: exit code and output. */
function runIn(project: FreshProject, cwd: string, command: string, args: readonly string[], env: Record<string, string> = {}) {
  const result = spawnSync(command, args, {
    cwd,
    encoding: "utf8",
    timeout: 120_000,
    // npx must find the package in the project, never fetch one.
    env: { ...process.env, npm_config_offline: "true", npm_config_update_notifier: "false", NO_COLOR: "1", ...env },
  });
  return { status: result.status, output: `${result.stdout ?? ""}${result.stderr ?? ""}${result.error ? `\n[spawn] ${result.error.message}` : ""}`, where: `${command} ${args.join(" ")} (in ${cwd}, project ${project.dir})` };
}

/** Starts a long-running command (the binary itself: a signal goes to it, not to npx); resolves once its output matches `ready`. */
async function startUntil(cwd: string, command: string, args: readonly string[], ready: RegExp): Promise<{ child: ChildProcess; output: () => string; exited: Promise<number | null> }> {
  const child = spawn(command, args, { cwd, env: { ...process.env, NO_COLOR: "1" }, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  const exited = new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${command} ${args.join(" ")}: no ${ready} within 60 s:\n${output}`)), 60_000);
    const check = (chunk: Buffer) => {
      output += chunk.toString("utf8");
      if (ready.test(output)) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout!.on("data", check);
    child.stderr!.on("data", check);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`${command} ${args.join(" ")} exited ${code} before ${ready}:\n${output}`));
    });
  });
  return { child, output: () => output, exited };
}

describe.skipIf(noRegistry !== undefined)(`fresh installs from the tarballs${noRegistry ? ` (SKIPPED: ${noRegistry})` : ""}`, () => {
  const projects = new Map<string, FreshProject>();
  let work: string;
  const databases = new ExampleDatabases(postgres.url);

  beforeAll(async () => {
    const started = performance.now();
    const steps: string[] = [];
    await ensureBuilt(root, packages, steps);
    work = mkdtempSync(join(tmpdir(), "belay-fresh-installs-"));
    mkdirSync(join(work, "tarballs"));
    const tarballs = await pack(packages, join(work, "tarballs"), steps);
    // One after the other: the first may wait for (or compile) better-sqlite3 in the registry layer.
    for (const scenario of scenarios) projects.set(scenario.name, await scenarioProject(root, scenario, tarballs, libraries, steps));
    console.info(`[fresh-installs] ready in ${seconds(started)}: ${steps.join("; ")}`);
  }, 900_000);

  afterAll(async () => {
    if (work !== undefined) rmSync(work, { recursive: true, force: true });
    await databases.dropAll();
  });

  for (const scenario of scenarios) {
    // The runs mostly wait on child processes: a few at once (the project's maxConcurrency).
    describe.concurrent(`${scenario.title}: npm install ${scenario.packages.join(" ")}`, () => {
      const project = () => projects.get(scenario.name)!;
      const runs = () => join(project().dir, "runs", `${process.pid}-${randomBytes(4).toString("hex")}`);

      it(`gives a consistent tree without ${scenario.absent.join(", ")}`, () => {
        const ls = runIn(project(), project().dir, "npm", ["ls", "--all"]);
        expect(ls.status, `npm ls --all (missing, invalid or extraneous packages):\n${ls.output}`).toBe(0);
        const tree = installed(project().dir);
        for (const name of scenario.packages) expect(tree.has(name), `${name} installed`).toBe(true);
        const unwanted = scenario.absent.filter((name) => tree.has(name)).map((name) => `${name} (${tree.get(name)!.join(", ")})`);
        expect(unwanted, "installed although nothing in this scenario needs it").toEqual([]);
      });

      if (scenario.readme !== undefined) {
        const own = examples.filter((e) => e.readme === scenario.readme);
        it(`has examples in ${scenario.readme} to run`, () => expect(own.length).toBeGreaterThan(0));
        for (const example of own) {
          for (const value of example.env?.values ?? [undefined]) {
            const needsPostgres = value === "postgres";
            const skipped = needsPostgres && postgres.url === undefined;
            it.skipIf(skipped)(`runs the README example "${example.name}" as written${value ? ` with ${example.env!.name}=${value}` : ""}${skipped ? ` (SKIPPED: ${postgres.reason})` : ""}`, async () => {
              const env: Record<string, string> = {};
              if (value !== undefined) env[example.env!.name] = needsPostgres ? await databases.create(`install_${example.name}`) : value;
              await runExample(example, project(), join(runs(), `${example.name}${value ? `-${value.replace(/\W+/g, "-")}` : ""}`), env);
            });
          }
        }
      }

      if (scenario.name === "conformance") {
        it("require(\"@belay/conformance\") says it is ESM-only and how to import it; /postgres loads with require()", () => {
          const probe = join(runs(), "require-probe");
          mkdirSync(probe, { recursive: true });
          writeFileSync(
            join(probe, "probe.cjs"),
            [
              'let caught; try { require("@belay/conformance"); } catch (error) { caught = error; }',
              "console.log(JSON.stringify({ code: caught && caught.code, message: caught && caught.message }));",
              'console.log(JSON.stringify(Object.keys(require("@belay/conformance/postgres")).sort()));',
            ].join("\n"),
          );
          const run = runIn(project(), probe, process.execPath, ["probe.cjs"]);
          expect(run.status, run.output).toBe(0);
          const [thrown, postgresExports] = run.output.trim().split("\n").map((line) => JSON.parse(line) as unknown);
          expect(thrown).toMatchObject({ code: "ERR_REQUIRE_ESM", message: expect.stringContaining('import { runStoreConformance } from "@belay/conformance"') });
          expect(postgresExports).toEqual(expect.arrayContaining(["postgresGlobalSetup", "throwawayPostgresCluster"]));
        });
      }

      if (scenario.name === "clis") {
        for (const [pkg, bin] of [["@belay/server", "belay-server"], ["@belay/worker", "belay-worker"]] as const) {
          it(`npx ${pkg} --help prints the usage`, () => {
            const run = runIn(project(), project().dir, "npx", [pkg, "--help"]);
            expect(run.status, `${run.where}\n${run.output}`).toBe(0);
            expect(run.output).toContain(`usage: ${bin} --store <url>`);
          });
        }

        it("belay-server serves the API on memory: and stops on SIGTERM", async () => {
          const server = await startUntil(project().dir, project().bin("belay-server"), ["--store", "memory:", "--port", "0", "--promises-port", "off"], /API (http:\/\/\S+\/api\/v1)/);
          try {
            const api = /API (http:\/\/\S+\/api\/v1)/.exec(server.output())![1]!;
            const response = await fetch(`${api}/openapi.json`);
            expect(response.status).toBe(200);
            expect(((await response.json()) as { openapi?: string }).openapi).toMatch(/^3\./);
          } finally {
            server.child.kill("SIGTERM");
          }
          expect(await server.exited, server.output()).toBe(0);
        });

        it("belay-worker runs a jobs module on memory: and stops on SIGTERM; a store it lacks names what to install", async () => {
          const dir = runs();
          mkdirSync(dir, { recursive: true });
          writeFileSync(join(dir, "jobs.mjs"), 'import { defineJob } from "@belay/core";\nexport const hello = defineJob({ name: "hello", handler: async () => {} });\n');
          const worker = await startUntil(dir, project().bin("belay-worker"), ["--store", "memory:", "--jobs", "./jobs.mjs", "--port", "0"], /health and metrics at http/);
          worker.child.kill("SIGTERM");
          expect(await worker.exited, worker.output()).toBe(0);
          const missing = runIn(project(), dir, "npx", ["belay-worker", "--store", "sqlite:./belay.db", "--jobs", "./jobs.mjs"]);
          expect(missing.status).not.toBe(0);
          expect(missing.output).toContain("npm install @belay/sqlite better-sqlite3");
        });
      }
    });
  }
});
