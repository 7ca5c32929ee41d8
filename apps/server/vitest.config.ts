import { defineProject } from "vitest/config";

export default defineProject({
  // Resolve workspace packages to their src/ (the "@belay/source" export condition), in the test
  // files (ssr) and in the globalSetup file, which vitest loads in its own `__vitest__` environment.
  environments: {
    ssr: { resolve: { conditions: ["@belay/source"] } },
    __vitest__: { resolve: { conditions: ["@belay/source"] } },
  },
  test: {
    name: "server",
    include: ["src/**/*.test.ts", "test/**/*.test.ts"],
    // One PostgreSQL of this project's own (the hostile-input suites run on it too).
    globalSetup: ["test/postgres-global-setup.ts"],
    // Tests wait for events with deadlines of their own (20–30 s, for a loaded machine).
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
