import { describe } from "vitest";
import { swarmSuite } from "./simulator-swarm.js";

describe("simulator swarm: the promise half", () => swarmSuite("promises"));
