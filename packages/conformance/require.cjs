// `require("@belay/conformance")` lands here. The package is an ES module only: its suites call
// vitest's describe/it, and vitest is ESM-only, so no CommonJS build of them could run.
const error = new Error(
  "@belay/conformance is an ES module and cannot be loaded with require(): its suites run inside vitest, which is ESM-only. " +
    'Import it in a vitest test file instead: import { runStoreConformance } from "@belay/conformance"; ' +
    "vitest runs test files as ES modules whatever your package's \"type\" (a test file compiled to CommonJS, or jest, cannot load it). " +
    "The PostgreSQL helpers, @belay/conformance/postgres, need no vitest and load with require() as well.",
);
error.code = "ERR_REQUIRE_ESM";
throw error;
