import { httpDifferentialSuite } from "./http-differential.js";

await httpDifferentialSuite("memory");
