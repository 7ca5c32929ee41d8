import { fileURLToPath } from "node:url";
import { bundledBeforeAll } from "../../../../tests/support/fixtures.mjs";

/**
 * A TypeScript test fixture of this package (test/fixtures/<name>.ts), bundled for plain `node`
 * before the current suite's tests (tests/support/fixtures.mjs); `pg` stays external and resolves
 * from this package's node_modules.
 */
export function fixtureScript(name: string): { readonly script: string } {
  return bundledBeforeAll({ packageDir: fileURLToPath(new URL("../..", import.meta.url)), name, external: ["pg"] });
}
