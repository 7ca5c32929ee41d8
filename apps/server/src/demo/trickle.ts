import { Client, request } from "@belay/core";
import type { JobStore } from "@belay/contract";
import { buildReport, chargeOrder, resizeImage, sendEmail, shipOrder, syncLedger, validateOrder } from "./jobs.js";

const TENANTS = ["acme", "globex", "initech", "umbrella", "hooli"];
const REGIONS = ["eu", "us"];
const pick = <T>(list: readonly T[]): T => list[Math.floor(Math.random() * list.length)]!;
const tags = (...extra: string[]) => [`tenant=${pick(TENANTS)}`, `region=${pick(REGIONS)}`, ...extra];

/**
 * Keeps the demo moving: a job every second or so (mostly emails and image resizes, some
 * reports, emails scheduled minutes ahead that can be cancelled), an order workflow every 20 s,
 * and a ledger sync that dead-letters every minute. Returns the stop function.
 */
export function startTrickle(store: JobStore, onError: (error: unknown) => void): () => void {
  const client = new Client({ store, actor: "demo" });
  let tick = 0;
  let orders = 1000;
  const enqueueOne = async () => {
    tick += 1;
    const roll = Math.random();
    if (roll < 0.38) {
      await client.enqueue(sendEmail, { to: `user${Math.floor(Math.random() * 900) + 100}@example.com`, template: pick(["welcome", "receipt", "reset-password"]) }, { tags: tags(...(Math.random() < 0.15 ? ["urgent"] : [])) });
    } else if (roll < 0.66) {
      await client.enqueue(resizeImage, { imageId: `img_${Math.random().toString(36).slice(2, 10)}`, width: pick([320, 640, 1280]) }, { tags: tags("thumbnail") });
    } else if (roll < 0.8) {
      await client.enqueue(buildReport, { reportId: `r-${tick}`, rows: Math.floor(Math.random() * 50_000) }, { tags: tags("batch") });
    } else {
      await client.enqueue(sendEmail, { to: `later${tick}@example.com`, template: "reminder" }, { delayMs: (2 + Math.floor(Math.random() * 8)) * 60_000, tags: tags("reminder") });
    }
    if (tick % 20 === 0) {
      orders += 1;
      const order = { orderId: `ord_${orders}`, amountCents: 500 + Math.floor(Math.random() * 20_000) };
      const orderTags = tags(...(order.amountCents > 15_000 ? ["vip"] : []));
      const validate = request(validateOrder, order, { tags: orderTags });
      const charge = request(chargeOrder, order, { parents: [validate], tags: orderTags });
      const ship = request(shipOrder, order, { parents: [charge], tags: orderTags });
      await client.enqueueWorkflow({ name: `order ${order.orderId}`, jobs: [validate, charge, ship] });
    }
    if (tick % 60 === 5) await client.enqueue(syncLedger, { accountId: `acct_${pick(TENANTS)}` }, { tags: ["finance"] });
  };
  const timer = setInterval(() => {
    enqueueOne().catch(onError);
  }, 1_100);
  timer.unref?.();
  return () => clearInterval(timer);
}

/** The first minute's worth at once, so the dashboard is not empty when it opens. */
export async function seed(store: JobStore): Promise<void> {
  const client = new Client({ store, actor: "demo" });
  for (let i = 0; i < 12; i++) {
    await client.enqueue(sendEmail, { to: `user${100 + i}@example.com`, template: "welcome" }, { tags: tags(...(i % 4 === 0 ? ["urgent"] : [])) });
  }
  for (let i = 0; i < 6; i++) {
    await client.enqueue(sendEmail, { to: `later${i}@example.com`, template: "reminder" }, { delayMs: (3 + i) * 60_000, tags: tags("reminder") });
  }
  await client.enqueue(syncLedger, { accountId: "acct_acme" }, { tags: ["finance", "tenant=acme"] });
  const order = { orderId: "ord_1000", amountCents: 4_200 };
  const validate = request(validateOrder, order, { tags: ["tenant=acme"] });
  const charge = request(chargeOrder, order, { parents: [validate], tags: ["tenant=acme"] });
  const ship = request(shipOrder, order, { parents: [charge], tags: ["tenant=acme"] });
  await client.enqueueWorkflow({ name: "order ord_1000", jobs: [validate, charge, ship] });
}
