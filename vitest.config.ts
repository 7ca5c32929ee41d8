import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    // Each folder is a Vitest project with its own vitest.config.ts.
    projects: ["packages/*", "apps/*", "tests", "examples"],
  },
});
