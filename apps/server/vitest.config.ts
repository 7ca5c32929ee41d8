import { defineProject } from "vitest/config";

export default defineProject({
  // Resolve workspace packages to their src/ (the "@belay/source" export condition).
  environments: { ssr: { resolve: { conditions: ["@belay/source"] } } },
  test: {
    name: "server",
    include: ["src/**/*.test.ts", "test/**/*.test.ts"],
    // Tests wait for events with deadlines of their own (20–30 s, for a loaded machine).
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
