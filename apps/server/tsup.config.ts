import { packageBuild } from "../../tsup.base.js";

// The binary and the library entry, ESM only (a CLI); declarations for the library.
export default packageBuild({ entry: ["src/main.ts", "src/index.ts"], format: ["esm"], dts: { entry: "src/index.ts" } });
