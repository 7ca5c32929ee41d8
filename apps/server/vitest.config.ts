import { EVENT_WAIT_TIMEOUTS, workspaceProject } from "../../tests/support/vitest-project.mjs";

export default workspaceProject({
  name: "server",
  // One PostgreSQL of this project's own (the hostile-input suites run on it too).
  globalSetup: ["test/postgres-global-setup.ts"],
  // Tests wait for events with deadlines of their own (20–30 s, for a loaded machine).
  ...EVENT_WAIT_TIMEOUTS,
});
