import { defineProject } from "vitest/config";

export default defineProject({
  // Resolve workspace packages to their src/ (the "@belay/source" export condition).
  environments: { ssr: { resolve: { conditions: ["@belay/source"] } } },
  test: {
    name: "worker",
    include: ["src/**/*.test.ts", "test/**/*.test.ts"],
  },
});
