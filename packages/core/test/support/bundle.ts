import { fileURLToPath } from "node:url";
import { bundledBeforeAll } from "../../../../tests/support/fixtures.mjs";

/**
 * A test fixture of this package (test/fixtures/<name>.ts), bundled for plain `node` before the
 * current suite's tests (tests/support/fixtures.mjs). better-sqlite3 and the OpenTelemetry
 * packages stay external (one copy of the API per process) and resolve from this package's
 * node_modules. The bundle is given 120 s.
 */
export function fixtureScript(name: string): { readonly script: string } {
  const packageDir = fileURLToPath(new URL("../..", import.meta.url));
  return bundledBeforeAll({ packageDir, name, external: ["better-sqlite3", /^@opentelemetry\//], timeoutMs: 120_000 });
}
