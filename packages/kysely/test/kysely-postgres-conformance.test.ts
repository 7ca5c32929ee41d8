import { postgresTarget, runTransactionalEnqueueConformance } from "@belay/conformance";
import { afterAll, describe } from "vitest";
import { kyselyFixture } from "./support/kysely-fixture.js";
import { CLEANUP_MS, PostgresTestFile } from "./support/postgres-world.js";

const target = await postgresTarget("kysely-postgres-conformance.test.ts");

describe.skipIf(target.url === undefined)(`kysely on postgres (${target.reason})`, () => {
  // Each test owns a fresh schema (Belay's tables and the business table), dropped after it.
  const file = new PostgresTestFile(target.url ?? "postgres://unused");
  afterAll(async () => {
    await file.close();
    await target.stop();
  }, CLEANUP_MS);

  runTransactionalEnqueueConformance({
    name: "kysely on postgres",
    setUp: async () => kyselyFixture(await file.world()),
  });
});
