import { packageBuild } from "../../tsup.base.js";

// The binary only, ESM (a CLI).
export default packageBuild({ entry: ["src/main.ts"], format: ["esm"], dts: false });
