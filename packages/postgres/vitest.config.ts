import { EVENT_WAIT_TIMEOUTS, workspaceProject } from "../../tests/support/vitest-project.mjs";

export default workspaceProject({
  name: "postgres",
  ...EVENT_WAIT_TIMEOUTS,
  // One PostgreSQL of this project's own for all its files, never shared with another project.
  globalSetup: ["test/postgres-global-setup.ts"],
  // The files share that cluster: run them one after another, so the drain and crash tests'
  // load never sits inside the conformance suite's observer clauses, whose walker waits for
  // every older transaction of the cluster to finish.
  fileParallelism: false,
});
