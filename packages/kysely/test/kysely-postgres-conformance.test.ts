import { postgresTarget, runTransactionalEnqueueConformance } from "@belay/conformance";
import { describe } from "vitest";
import { kyselyFixture } from "./support/kysely-fixture.js";
import { postgresTestFile } from "./support/postgres-world.js";

const target = await postgresTarget("kysely-postgres-conformance.test.ts");

describe.skipIf(target.url === undefined)(`kysely on postgres (${target.reason})`, () => {
  // Each test owns a fresh schema (Belay's tables and the business table), dropped after it.
  const file = postgresTestFile(target);

  runTransactionalEnqueueConformance({
    name: "kysely on postgres",
    setUp: async () => kyselyFixture(await file.world()),
  });
});
