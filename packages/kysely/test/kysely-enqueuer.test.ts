import { postgresTarget } from "@belay/conformance";
import { type JobStore, isBelayError } from "@belay/contract";
import { defineJob, request } from "@belay/core";
import Database from "better-sqlite3";
import { CamelCasePlugin, Kysely, SqliteDialect } from "kysely";
import { afterAll, describe, expect, it } from "vitest";
import { kyselyEnqueuer } from "../src/index.js";
import type { BusinessDb, KyselyWorld } from "./support/kysely-fixture.js";
import { CLEANUP_MS, postgresTestFile } from "./support/postgres-world.js";
import { scratchFolder, sqliteWorld } from "./support/sqlite-world.js";
import { testJob } from "./support/test-jobs.js";
import { rejectionCode } from "../../../tests/support/errors.mjs";

// What the transactional-enqueue suite does not cover: the bridge's own API (a plain Kysely,
// `transaction()`, refusals of what is not a transaction on the store's database, plugins,
// overlapping calls), on both dialects.

/** The code of the Belay error `action` fails with (`undefined` when it succeeds). */
const codeOf = (action: () => Promise<unknown>) => rejectionCode(action, isBelayError);

/** How long a wait for an event may take on a loaded machine before the test gives up. */
const DEADLINE_MS = 30_000;

/** The hints `store` hears from now on (once its LISTEN connection is up, on PostgreSQL). */
async function hintsOf(store: JobStore): Promise<string[]> {
  const heard: string[] = [];
  store.subscribeHints!((queue) => heard.push(queue));
  const listening = () => (store as { readonly listening?: boolean }).listening;
  const deadline = Date.now() + DEADLINE_MS;
  while (listening() === false) {
    if (Date.now() > deadline) throw new Error("the store's LISTEN connection never came up");
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return heard;
}

async function heard(hints: readonly string[], queue: string): Promise<boolean> {
  const deadline = Date.now() + DEADLINE_MS;
  while (!hints.includes(queue)) {
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return true;
}

type World = KyselyWorld & { readonly store: JobStore };

/** The clauses both dialects share. */
function bridgeClauses(newWorld: () => Promise<World>): void {
  const worlds: World[] = [];
  const world = async () => {
    const w = await newWorld();
    worlds.push(w);
    return w;
  };
  afterAll(async () => {
    for (const w of worlds) await w.close();
  }, CLEANUP_MS);

  it("a plain Kysely instance enqueues in a transaction of its own, committed (and hinted) when the call returns", async () => {
    const w = await world();
    const hints = await hintsOf(w.store);
    const receipt = await w.belay.enqueue(w.db, testJob, { note: "hi" }, { id: "solo", queue: "solo" });
    expect(receipt).toEqual({ id: "solo", status: "created", state: "scheduled" });
    expect(await w.store.getJob("solo")).toMatchObject({ state: "scheduled", queue: "solo", payload: '{"note":"hi"}' });
    expect(await heard(hints, "solo")).toBe(true);
    const flow = await w.belay.enqueueWorkflow(w.db, { id: "flow", name: "flow", jobs: [request(testJob, {}, { id: "member" })] });
    expect(flow).toMatchObject({ id: "flow", status: "created" });
    expect(await w.store.getWorkflow("flow")).toMatchObject({ jobCount: 1 });
  });

  it("a refused call on a plain Kysely instance throws and writes nothing", async () => {
    const w = await world();
    const requests = [request(testJob, {}, { id: "fine" }), request(testJob, {}, { id: "orphan", parents: ["nowhere"] })];
    expect(await codeOf(() => w.belay.enqueueMany(w.db, requests))).toBe("BELAY_UNKNOWN_PARENT");
    expect(await w.store.getJob("fine")).toBeNull();
  });

  it("transaction() commits the business row with the job, then hints; a callback that throws leaves neither", async () => {
    const w = await world();
    const hints = await hintsOf(w.store);
    await expect(
      w.belay.transaction(w.db, async (trx) => {
        await trx.insertInto("business_rows").values({ key: "lost" }).execute();
        await w.belay.enqueue(trx, testJob, {}, { id: "lost", queue: "lost" });
        throw new Error("the business logic failed");
      }),
    ).rejects.toThrow("the business logic failed");
    await w.belay.transaction(w.db, async (trx) => {
      await trx.insertInto("business_rows").values({ key: "kept" }).execute();
      await w.belay.enqueue(trx, testJob, {}, { id: "kept", queue: "kept" });
    });
    expect(await heard(hints, "kept")).toBe(true);
    expect(hints).not.toContain("lost");
    expect(await w.committedRows()).toEqual(["kept"]);
    expect(await w.store.getJob("lost")).toBeNull();
    expect(await w.store.getJob("kept")).toMatchObject({ state: "scheduled" });
  });

  it("a transaction from db.transaction().execute() works as well", async () => {
    const w = await world();
    await w.db.transaction().execute(async (trx) => {
      await trx.insertInto("business_rows").values({ key: "order" }).execute();
      await w.belay.enqueueMany(trx, [request(testJob, {}, { id: "a" }), request(testJob, {}, { id: "b", parents: ["a"] })]);
    });
    expect(await w.store.getJob("b")).toMatchObject({ state: "awaitingParents", parentIds: ["a"] });
  });

  it("overlapping calls on one transaction run one after another (a refused one never undoes another)", async () => {
    const w = await world();
    const trx = await w.db.startTransaction().execute();
    const calls = await Promise.allSettled([
      w.belay.enqueueMany(trx, [request(testJob, {}, { id: "one" }), request(testJob, {}, { id: "two" })]),
      w.belay.enqueueMany(trx, [request(testJob, {}, { id: "three" }), request(testJob, {}, { id: "bad", parents: ["nowhere"] })]),
      w.belay.enqueue(trx, testJob, {}, { id: "four" }),
    ]);
    expect(calls.map((c) => c.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    await trx.commit().execute();
    for (const id of ["one", "two", "four"]) expect(await w.store.getJob(id), id).not.toBeNull();
    for (const id of ["three", "bad"]) expect(await w.store.getJob(id), id).toBeNull();
  });

  it("plugins of the caller's instance (CamelCasePlugin, withSchema) do not change what the store reads", async () => {
    const w = await world();
    const camel = w.db.withPlugin(new CamelCasePlugin());
    await camel.transaction().execute(async (trx) => {
      await w.belay.enqueueMany(trx, [request(testJob, {}, { id: "p" }), request(testJob, {}, { id: "c", parents: ["p"] })]);
      await w.belay.enqueueWorkflow(trx, { id: "w", name: "w", jobs: [request(testJob, {}, { id: "m" })] });
      expect((await w.belay.enqueue(trx, testJob, {}, { id: "p" })).status).toBe("duplicate");
    });
    expect(await w.store.getJob("c")).toMatchObject({ state: "awaitingParents" });
    expect(await w.store.getWorkflow("w")).toMatchObject({ jobCount: 1 });
  });

  it("anything but a Kysely instance or transaction is refused", async () => {
    const w = await world();
    for (const db of [undefined, null, {}, "trx", { executeQuery: () => undefined }]) {
      expect(await codeOf(() => w.belay.enqueue(db as never, testJob, {}, { id: "x" })), String(db)).toBe("BELAY_INVALID_TRANSACTION");
    }
    expect(await w.store.getJob("x")).toBeNull();
  });

  it("a bad payload is refused before anything reaches the database", async () => {
    const w = await world();
    const strict = defineJob({
      name: "strict",
      schema: {
        "~standard": {
          version: 1,
          vendor: "test",
          validate: (value: unknown) =>
            typeof value === "number" ? { value } : { issues: [{ message: "expected a number" }] },
        },
      },
      handler: async () => undefined,
    });
    const trx = await w.db.startTransaction().execute();
    expect(await codeOf(() => w.belay.enqueue(trx, strict, "nope" as unknown as number, { id: "strict" }))).toBe("BELAY_PAYLOAD_INVALID");
    await trx.rollback().execute();
  });
}

describe("kysely enqueuer on sqlite", () => {
  const folder = scratchFolder("enqueuer");
  afterAll(() => folder.remove());

  bridgeClauses(() => sqliteWorld(folder));

  it("refuses a transaction on an in-memory database, and one on another file", async () => {
    const w = await sqliteWorld(folder);
    const memory = new Kysely<BusinessDb>({ dialect: new SqliteDialect({ database: new Database(":memory:") }) });
    try {
      await memory.transaction().execute(async (trx) => {
        expect(await codeOf(() => w.belay.enqueue(trx, testJob, {}, { id: "m" }))).toBe("BELAY_INVALID_TRANSACTION");
      });
      const elsewhere = await w.elsewhere!();
      await elsewhere.transaction().execute(async (trx) => {
        expect(await codeOf(() => w.belay.enqueue(trx, testJob, {}, { id: "e" }))).toBe("BELAY_INVALID_TRANSACTION");
      });
      expect(await w.store.getJob("m")).toBeNull();
      expect(await w.store.getJob("e")).toBeNull();
    } finally {
      await memory.destroy();
      await w.close();
    }
  });

  it("a store that cannot enqueue through a caller's transaction is refused at construction", () => {
    expect(() => kyselyEnqueuer({} as never)).toThrow(/enqueue through a caller's transaction/);
  });
});

const target = await postgresTarget("kysely-enqueuer.test.ts");

describe.skipIf(target.url === undefined)(`kysely enqueuer on postgres (${target.reason})`, () => {
  const file = postgresTestFile(target);
  const folder = scratchFolder("enqueuer-pg");
  afterAll(() => folder.remove());

  bridgeClauses(() => file.world());

  it("a hint rides the caller's own transaction, however it was opened: heard at its commit, not before", async () => {
    const w = await file.world();
    try {
      const hints = await hintsOf(w.store);
      await w.belay.enqueue(w.db, testJob, {}, { id: "warm-up", queue: "warm-up" });
      expect(await heard(hints, "warm-up")).toBe(true);
      await w.db.transaction().execute(async (trx) => {
        await w.belay.enqueue(trx, testJob, {}, { id: "hinted", queue: "hinted" });
        await new Promise((resolve) => setTimeout(resolve, 300));
        expect(hints).not.toContain("hinted");
      });
      expect(await heard(hints, "hinted")).toBe(true);
    } finally {
      await w.close();
    }
  });

  it("a transaction of the other dialect is refused by each store", async () => {
    const pgWorld = await file.world();
    const sqlite = await sqliteWorld(folder);
    try {
      await sqlite.db.transaction().execute(async (trx) => {
        expect(await codeOf(() => pgWorld.belay.enqueue(trx, testJob, {}, { id: "cross" }))).toBe("BELAY_INVALID_TRANSACTION");
      });
      // The SQLite store's first statement (PRAGMA) fails on PostgreSQL, which aborts the
      // transaction: the caller can only roll it back.
      const trx = await pgWorld.db.startTransaction().execute();
      expect(await codeOf(() => sqlite.belay.enqueue(trx, testJob, {}, { id: "cross" }))).toBe("BELAY_INVALID_TRANSACTION");
      await trx.rollback().execute();
      expect(await pgWorld.store.getJob("cross")).toBeNull();
      expect(await sqlite.store.getJob("cross")).toBeNull();
    } finally {
      await sqlite.close();
      await pgWorld.close();
    }
  });

  it("a transaction on the store's database without its schema is refused", async () => {
    const w = await file.world();
    try {
      await file.appPool.query(`DROP SCHEMA "${w.schema}" CASCADE`);
      await w.db.transaction().execute(async (trx) => {
        expect(await codeOf(() => w.belay.enqueue(trx, testJob, {}, { id: "gone" }))).toBe("BELAY_INVALID_TRANSACTION");
      });
    } finally {
      await w.close();
    }
  });
});
