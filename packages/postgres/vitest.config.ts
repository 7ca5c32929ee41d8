import { defineProject } from "vitest/config";

export default defineProject({
  // Resolve workspace packages to their src/ (the "@belay/source" export condition), in the test
  // files (ssr) and in the globalSetup file, which vitest loads in its own `__vitest__` environment.
  environments: {
    ssr: { resolve: { conditions: ["@belay/source"] } },
    __vitest__: { resolve: { conditions: ["@belay/source"] } },
  },
  test: {
    name: "postgres",
    include: ["src/**/*.test.ts", "test/**/*.test.ts"],
    // Tests wait for events with deadlines of their own (up to 30 s, for a loaded machine); the
    // default 5 s per test would cut those waits short.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // One PostgreSQL of this project's own for all its files, never shared with another project.
    globalSetup: ["test/postgres-global-setup.ts"],
    // The files share that cluster: run them one after another, so the drain and crash tests'
    // load never sits inside the conformance suite's observer clauses, whose walker waits for
    // every older transaction of the cluster to finish.
    fileParallelism: false,
  },
});
