import type { JobStore } from "@belay/contract";
import { Client, defineJob, request } from "@belay/core";
import type { BelayServer } from "../src/index.js";

// A store with something to look at: queues in every state, tags, a workflow, schedules, an
// observer, failures of both kinds, and a minute of throughput.

const job = (name: string, queue: string) => defineJob<unknown>({ name, queue, handler: async () => undefined });
export const SEED_JOBS = {
  email: job("email.send", "mail"),
  resize: job("image.resize", "media"),
  report: job("report.build", "reports"),
  ledger: job("ledger.sync", "payments"),
  heartbeat: job("system.heartbeat", "maintenance"),
  validate: job("order.validate", "orders"),
  charge: job("order.charge", "orders"),
  ship: job("order.ship", "orders"),
};

const TENANTS = ["acme", "globex", "initech", "hooli"];

/** Seeds the store; returns the ids tests act on. */
export async function seedShowcase(store: JobStore, server: BelayServer): Promise<{ reminder: string; deadLettered: string; acmeJobs: number }> {
  const client = new Client({ store, actor: "seed" });
  const j = SEED_JOBS;
  let acmeJobs = 0;
  for (let i = 0; i < 36; i++) {
    const tenant = TENANTS[i % TENANTS.length]!;
    if (tenant === "acme") acmeJobs++;
    const tags = [`tenant=${tenant}`, `region=${i % 3 === 0 ? "us" : "eu"}`, ...(i % 7 === 0 ? ["urgent"] : [])];
    const kind = i % 3 === 0 ? j.resize : i % 5 === 0 ? j.report : j.email;
    await client.enqueue(kind, { n: i }, { id: `job-${String(i).padStart(2, "0")}`, tags });
  }
  await client.enqueue(j.email, { to: "later@example.com" }, { id: "reminder-1", delayMs: 15 * 60_000, tags: ["reminder", "tenant=globex"] });
  await client.enqueue(j.ledger, { accountId: "acct_1" }, { id: "dl-1", tags: ["finance"] });
  await client.enqueue(j.ledger, { accountId: "acct_2" }, { id: "dl-2", tags: ["finance"] });
  await client.enqueue(job("legacy.export", "reports"), { v: 1 }, { id: "q-1" });
  const order = { orderId: "ord_1", amountCents: 1200 };
  const validate = request(j.validate, order, { id: "ord-1-validate", tags: ["tenant=acme"] });
  const charge = request(j.charge, order, { id: "ord-1-charge", parents: [validate], tags: ["tenant=acme"] });
  const ship = request(j.ship, order, { id: "ord-1-ship", parents: [charge], tags: ["tenant=acme"] });
  await client.enqueueWorkflow({ id: "wf-ord-1", name: "order ord_1", jobs: [validate, charge, ship] });
  acmeJobs += 3;
  await client.upsertSchedule({ id: "heartbeat", cron: "*/10 * * * * *", job: j.heartbeat, payload: undefined, tags: ["system"] });
  await client.upsertSchedule({ id: "nightly-report", cron: "0 3 * * *", timeZone: "Europe/Paris", job: j.report, payload: { rows: 0 }, noOverlap: true });
  await store.registerObserver({ subscription: { observerId: "dead-letter-alerts", states: ["deadLettered"] }, now: Date.now() });

  // Run most of them: a claim per queue, then outcomes.
  const now = Date.now() + 1_000;
  const claimed = [];
  for (const queue of ["payments", "reports", "orders", "media", "mail"]) {
    claimed.push(...(await store.claim({ workerId: "seed-worker", queues: [queue], max: 32, leaseMs: 60_000, now })).jobs);
  }
  const reports = claimed.slice(0, -3).map((c) => {
    if (c.jobName === "ledger.sync") return { jobId: c.id, workerId: "seed-worker", attempt: c.attempt, outcome: { type: "failed" as const, retryAt: null, failureDetail: `LedgerUnavailableError: ledger API answered 503 for ${c.id}\n    at syncLedger (jobs.ts:42:11)` } };
    if (c.jobName === "legacy.export") return { jobId: c.id, workerId: "seed-worker", attempt: c.attempt, outcome: { type: "unroutable" as const, reason: "no handler for job name legacy.export" } };
    if (c.id === "job-04") return { jobId: c.id, workerId: "seed-worker", attempt: c.attempt, outcome: { type: "failed" as const, retryAt: now + 30_000, failureDetail: "Error: SMTP 421 try again later" } };
    return { jobId: c.id, workerId: "seed-worker", attempt: c.attempt, outcome: { type: "succeeded" as const, output: JSON.stringify({ ok: true, id: c.id }) } };
  });
  await store.reportOutcomes({ reports, now });
  // The last three claimed stay leased: "executing".
  const at = Date.now();
  for (let s = 299; s >= 0; s--) {
    const wave = Math.round(6 + 5 * Math.sin(s / 9) + (s % 13 === 0 ? 4 : 0));
    server.throughput.add(at - s * 1_000, "succeeded", Math.max(0, wave));
    if (s % 11 === 0) server.throughput.add(at - s * 1_000, "failed", 1 + (s % 3));
  }
  const dead = reports.find((r) => r.jobId.startsWith("dl-"));
  return { reminder: "reminder-1", deadLettered: dead?.jobId ?? "dl-1", acmeJobs };
}
