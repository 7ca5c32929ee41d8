import { promiseLifecycleSmoke } from "@belay/conformance";
import type pg from "pg";
import { afterAll, beforeAll, describe, it } from "vitest";
import { PostgresPromiseStore } from "../src/index.js";
import { CountingPool } from "./promise-helpers.js";
import { dropSchema, pgTarget, randomSchema, testPool } from "./pg-target.js";

const target = await pgTarget("promise-smoke.test.ts");
const url = target.url;

describe.skipIf(url === undefined)(`postgres promise store smoke (${target.reason})`, () => {
  let pool: pg.Pool;
  const schema = randomSchema("psmoke");
  beforeAll(() => {
    pool = testPool(url!);
  });
  afterAll(async () => {
    await dropSchema(pool, schema);
    await pool.end();
    await target.stop();
  });

  it("lifecycle", async () => {
    const counting = new CountingPool(pool);
    const s = new PostgresPromiseStore({ pool: counting, schema });
    await s.migrate();
    await promiseLifecycleSmoke(s);
    console.info(counting.statements.join("\n"));
    await s.close();
  });
});
