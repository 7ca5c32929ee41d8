import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "tsup";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

/**
 * Bundles a TypeScript test fixture (a child-process script) into plain ESM that `node` runs
 * without a loader. Workspace packages are read from their sources (the `@belay/source`
 * condition) and inlined, so the child runs exactly the code under test rather than `dist/`; `pg`
 * stays external and resolves from this package's `node_modules`, under whose `.cache` the
 * output goes.
 */
export async function bundleFixture(name: string): Promise<string> {
  const outDir = join(root, "node_modules/.cache/belay-postgres-test");
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
    external: ["pg"],
    esbuildOptions(options) {
      options.conditions = ["@belay/source"];
    },
  });
  return join(outDir, `${name}.js`);
}
