import { defineProject } from "vitest/config";

// The README examples, run as written in a fresh npm project on the packed packages
// (readme-examples.test.ts; the convention is in the repository README, "Examples").
export default defineProject({
  test: {
    name: "examples",
    include: ["*.test.ts"],
    // One PostgreSQL of this project's own, for the examples that need one (DATABASE_URL, BELAY_STORE).
    globalSetup: ["postgres-global-setup.ts"],
    // Each example waits with deadlines of its own (60 s each step); the first run installs the
    // fresh project (better-sqlite3 compiles: about two minutes), later runs reuse the cache.
    testTimeout: 240_000,
    hookTimeout: 900_000,
    // Examples are child processes that mostly wait: a few at once.
    maxConcurrency: 4,
  },
});
