import { spawnSync } from "node:child_process";
import { workspaceProject } from "../../tests/support/vitest-project.mjs";

// The server-backed files (test/*.test.ts) need a SQL Server: BELAY_TEST_MSSQL_URL, or a Docker
// engine for a container (test/sqlserver-global-setup.ts). Without either they are left out of the
// run — not skipped — and the setup prints one loud line saying SQL Server was NOT verified; the
// unit tests of src/ always run.
const serverReachable = Boolean(process.env["BELAY_TEST_MSSQL_URL"]) || spawnSync("docker", ["info"], { stdio: "ignore", timeout: 10_000 }).status === 0;

export default workspaceProject({
  name: "sqlserver",
  ...(serverReachable ? {} : { include: ["src/**/*.test.ts"] }),
  testTimeout: 60_000,
  hookTimeout: 120_000,
  // One SQL Server for all files (BELAY_TEST_MSSQL_URL, or one container): the drain and crash
  // tests' load stays out of the conformance suite's observer clauses, whose walker waits for
  // the database's oldest active rowversion.
  globalSetup: ["test/sqlserver-global-setup.ts"],
  fileParallelism: false,
});
