import { defineProject } from "vitest/config";

// Checks of the repository's own shape: package boundaries and the store scheme.
export default defineProject({
  test: {
    name: "repo",
    include: ["*.test.ts"],
  },
});
