import { promiseDifferentialSuite } from "./promise-differential.js";

promiseDifferentialSuite("b");
