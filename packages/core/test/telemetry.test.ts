import * as otel from "@opentelemetry/api";
import { MemoryStore } from "@belay/memory";
import { afterEach, describe, expect, it } from "vitest";
import { Client, PermanentJobError, Worker, belayTelemetry, defineJob, parseTraceContext, silentLogger } from "../src/index.js";
import { countOf, eventually, metering, spanRecord, tracing, valueOf } from "./support/otel.js";

const PRODUCER = 3;
const CONSUMER = 4;
const ERROR = 2;

const workers: Worker[] = [];
afterEach(async () => {
  await Promise.all(workers.splice(0).map((w) => w.stop({ timeoutMs: 1_000 })));
});

async function setup() {
  const store = new MemoryStore();
  await store.migrate();
  const traces = tracing();
  const metrics = metering();
  const telemetry = belayTelemetry({ api: otel, tracerProvider: traces.provider, meterProvider: metrics.provider });
  return { store, traces, metrics, telemetry };
}

const ok = defineJob({ name: "mail.send", queue: "mail", handler: () => "sent" });
const flaky = defineJob({
  name: "report.build",
  queue: "reports",
  retry: { maxAttempts: 2, delaysMs: [0] },
  handler: () => {
    throw new TypeError("no data");
  },
});
const doomed = defineJob({ name: "bill.charge", queue: "billing", handler: () => {
  throw new PermanentJobError("card declined");
} });
/** Leased by a worker that vanished; the sweep dead-letters it (one attempt allowed). */
const ghost = defineJob({ name: "ghost.run", queue: "ghost", retry: { maxAttempts: 1 }, handler: () => {} });

describe("OpenTelemetry", () => {
  it("a send span per enqueued job, its trace context carried on the job; duplicates are not counted", async () => {
    const { store, traces, metrics, telemetry } = await setup();
    const client = new Client({ store, telemetry });
    await client.enqueue(ok, undefined, { id: "m1" });
    await client.enqueue(ok, undefined, { id: "m1" });
    await client.enqueue(ok, undefined, { id: "m2", traceContext: "caller's own" });

    const sends = traces.exporter.getFinishedSpans().map(spanRecord);
    expect(sends.map((s) => [s.name, s.kind, s.attributes["messaging.message.id"], s.attributes["belay.enqueue.status"]])).toEqual([
      ["send mail", PRODUCER, "m1", "created"],
      ["send mail", PRODUCER, "m1", "duplicate"],
      ["send mail", PRODUCER, "m2", "created"],
    ]);
    expect(sends[0]!.attributes).toMatchObject({
      "messaging.system": "belay",
      "messaging.operation.type": "send",
      "messaging.destination.name": "mail",
      "belay.job.name": "mail.send",
    });
    const carried = parseTraceContext((await store.getJob("m1"))!.traceContext);
    expect(carried).toMatchObject({ traceId: sends[0]!.traceId, spanId: sends[0]!.spanId });
    expect((await store.getJob("m2"))!.traceContext).toBe("caller's own");
    const points = await metrics.collect();
    expect(valueOf(points, "belay.jobs.enqueued", { "belay.job.name": "mail.send", "messaging.destination.name": "mail" })).toBe(2);
  });

  it("a rejected enqueue ends its send span with an error status and counts nothing", async () => {
    const { store, traces, metrics, telemetry } = await setup();
    const client = new Client({ store, telemetry });
    await expect(client.enqueue(ok, undefined, { id: "x".repeat(10_000) })).rejects.toThrow();
    const [send] = traces.exporter.getFinishedSpans().map(spanRecord);
    expect(send!.status.code).toBe(ERROR);
    expect((await metrics.collect()).get("belay.jobs.enqueued") ?? []).toEqual([]);
  });

  it("process spans continue the job's trace; the job metrics have the right counts", async () => {
    const { store, traces, metrics, telemetry } = await setup();
    const client = new Client({ store, telemetry });
    for (let i = 0; i < 3; i++) await client.enqueue(ok, undefined, { id: `ok-${i}` });
    await client.enqueue(flaky, undefined, { id: "flaky" });
    await client.enqueue(doomed, undefined, { id: "doomed" });
    await client.enqueue(ok, undefined, { id: "later", delayMs: 3_600_000 });
    await client.enqueue(ghost, undefined, { id: "ghost" });
    await store.claim({ workerId: "vanished", queues: ["ghost"], max: 1, leaseMs: 1, now: Date.now() });

    const worker = new Worker({
      store,
      jobs: [ok, flaky, doomed, ghost],
      telemetry,
      logger: silentLogger,
      pollIntervalMs: 20,
      maintenanceIntervalMs: 20,
      groups: [{ name: "main", queues: ["mail", "reports", "billing", "ghost"], poolSize: 4 }],
    });
    workers.push(worker);
    await worker.start();

    const done = { "ok-0": "succeeded", "ok-1": "succeeded", "ok-2": "succeeded", flaky: "deadLettered", doomed: "deadLettered", ghost: "deadLettered" };
    await eventually(async () => {
      for (const [id, state] of Object.entries(done)) if ((await store.getJob(id))?.state !== state) return undefined;
      return true;
    }, "every job to end");
    // The dead-letterings are counted when their outcomes are reported, just after the state changes.
    const points = await eventually(async () => {
      const p = await metrics.collect();
      return valueOf(p, "belay.jobs.dead_lettered", { "belay.job.name": "bill.charge", "messaging.destination.name": "billing", "belay.dead_letter.cause": "failed" }) === 1 &&
        valueOf(p, "belay.jobs.dead_lettered", { "belay.job.name": "report.build", "messaging.destination.name": "reports", "belay.dead_letter.cause": "failed" }) === 1
        ? p
        : undefined;
    }, "the dead-letterings to be reported");

    const mail = { "belay.job.name": "mail.send", "messaging.destination.name": "mail" };
    const reports = { "belay.job.name": "report.build", "messaging.destination.name": "reports" };
    const billing = { "belay.job.name": "bill.charge", "messaging.destination.name": "billing" };
    expect(valueOf(points, "belay.jobs.enqueued", mail)).toBe(4);
    expect(valueOf(points, "belay.jobs.enqueued", reports)).toBe(1);
    expect(valueOf(points, "belay.jobs.started", mail)).toBe(3);
    expect(valueOf(points, "belay.jobs.started", reports)).toBe(2);
    expect(valueOf(points, "belay.jobs.started", billing)).toBe(1);
    expect(valueOf(points, "belay.jobs.succeeded", mail)).toBe(3);
    expect(valueOf(points, "belay.jobs.succeeded", reports)).toBe(0);
    expect(valueOf(points, "belay.jobs.failed", reports)).toBe(2);
    expect(valueOf(points, "belay.jobs.failed", billing)).toBe(1);
    expect(valueOf(points, "belay.jobs.failed", mail)).toBe(0);
    expect(valueOf(points, "belay.jobs.dead_lettered", { "belay.dead_letter.cause": "leaseExpired" })).toBe(1);
    expect(valueOf(points, "belay.leases.expired", { "belay.job.state": "deadLettered" })).toBe(1);
    expect(countOf(points, "belay.job.duration", { ...mail, "belay.job.outcome": "succeeded" })).toBe(3);
    expect(countOf(points, "belay.job.duration", { ...reports, "belay.job.outcome": "failed" })).toBe(2);
    expect(countOf(points, "belay.job.queue_wait", mail)).toBe(3);
    expect(countOf(points, "belay.job.queue_wait", reports)).toBe(2);
    // Only the delayed job is still live.
    expect(valueOf(points, "belay.queue.depth", { "messaging.destination.name": "mail", "belay.job.state": "scheduled" })).toBe(1);
    expect((points.get("belay.queue.depth") ?? []).length).toBe(1);
    expect(valueOf(points, "belay.worker.slots.limit", { "belay.worker.group": "main" })).toBe(4);
    expect(valueOf(points, "belay.worker.slots.in_use", { "belay.worker.group": "main" })).toBe(0);

    const spans = traces.exporter.getFinishedSpans().map(spanRecord);
    const sendOf = (id: string) => spans.find((s) => s.kind === PRODUCER && s.attributes["messaging.message.id"] === id)!;
    const processOf = (id: string) => spans.filter((s) => s.kind === CONSUMER && s.attributes["messaging.message.id"] === id);
    for (const id of ["ok-0", "flaky", "doomed"]) {
      const send = sendOf(id);
      expect(processOf(id).length, `process spans of ${id}`).toBeGreaterThan(0);
      for (const process of processOf(id)) {
        expect(process.traceId).toBe(send.traceId);
        expect(process.parentSpanId).toBe(send.spanId);
        expect(process.links).toEqual([{ traceId: send.traceId, spanId: send.spanId }]);
      }
    }
    const [okRun] = processOf("ok-0");
    expect(okRun).toMatchObject({
      name: "process mail",
      attributes: { "messaging.system": "belay", "messaging.operation.type": "process", "messaging.destination.name": "mail", "messaging.consumer.group.name": "main", "belay.job.outcome": "succeeded" },
    });
    expect(okRun!.status.code).not.toBe(ERROR);
    const flakyRuns = processOf("flaky");
    expect(flakyRuns.map((s) => [s.attributes["belay.job.attempt"], s.status.code, s.attributes["error.type"]])).toEqual([
      [1, ERROR, "TypeError"],
      [2, ERROR, "TypeError"],
    ]);
    expect(flakyRuns[0]!.status.message).toBe("TypeError: no data");
  });

  it("a tracer and meter that throw never reach the job path: jobs are enqueued, run and reported as without telemetry", async () => {
    const store = new MemoryStore();
    await store.migrate();
    const broken = () => {
      throw new Error("exporter down");
    };
    const brokenTracer = { startSpan: broken };
    const brokenMeter = { createCounter: () => ({ add: broken }), createHistogram: () => ({ record: broken }), createObservableGauge: broken };
    const telemetry = belayTelemetry({
      api: otel,
      tracerProvider: { getTracer: () => brokenTracer } as never,
      meterProvider: { getMeter: () => brokenMeter } as never,
    });
    const client = new Client({ store, telemetry });
    expect(await client.enqueue(ok, undefined, { id: "b1" })).toMatchObject({ status: "created" });
    expect(await client.enqueue(flaky, undefined, { id: "b2" })).toMatchObject({ status: "created" });
    const worker = new Worker({ store, jobs: [ok, flaky], telemetry, logger: silentLogger, pollIntervalMs: 20, groups: [{ name: "main", queues: ["mail", "reports"], poolSize: 2 }] });
    workers.push(worker);
    await worker.start();
    const states = async () => [(await store.getJob("b1"))?.state, (await store.getJob("b2"))?.state];
    await eventually(async () => ((await states()).join() === "succeeded,deadLettered" ? true : undefined), "both jobs to end");
    expect(await states()).toEqual(["succeeded", "deadLettered"]);
  });

  it("a no-op tracer (the API without an SDK) carries no trace context on the jobs", async () => {
    const store = new MemoryStore();
    await store.migrate();
    const client = new Client({ store, telemetry: belayTelemetry({ api: otel }) });
    await client.enqueue(ok, undefined, { id: "n1" });
    expect((await store.getJob("n1"))!.traceContext).toBeNull();
  });

  it("core never imports @opentelemetry/api (an optional peer)", async () => {
    const { readdirSync, readFileSync } = await import("node:fs");
    const { join, dirname } = await import("node:path");
    const { fileURLToPath } = await import("node:url");
    const src = join(dirname(fileURLToPath(import.meta.url)), "../src");
    const importing = readdirSync(src, { recursive: true, encoding: "utf8" })
      .filter((f) => f.endsWith(".ts") && !f.endsWith(".test.ts"))
      .filter((f) => /^\s*(import|export)\b[^\n]*["']@opentelemetry\/|\b(require|import)\(\s*["']@opentelemetry\//m.test(readFileSync(join(src, f), "utf8")));
    expect(importing).toEqual([]);
  });
});
