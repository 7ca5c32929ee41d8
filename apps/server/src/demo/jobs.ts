import { type AnyJobDefinition, type ObserverOptions, type ScheduleOptions, defineJob } from "@belay/core";
import { z } from "zod";

// The demo's job types: a small online shop. Some succeed, some fail and retry, one always
// dead-letters, a cron heartbeat, and a three-step order workflow.

const pause = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => {
      clearTimeout(timer);
      reject(signal.reason);
    });
  });

const between = (min: number, max: number) => min + Math.floor(Math.random() * (max - min));

export const sendEmail = defineJob({
  name: "email.send",
  queue: "mail",
  retry: { maxAttempts: 5, delaysMs: [2_000, 4_000, 8_000] },
  schema: z.object({ to: z.string().email(), template: z.string().min(1) }),
  handler: async ({ to, template }, ctx) => {
    await pause(between(150, 900), ctx.signal);
    if (Math.random() < 0.12) throw new Error(`SMTP 421 ${to}: service not available, try again later`);
    return { messageId: `<${ctx.jobId.toLowerCase()}@mail.demo>`, template };
  },
});

export const resizeImage = defineJob({
  name: "image.resize",
  queue: "media",
  schema: z.object({ imageId: z.string(), width: z.number().int().positive() }),
  handler: async ({ imageId, width }, ctx) => {
    await pause(between(200, 1_500), ctx.signal);
    return { imageId, width, bytes: between(20_000, 400_000) };
  },
});

export const buildReport = defineJob({
  name: "report.build",
  queue: "reports",
  retry: { maxAttempts: 4, delaysMs: [3_000, 6_000] },
  schema: z.object({ reportId: z.string(), rows: z.number().int().nonnegative() }),
  handler: async ({ reportId, rows }, ctx) => {
    await pause(between(1_000, 3_000), ctx.signal);
    if (ctx.attempt === 1 && Math.random() < 0.5) throw new Error(`warehouse query for ${reportId} timed out after 30 s`);
    ctx.addTags("built");
    return { reportId, rows, url: `https://reports.demo/${reportId}.pdf` };
  },
});

/** Always fails: the ledger it talks to is "down", so it dead-letters after three attempts. */
export const syncLedger = defineJob({
  name: "ledger.sync",
  queue: "payments",
  retry: { maxAttempts: 3, delaysMs: [2_000, 4_000] },
  schema: z.object({ accountId: z.string() }),
  handler: async ({ accountId }, ctx) => {
    await pause(between(100, 400), ctx.signal);
    const error = new Error(`ledger API answered 503 for account ${accountId}`);
    error.name = "LedgerUnavailableError";
    throw error;
  },
});

export const heartbeat = defineJob({
  name: "system.heartbeat",
  queue: "maintenance",
  schema: z.object({ source: z.string() }),
  handler: async ({ source }) => ({ ok: true, source, at: new Date().toISOString() }),
});

const orderSchema = z.object({ orderId: z.string(), amountCents: z.number().int().positive() });

export const validateOrder = defineJob({
  name: "order.validate",
  queue: "orders",
  schema: orderSchema,
  handler: async ({ orderId }, ctx) => {
    await pause(between(200, 600), ctx.signal);
    return { orderId, valid: true };
  },
});

export const chargeOrder = defineJob({
  name: "order.charge",
  queue: "orders",
  retry: { maxAttempts: 4, delaysMs: [2_000, 4_000] },
  schema: orderSchema,
  handler: async ({ orderId, amountCents }, ctx) => {
    await pause(between(300, 900), ctx.signal);
    if (ctx.attempt === 1 && Math.random() < 0.3) throw new Error(`card network timeout charging ${orderId}`);
    return { orderId, chargeId: `ch_${ctx.jobId.slice(-10).toLowerCase()}`, amountCents };
  },
});

export const shipOrder = defineJob({
  name: "order.ship",
  queue: "orders",
  schema: orderSchema,
  handler: async ({ orderId }, ctx) => {
    await pause(between(300, 1_200), ctx.signal);
    return { orderId, tracking: `1Z${ctx.jobId.slice(-12)}` };
  },
});

export const jobs: readonly AnyJobDefinition[] = [sendEmail, resizeImage, buildReport, syncLedger, heartbeat, validateOrder, chargeOrder, shipOrder];

export const schedules: readonly ScheduleOptions<AnyJobDefinition>[] = [
  { id: "heartbeat", cron: "*/10 * * * * *", job: heartbeat, payload: { source: "cron" }, tags: ["system"] },
  { id: "nightly-report", cron: "0 3 * * *", timeZone: "Europe/Paris", job: buildReport, payload: { reportId: "nightly", rows: 0 }, noOverlap: true },
];

export const observers: readonly ObserverOptions[] = [
  {
    id: "dead-letter-alerts",
    states: ["deadLettered"],
    handle: (delivery) => {
      console.log(`demo: alert: ${delivery.jobName} ${delivery.jobId} dead-lettered after ${delivery.attempt} attempts`);
    },
  },
];
