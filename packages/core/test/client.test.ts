import { isBelayError } from "@belay/contract";
import { MemoryStore } from "@belay/memory";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { Client, defineJob, request } from "../src/index.js";

const T0 = Date.UTC(2026, 0, 1);
const clock = { now: () => T0, setTimer: () => ({ cancel() {} }) };
const job = defineJob({ name: "report.build", queue: "reports", tags: ["kind=report"], schema: z.object({ month: z.string() }), handler: () => {} });

async function setup() {
  const store = new MemoryStore();
  await store.migrate();
  return { store, client: new Client({ store, clock, actor: "tests" }) };
}

describe("Client", () => {
  it("enqueues with the job type's queue and tags, the caller's tags, delay and trace context", async () => {
    const { store, client } = await setup();
    const receipt = await client.enqueue(job, { month: "2026-01" }, { id: "r1", delayMs: 5_000, tags: ["urgent", "tenant=acme"], traceContext: "00-aa-bb-01" });
    expect(receipt).toEqual({ id: "r1", status: "created", state: "scheduled" });
    expect(await store.getJob("r1")).toMatchObject({
      queue: "reports",
      dueAt: T0 + 5_000,
      payload: '{"month":"2026-01"}',
      traceContext: "00-aa-bb-01",
      tags: [
        { key: "kind", value: "report" },
        { key: "", value: "urgent" },
        { key: "tenant", value: "acme" },
      ],
    });
  });

  it("returns the existing job for a repeated id (idempotent enqueue)", async () => {
    const { client } = await setup();
    await client.enqueue(job, { month: "a" }, { id: "same" });
    expect(await client.enqueue(job, { month: "b" }, { id: "same" })).toEqual({ id: "same", status: "duplicate", state: "scheduled" });
  });

  it("checks the payload against the schema at enqueue and writes nothing when it fails", async () => {
    const { store, client } = await setup();
    const error = await client.enqueue(job, { month: 7 } as never, { id: "bad" }).catch((e: unknown) => e);
    expect(isBelayError(error, "BELAY_PAYLOAD_INVALID")).toBe(true);
    expect((error as Error).message).toContain("month");
    expect(await store.getJob("bad")).toBeNull();
  });

  it("throws the store's bound rejection as a typed error naming limit and size", async () => {
    const store = new MemoryStore({ bounds: { payloadBytes: 20 } });
    const client = new Client({ store, clock });
    const error = await client.enqueue(job, { month: "x".repeat(30) }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "BELAY_PAYLOAD_TOO_LARGE", limit: 20, actual: 42, field: "payload" });
  });

  it("enqueues many atomically with requests naming each other as parents", async () => {
    const { store, client } = await setup();
    const a = request(job, { month: "a" });
    const b = request(job, { month: "b" }, { parents: [a] });
    const receipts = await client.enqueueMany([a, b]);
    expect(receipts.map((r) => r.state)).toEqual(["scheduled", "awaitingParents"]);
    expect((await store.getJob(b.id))?.parentIds).toEqual([a.id]);
  });

  it("enqueues inside a store transaction: nothing exists until it commits", async () => {
    const { store, client } = await setup();
    const tx = store.beginTransaction();
    await client.enqueue(job, { month: "t" }, { id: "in-tx", tx });
    expect(await store.getJob("in-tx")).toBeNull();
    await tx.commit();
    expect(await store.getJob("in-tx")).not.toBeNull();
  });

  it("validates cron and time zone before storing a schedule", async () => {
    const { store, client } = await setup();
    await expect(client.upsertSchedule({ id: "s", cron: "61 * * * *", job, payload: { month: "m" } })).rejects.toMatchObject({
      code: "BELAY_INVALID_INPUT",
      field: "cron",
    });
    await expect(
      client.upsertSchedule({ id: "s", cron: "0 * * * *", timeZone: "Mars/Olympus", job, payload: { month: "m" } }),
    ).rejects.toMatchObject({ field: "timeZone" });
    expect(await store.listSchedules()).toEqual([]);
    await client.upsertSchedule({ id: "s", cron: "0 * * * *", timeZone: "Europe/Paris", job, payload: { month: "m" } });
    expect(await store.getSchedule("s")).toMatchObject({ jobName: "report.build", queue: "reports", timeZone: "Europe/Paris", cursor: T0 });
  });

  it("records the actor of operator actions in the audit log", async () => {
    const { store, client } = await setup();
    await client.enqueue(job, { month: "x" }, { id: "c1" });
    await client.cancel("c1", { actor: "alice" });
    await client.pauseQueue("reports");
    const { records } = await store.listAuditRecords();
    expect(records.map((r) => [r.actor, r.action, r.target])).toEqual([
      ["alice", "cancel", "c1"],
      ["tests", "pauseQueue", "reports"],
    ]);
  });
});
