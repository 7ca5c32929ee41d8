import { defineProject } from "vitest/config";

export default defineProject({
  // Resolve workspace packages to their src/ (the "@belay/source" export condition).
  environments: { ssr: { resolve: { conditions: ["@belay/source"] } } },
  test: {
    name: "host",
    include: ["src/**/*.test.ts", "test/**/*.test.ts"],
    // A graceful-stop test waits out its stop deadline, and every wait polls with a 30 s deadline.
    testTimeout: 120_000,
    hookTimeout: 60_000,
  },
});
