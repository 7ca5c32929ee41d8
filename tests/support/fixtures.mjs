// What the test files that run child processes share across packages: their TypeScript fixtures
// bundled for plain `node`, and a temporary folder for the databases they share. Plain JavaScript
// with its types beside it (fixtures.d.mts): a package's tsconfig checks its test files, and its
// rootDir admits a declaration file from outside the package, not a TypeScript source.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { afterAll, beforeAll } from "vitest";

/**
 * Bundles `<packageDir>/test/fixtures/<name>.ts` (a child-process script) into plain ESM that
 * `node` runs without a loader. Workspace packages are read from their sources (the
 * `@belay/source` condition) and inlined, so the child runs exactly the code under test, never a
 * stale `dist/`; `external` (a driver, the OpenTelemetry packages: one copy of the API per process)
 * stays out. The output goes under the package's `node_modules/.cache`, from where Node resolves
 * the externals as usual. Returns the bundle's path.
 */
export async function bundleFixture({ packageDir, name, external }) {
  const outDir = join(packageDir, "node_modules/.cache", `belay-${basename(packageDir)}-test`);
  // Loaded here, not at the top: most importers only want testDir, and tsup takes a second to load.
  const { build } = await import("tsup");
  await build({
    entry: { [name]: join(packageDir, "test/fixtures", `${name}.ts`) },
    outDir,
    format: ["esm"],
    platform: "node",
    target: "node20",
    config: false,
    dts: false,
    sourcemap: false,
    clean: false,
    silent: true,
    noExternal: [/^@belay\//],
    external,
    esbuildOptions(options) {
      options.conditions = ["@belay/source"];
    },
  });
  return join(outDir, `${name}.js`);
}

/**
 * The fixture of {@link bundleFixture}, bundled before the current suite's tests (within
 * `timeoutMs`, 60 s by default: a cold tsup start on a loaded machine). Its `script` is the
 * bundle's path, there from the suite's first test on.
 */
export function bundledBeforeAll({ timeoutMs = 60_000, ...fixture }) {
  let script;
  beforeAll(async () => {
    script = await bundleFixture(fixture);
  }, timeoutMs);
  return {
    get script() {
      if (script === undefined) throw new Error(`the fixture ${fixture.name} is bundled in beforeAll: read its script inside a test`);
      return script;
    },
  };
}

/** A temporary folder for the current test file (`prefix` and a random tail), removed after its tests. */
export function testDir(prefix) {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}
