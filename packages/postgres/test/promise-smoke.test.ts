import { promiseLifecycleSmoke } from "@belay/conformance";
import { describe, it } from "vitest";
import { PostgresPromiseStore } from "../src/index.js";
import { CountingPool } from "./promise-helpers.js";
import { pgTarget, testDatabase } from "./pg-target.js";

const target = await pgTarget("promise-smoke.test.ts");
const url = target.url;

describe.skipIf(url === undefined)(`postgres promise store smoke (${target.reason})`, () => {
  const { pool, schema: newSchema } = testDatabase(target);
  const schema = newSchema("psmoke");

  it("lifecycle", async () => {
    const counting = new CountingPool(pool);
    const s = new PostgresPromiseStore({ pool: counting, schema });
    await s.migrate();
    await promiseLifecycleSmoke(s);
    console.info(counting.statements.join("\n"));
    await s.close();
  });
});
