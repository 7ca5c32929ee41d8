import { workspaceProject } from "../../tests/support/vitest-project.mjs";

export default workspaceProject({
  name: "host",
  // A graceful-stop test waits out its stop deadline, and every wait polls with a 30 s deadline.
  testTimeout: 120_000,
  hookTimeout: 60_000,
});
