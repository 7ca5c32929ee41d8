import { defineProject } from "vitest/config";

export default defineProject({
  // Resolve workspace packages to their src/ (the "@belay/source" export condition).
  environments: { ssr: { resolve: { conditions: ["@belay/source"] } } },
  test: {
    name: "postgres",
    include: ["src/**/*.test.ts", "test/**/*.test.ts"],
    // The files share one PostgreSQL cluster: run them one after another, so the drain and
    // crash tests' load never sits inside the conformance suite's observer clauses, whose
    // walker waits for every older transaction of the cluster to finish.
    fileParallelism: false,
  },
});
