import { defineProject } from "vitest/config";

export default defineProject({
  // Resolve workspace packages to their src/ (the "@belay/source" export condition).
  environments: { ssr: { resolve: { conditions: ["@belay/source"] } } },
  test: {
    name: "kysely",
    include: ["src/**/*.test.ts", "test/**/*.test.ts"],
    // Files that share the PostgreSQL server run one at a time, as in @belay/postgres: observer
    // clauses wait for the cluster's oldest open transaction, so parallel files slow each other.
    fileParallelism: false,
  },
});
