// The README examples run as written: every marked example (`<!-- example: … -->`, see "Examples"
// in the repository README) of the repository README and of each public package's README, in ONE
// fresh npm project that installs the packed packages (`pnpm pack` of their build) and what the
// examples import from the registry, against real stores (memory, a SQLite file in the example's
// own folder, a PostgreSQL database of its own). A worker example must print its line, still be
// running a while later, and exit 0 after SIGTERM; the others must exit 0 on their own.
import { randomBytes } from "node:crypto";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { postgresTarget } from "../packages/conformance/src/postgres-target.js";
import { ExampleDatabases } from "./support/databases.js";
import { type FreshProject, baseCached, freshProject, registryAnswers } from "./support/fresh-project.js";
import { type ReadmeExample, publicPackages, readmeExamples } from "./support/readme-examples.js";
import { exampleFile, runExample } from "./support/run-example.js";

const root = fileURLToPath(new URL("..", import.meta.url));
const packages = publicPackages(root);
const { examples, readmes } = readmeExamples(root);

describe("README examples: the markers", () => {
  it("every public package's README marks a runnable example", () => {
    expect(readmes.filter((r) => r !== "README.md" && !examples.some((e) => e.readme === r))).toEqual([]);
  });

  it("every example has a name of its own", () => {
    const names = examples.map((e) => e.name);
    expect(names.filter((n, i) => names.indexOf(n) !== i)).toEqual([]);
  });
});

// The fresh project comes from the npm registry, unless its registry packages are cached already.
const registry = baseCached(root, packages) ? { ok: true as const } : registryAnswers();
const noRegistry = registry.ok ? undefined : `no npm registry (${registry.reason})`;
if (noRegistry !== undefined) {
  if (process.env["CI"] === "true") throw new Error(`[examples] ${noRegistry}: under CI the README examples must run.`);
  console.warn(`\n[examples] ${noRegistry}.\n[examples] SKIPPING every README example run.\n`);
}
const postgres = await postgresTarget("examples/readme-examples.test.ts");

/** One run of an example: its environment, with `postgres` standing for a fresh database's URL. */
interface Run {
  readonly example: ReadmeExample;
  readonly env: { readonly name: string; readonly value: string } | undefined;
}
// `sqlserver` stands for a SQL Server database's URL: only BELAY_TEST_MSSQL_URL gives one (no
// SQL Server runs here), so without it those runs are left out, loudly, rather than skipped.
const mssqlUrl = process.env["BELAY_TEST_MSSQL_URL"];
const runs: Run[] = examples.flatMap((example): Run[] =>
  example.env === undefined ? [{ example, env: undefined }] : example.env.values.map((value) => ({ example, env: { name: example.env!.name, value } })),
).filter((run) => {
  if (run.env?.value !== "sqlserver" || mssqlUrl !== undefined) return true;
  console.warn(`[examples] NOT RUN: ${run.example.name} (${run.example.readme}:${run.example.line}) needs a SQL Server; set BELAY_TEST_MSSQL_URL to run it.`);
  return false;
});
const needsPostgres = (run: Run) => run.env?.value === "postgres";
const title = ({ example, env }: Run) => `${example.name} (${example.readme}:${example.line})${env ? ` with ${env.name}=${env.value}` : ""}`;

describe.skipIf(noRegistry !== undefined)(`README examples, in a fresh project${noRegistry ? ` (SKIPPED: ${noRegistry})` : ""}`, () => {
  let project: FreshProject;
  let runsDir: string;
  const databases = new ExampleDatabases(postgres.url);

  beforeAll(async () => {
    const started = performance.now();
    project = await freshProject(root, packages);
    runsDir = join(project.dir, "runs", `${process.pid}-${randomBytes(4).toString("hex")}`);
    mkdirSync(runsDir, { recursive: true });
    console.info(`[examples] fresh project ready in ${((performance.now() - started) / 1000).toFixed(1)} s: ${project.steps.join("; ")}`);
  });

  afterAll(async () => {
    if (runsDir !== undefined) rmSync(runsDir, { recursive: true, force: true });
    await databases.dropAll();
  });

  describe.concurrent("each example runs as written", () => {
    for (const run of runs) {
      const skipped = needsPostgres(run) && postgres.url === undefined;
      it.skipIf(skipped)(`${title(run)}${skipped ? ` (SKIPPED: ${postgres.reason})` : ""}`, async () => {
        const env: Record<string, string> = {};
        if (run.env !== undefined) env[run.env.name] = needsPostgres(run) ? await databases.create(run.example.name) : run.env.value === "sqlserver" ? mssqlUrl! : run.env.value;
        const folder = `${run.example.name}${run.env ? `-${run.env.value.replace(/\W+/g, "-").replace(/^-|-$/g, "")}` : ""}`;
        await runExample(run.example, project, join(runsDir, folder), env);
      });
    }
  });

  it("the TypeScript examples typecheck", async () => {
    const folder = join(runsDir, "typecheck");
    mkdirSync(folder, { recursive: true });
    for (const example of examples.filter((e) => e.language === "ts")) writeFileSync(join(folder, exampleFile(example)), example.code);
    writeFileSync(
      join(folder, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: { strict: true, target: "ES2022", lib: ["ES2023"], module: "NodeNext", moduleResolution: "NodeNext", types: ["node"], noEmit: true, skipLibCheck: true },
        include: ["*.ts"],
      }),
    );
    const { execFile } = await import("node:child_process");
    const result = await new Promise<{ failed: boolean; output: string }>((resolve) =>
      execFile(project.bin("tsc"), ["-p", folder], { cwd: folder, encoding: "utf8" }, (error, stdout, stderr) => resolve({ failed: error !== null, output: `${stdout}${stderr}` })),
    );
    const where = examples.map((e) => `  ${exampleFile(e)}: ${e.readme}:${e.line}`).join("\n");
    expect(result.failed, `tsc on the README examples (in ${folder}):\n${result.output}\nwhere each file comes from:\n${where}`).toBe(false);
  });
});
