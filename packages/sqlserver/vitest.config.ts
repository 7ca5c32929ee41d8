import { defineProject } from "vitest/config";

export default defineProject({
  // Resolve workspace packages to their src/ (the "@belay/source" export condition), in the test
  // files (ssr) and in the globalSetup file, which vitest loads in its own `__vitest__` environment.
  environments: {
    ssr: { resolve: { conditions: ["@belay/source"] } },
    __vitest__: { resolve: { conditions: ["@belay/source"] } },
  },
  test: {
    name: "sqlserver",
    include: ["src/**/*.test.ts", "test/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // One SQL Server for all files (BELAY_TEST_MSSQL_URL, or one container): the drain and crash
    // tests' load stays out of the conformance suite's observer clauses, whose walker waits for
    // the database's oldest active rowversion.
    globalSetup: ["test/sqlserver-global-setup.ts"],
    fileParallelism: false,
  },
});
