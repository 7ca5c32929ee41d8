import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Worker, defineJob, silentLogger } from "@belay/core";
import { SqliteStore } from "@belay/sqlite";
import Database from "better-sqlite3";
import { type Generated, Kysely, SqliteDialect } from "kysely";
import { afterAll, expect, it } from "vitest";
import { kyselyEnqueuer } from "../src/index.js";

// The README's example, as it runs: only the file path (a temporary folder), the log line
// (recorded) and the shutdown at the end differ.

const dir = mkdtempSync(join(tmpdir(), "belay-kysely-readme-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

it("README: an order row and its confirmation email, in one transaction", async () => {
  const path = join(dir, "shop.db");
  const sent: number[] = [];

  // --- README ---
  interface ShopDb {
    orders: { id: Generated<number>; customer: string; total_cents: number };
  }

  const sendOrderConfirmation = defineJob({
    name: "email.order-confirmation",
    queue: "mail",
    handler: async ({ orderId }: { orderId: number }) => {
      sent.push(orderId); // README: await mailer.sendConfirmation(orderId);
    },
  });

  // Co-resident: Belay's tables live in the application's own SQLite file.
  const store = new SqliteStore({ path });
  await store.migrate();
  const database = new Database(path);
  database.exec("CREATE TABLE IF NOT EXISTS orders (id INTEGER PRIMARY KEY, customer TEXT NOT NULL, total_cents INTEGER NOT NULL)");
  const db = new Kysely<ShopDb>({ dialect: new SqliteDialect({ database }) });

  const belay = kyselyEnqueuer(store);

  const orderId = await belay.transaction(db, async (trx) => {
    const order = await trx
      .insertInto("orders")
      .values({ customer: "c-7", total_cents: 4200 })
      .returning("id")
      .executeTakeFirstOrThrow();
    await belay.enqueue(trx, sendOrderConfirmation, { orderId: order.id }, { id: `order-confirmation-${order.id}` });
    return order.id;
  });

  const worker = new Worker({ store, jobs: [sendOrderConfirmation], logger: silentLogger });
  await worker.start();
  // --- end of README ---

  try {
    for (const deadline = Date.now() + 30_000; sent.length === 0 && Date.now() < deadline; ) await new Promise((r) => setTimeout(r, 20));
    expect(sent).toEqual([orderId]);
    expect(await store.getJob(`order-confirmation-${orderId}`)).toMatchObject({ state: "succeeded" });
    expect(await db.selectFrom("orders").select(["id", "customer"]).execute()).toEqual([{ id: orderId, customer: "c-7" }]);
  } finally {
    await worker.stop();
    await db.destroy();
    await store.close();
  }
});
