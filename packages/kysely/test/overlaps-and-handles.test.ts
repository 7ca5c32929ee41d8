import { postgresTarget } from "@belay/conformance";
import { isBelayError } from "@belay/contract";
import { request } from "@belay/core";
import { Kysely, PostgresDialect, sql } from "kysely";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { kyselyEnqueuer } from "../src/index.js";
import type { BusinessDb } from "./support/kysely-fixture.js";
import { postgresTestFile } from "./support/postgres-world.js";
import { testJob } from "./support/test-jobs.js";

// Handles and overlaps a review found unsafe: two enqueuers on one transaction, a plain Kysely
// handle inside a transaction begun with raw SQL, and an application session in another time zone.

const target = await postgresTarget("overlaps-and-handles.test.ts");

describe.skipIf(target.url === undefined)(`kysely enqueuer: overlaps and handles on postgres (${target.reason})`, () => {
  const file = postgresTestFile(target);

  it("two enqueuers on one transaction at once: each gets its own results, and what was created commits", async () => {
    const world = await file.world();
    try {
      const second = kyselyEnqueuer(world.store);
      const ids = ["o-1", "o-2", "o-3"];
      const trx = await world.db.startTransaction().execute();
      const [created, refused] = await Promise.allSettled([
        world.belay.enqueueMany(trx, ids.map((id) => request(testJob, {}, { id }))),
        second.enqueue(trx, testJob, {}, { id: "o-orphan", parents: ["nope"] }),
      ]);
      expect(created.status === "fulfilled" && created.value.map((r) => r.status)).toEqual(["created", "created", "created"]);
      expect(refused.status).toBe("rejected");
      await trx.commit().execute();
      for (const id of ids) expect(await world.store.getJob(id), id).not.toBeNull();
      expect(await world.store.getJob("o-orphan")).toBeNull();
    } finally {
      await world.close();
    }
  });

  it("a plain Kysely handle inside a transaction begun with raw SQL is refused, and nothing commits early", async () => {
    const world = await file.world();
    try {
      const outcome = await world.db.connection().execute(async (conn) => {
        await sql`begin`.execute(conn);
        await conn.insertInto("business_rows").values({ key: "raw-begin" }).execute();
        let code: string | undefined;
        try {
          await world.belay.enqueue(conn, testJob, {}, { id: "raw-job" });
        } catch (error) {
          code = isBelayError(error) ? error.code : String(error);
        }
        await sql`rollback`.execute(conn);
        return code;
      });
      expect(outcome).toBe("BELAY_INVALID_TRANSACTION");
      expect(await world.committedRows()).toEqual([]);
      expect(await world.store.getJob("raw-job")).toBeNull();
      // A plain handle outside any transaction still gets a transaction of its own.
      await world.belay.enqueue(world.db, testJob, {}, { id: "plain-job" });
      expect(await world.store.getJob("plain-job")).not.toBeNull();
    } finally {
      await world.close();
    }
  });

  it("an application session in another time zone is on the same server", async () => {
    const world = await file.world();
    const pool = new pg.Pool({ connectionString: target.url!, max: 2, options: "-c TimeZone=Asia/Tokyo -c DateStyle=German" });
    const tokyo = new Kysely<BusinessDb>({ dialect: new PostgresDialect({ pool }) }).withSchema(world.schema);
    try {
      await tokyo.transaction().execute(async (trx) => {
        await trx.insertInto("business_rows").values({ key: "tokyo" }).execute();
        await world.belay.enqueue(trx, testJob, {}, { id: "tokyo-job" });
      });
      expect(await world.store.getJob("tokyo-job")).not.toBeNull();
    } finally {
      await tokyo.destroy();
      await world.close();
    }
  });
});
