import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "tsup";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

/**
 * Bundles a test fixture (a child-process script in TypeScript) into plain ESM that `node` runs
 * without a loader. Workspace packages are read from their sources (the `@belay/source`
 * condition) and inlined, so the child runs the code under test, never a stale `dist/`;
 * better-sqlite3 and the OpenTelemetry packages stay external (one copy of the API per process).
 * The output goes under this package's `node_modules/.cache`, from where Node resolves them.
 */
export async function bundleFixture(name: string): Promise<string> {
  const outDir = join(root, "node_modules/.cache/belay-core-test");
  await build({
    entry: { [name]: join(root, "test/fixtures", `${name}.ts`) },
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
    external: ["better-sqlite3", /^@opentelemetry\//],
    esbuildOptions(options) {
      options.conditions = ["@belay/source"];
    },
  });
  return join(outDir, `${name}.js`);
}
