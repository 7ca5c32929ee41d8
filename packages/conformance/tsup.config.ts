import { packageBuild } from "../../tsup.base.js";

// ESM only: the suites run inside vitest, which is ESM-only, so a CommonJS build of them could
// never work. `require("@belay/conformance")` gets `require.cjs` instead, which says so and names
// the fix; `@belay/conformance/postgres` needs no vitest and loads with `require()` too (Node
// >= 20.19 loads an ES module from require()).
export default packageBuild({ entry: ["src/index.ts", "src/postgres.ts"], format: ["esm"], external: ["vitest"] });
