import { runTransactionalEnqueueConformance } from "@belay/conformance";
import { afterAll } from "vitest";
import { kyselyFixture } from "./support/kysely-fixture.js";
import { scratchFolder, sqliteWorld } from "./support/sqlite-world.js";

// Every test gets a file of its own in a temporary folder, removed after the file's tests.
const folder = scratchFolder("conformance");
afterAll(() => folder.remove());

runTransactionalEnqueueConformance({
  name: "kysely on sqlite",
  setUp: async () => kyselyFixture(await sqliteWorld(folder)),
});
