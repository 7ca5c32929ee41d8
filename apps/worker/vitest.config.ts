import { workspaceProject } from "../../tests/support/vitest-project.mjs";

export default workspaceProject({ name: "worker" });
