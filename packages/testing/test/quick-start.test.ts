// The README's quick start, verbatim where it can be: if this test breaks, fix the README too.
import { Client, Worker, defineJob } from "@belay/core";
import { MemoryStore } from "@belay/memory";
import { expect, it } from "vitest";
import { z } from "zod";
import { createTestHarness } from "../src/index.js";

// 1. Define a job: a stable name, a schema for its payload, a handler.
export const sendWelcome = defineJob({
  name: "email.welcome",
  schema: z.object({ userId: z.string() }),
  retry: { maxAttempts: 5 },
  handler: async ({ userId }, ctx) => {
    ctx.logger.info("welcoming", { userId });
    return { sent: true };
  },
});

it("quick start: define, enqueue, run a worker", async () => {
  // 2. Enqueue it (the payload type is checked at compile time and at run time).
  const store = new MemoryStore(); // production: new SqliteStore(...) or new PostgresStore(...)
  await store.migrate();
  const client = new Client({ store });
  const { id } = await client.enqueue(sendWelcome, { userId: "u1" }, { delayMs: 1_000 });

  // 3. Run a worker.
  const worker = new Worker({ store, jobs: [sendWelcome] });
  await worker.start();
  // … on shutdown: await worker.stop({ timeoutMs: 30_000 });

  await expect.poll(async () => (await store.getJob(id))?.state, { timeout: 5_000, interval: 50 }).toBe("succeeded");
  expect(await store.getJobOutput(id)).toBe('{"sent":true}');
  await worker.stop({ timeoutMs: 30_000 });
});

it("quick start: test it on virtual time", async () => {
  const h = await createTestHarness({ jobs: [sendWelcome] });
  const { id } = await h.client.enqueue(sendWelcome, { userId: "u1" }, { delayMs: 60_000 });
  await h.advance(60_000);
  expect((await h.job(id)).state).toBe("succeeded");
  await h.stop();
});
