import { defineProject } from "vitest/config";

export default defineProject({
  // Resolve workspace packages to their src/ (the "@belay/source" export condition).
  environments: { ssr: { resolve: { conditions: ["@belay/source"] } } },
  test: {
    name: "sqlite",
    include: ["src/**/*.test.ts", "test/**/*.test.ts"],
    // Tests wait for events with deadlines of their own (up to 30 s, for a loaded machine); the
    // default 5 s per test would cut those waits short.
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
