import { type Options, defineConfig } from "tsup";

/**
 * The build every package shares: ESM + CJS + type declarations for `src/index.ts`, targeting
 * Node 20, with source maps. A package passes only what differs (more entries, externals, an
 * app's ESM-only binary).
 */
export function packageBuild(overrides: Options = {}) {
  return defineConfig({
    entry: ["src/index.ts"],
    format: ["esm", "cjs"],
    dts: true,
    sourcemap: true,
    clean: true,
    target: "node20",
    ...overrides,
  });
}
