import { defineProject } from "vitest/config";

export default defineProject({
  // Resolve workspace packages to their src/ (the "@belay/source" export condition).
  environments: { ssr: { resolve: { conditions: ["@belay/source"] } } },
  test: {
    name: "server",
    include: ["src/**/*.test.ts", "test/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
