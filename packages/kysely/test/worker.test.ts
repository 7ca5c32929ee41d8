import { postgresTarget } from "@belay/conformance";
import type { JobStore } from "@belay/contract";
import { Worker, defineJob, silentLogger } from "@belay/core";
import { afterAll, describe, expect, it } from "vitest";
import type { KyselyWorld } from "./support/kysely-fixture.js";
import { postgresTestFile } from "./support/postgres-world.js";
import { scratchFolder, sqliteWorld } from "./support/sqlite-world.js";

// End to end: an order row and its confirmation job committed together through Kysely, then
// run by a Worker of @belay/core started on the same database.

async function until(condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function runsTheJob(world: KyselyWorld & { readonly store: JobStore }): Promise<void> {
  const confirmed: { orderId: string; jobId: string }[] = [];
  const sendConfirmation = defineJob({
    name: "order.confirmation",
    queue: "mail",
    handler: async (payload: { orderId: string }, ctx) => {
      confirmed.push({ orderId: payload.orderId, jobId: ctx.jobId });
      return { sent: true };
    },
  });
  // A long idle poll: the job is found through the wake-up hint sent at the commit.
  const worker = new Worker({
    store: world.store,
    jobs: [sendConfirmation],
    pollIntervalMs: 60_000,
    maintenanceIntervalMs: 60_000,
    logger: silentLogger,
  });
  await worker.start();
  try {
    // Give the worker's first (empty) poll time to pass, so only the hint can wake it in time.
    await new Promise((resolve) => setTimeout(resolve, 200));
    const receipt = await world.belay.transaction(world.db, async (trx) => {
      await trx.insertInto("business_rows").values({ key: "order-42" }).execute();
      return world.belay.enqueue(trx, sendConfirmation, { orderId: "order-42" }, { id: "confirm-order-42" });
    });
    expect(receipt).toEqual({ id: "confirm-order-42", status: "created", state: "scheduled" });
    await until(async () => (await world.store.getJob("confirm-order-42"))?.state === "succeeded", "the job to succeed");
    expect(confirmed).toEqual([{ orderId: "order-42", jobId: "confirm-order-42" }]);
    expect(await world.store.getJobOutput("confirm-order-42")).toBe('{"sent":true}');
    expect(await world.committedRows()).toEqual(["order-42"]);
  } finally {
    await worker.stop();
  }
}

describe("a Worker runs the job enqueued through Kysely", () => {
  const folder = scratchFolder("worker");
  afterAll(() => folder.remove());

  it("on SQLite (the store's file, the application's own connection)", async () => {
    const world = await sqliteWorld(folder);
    try {
      await runsTheJob(world);
    } finally {
      await world.close();
    }
  }, 60_000);
});

const target = await postgresTarget("worker.test.ts");

describe.skipIf(target.url === undefined)(`a Worker runs the job enqueued through Kysely on postgres (${target.reason})`, () => {
  const file = postgresTestFile(target);

  it("on PostgreSQL (the store's schema, the application's own pool)", async () => {
    const world = await file.world();
    try {
      await runsTheJob(world);
    } finally {
      await world.close();
    }
  }, 60_000);
});
