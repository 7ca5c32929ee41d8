import { EVENT_WAIT_TIMEOUTS, workspaceProject } from "../../tests/support/vitest-project.mjs";

export default workspaceProject({ name: "sqlite", ...EVENT_WAIT_TIMEOUTS });
