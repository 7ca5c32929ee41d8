import { EVENT_WAIT_TIMEOUTS, workspaceProject } from "../../tests/support/vitest-project.mjs";

export default workspaceProject({
  name: "kysely",
  ...EVENT_WAIT_TIMEOUTS,
  // One PostgreSQL of this project's own for all its files, never shared with another project.
  globalSetup: ["test/postgres-global-setup.ts"],
  // Files that share that server run one at a time, as in @belay/postgres: observer clauses
  // wait for the cluster's oldest open transaction, so parallel files slow each other.
  fileParallelism: false,
});
