import { createRequire } from "node:module";
import { postgresGlobalSetup } from "../packages/conformance/src/postgres-global-setup.js";

// This project's own PostgreSQL (see postgresGlobalSetup for where it comes from), with the
// workspace's own pg and testcontainers, as in the store packages' test projects.
const require = createRequire(new URL("../packages/postgres/package.json", import.meta.url));
export default postgresGlobalSetup({
  pg: require("pg"),
  containers: () => import(require.resolve("testcontainers")),
});
