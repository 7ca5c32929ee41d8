// The host switches OpenTelemetry on by configuration. @opentelemetry/api is an optional peer that
// this workspace does not install for the host, so the tests hand loadTelemetry what an import
// would return: a minimal API that records spans (the spans themselves are tested with the real
// SDK in packages/core/test/telemetry*.test.ts).
import { isBelayError } from "@belay/contract";
import { type OtelApi, defineJob, silentLogger } from "@belay/core";
import { afterEach, describe, expect, it } from "vitest";
import { WorkerHost, hostConfigSchema, jobsFromModule, loadTelemetry, openStore, parseHostConfig } from "../src/index.js";

/** An API whose tracer records each started span's name and attributes; instruments do nothing. */
function recordingApi(): { api: OtelApi; spans: { name: string; attributes: Record<string, unknown> }[] } {
  const spans: { name: string; attributes: Record<string, unknown> }[] = [];
  let next = 1;
  const tracer = {
    startSpan(name: string, options?: { attributes?: Record<string, unknown> }) {
      const spanId = (next++).toString(16).padStart(16, "0");
      spans.push({ name, attributes: { ...options?.attributes } });
      return {
        spanContext: () => ({ traceId: "4bf92f3577b34da6a3ce929d0e0e4736", spanId, traceFlags: 1 }),
        setAttribute: () => undefined,
        setStatus: () => undefined,
        recordException: () => undefined,
        end: () => undefined,
      };
    },
  };
  const instrument = { add() {}, record() {}, addCallback() {}, removeCallback() {} };
  const meter = { createCounter: () => instrument, createHistogram: () => instrument, createObservableGauge: () => instrument };
  const context = {};
  const api: OtelApi = {
    trace: { getTracer: () => tracer, setSpan: () => context, setSpanContext: () => context },
    metrics: { getMeter: () => meter },
    context: { active: () => context, with: (_ctx, fn, thisArg, ...args) => fn.apply(thisArg, args) },
    ROOT_CONTEXT: context,
  };
  return { api, spans };
}

let host: WorkerHost | null = null;
afterEach(async () => {
  await host?.stop();
  host = null;
});

describe("OpenTelemetry in the host", () => {
  it("is off by default and switched on by --opentelemetry, BELAY_OPENTELEMETRY or the config file", () => {
    const base = ["--store", "memory:", "--jobs", "./jobs.mjs"];
    expect(parseHostConfig(base, {}).opentelemetry).toBe(false);
    expect(parseHostConfig([...base, "--opentelemetry"], {}).opentelemetry).toBe(true);
    expect(parseHostConfig(base, { BELAY_OPENTELEMETRY: "1" }).opentelemetry).toBe(true);
    expect(parseHostConfig(base, { BELAY_OPENTELEMETRY: "0" }).opentelemetry).toBe(false);
    expect(hostConfigSchema.parse({ store: "memory:", jobs: "x", opentelemetry: true }).opentelemetry).toBe(true);
  });

  it("says what to install when @opentelemetry/api is missing", async () => {
    const missing = Object.assign(new Error("Cannot find package '@opentelemetry/api' imported from x"), { code: "ERR_MODULE_NOT_FOUND" });
    const error = await loadTelemetry(() => Promise.reject(missing)).catch((e: unknown) => e);
    expect(isBelayError(error) && error.code).toBe("BELAY_INVALID_INPUT");
    expect(error).toMatchObject({ field: "opentelemetry" });
    expect(String((error as Error).message)).toContain("npm install @opentelemetry/api");
  });

  it("a host with telemetry traces the jobs it runs", async () => {
    const { api, spans } = recordingApi();
    const telemetry = await loadTelemetry(async () => ({ default: api }));
    const greet = defineJob({ name: "greet", queue: "greetings", handler: () => {} });
    const config = hostConfigSchema.parse({ store: "memory:", jobs: "(inline)", migrate: true, pollIntervalMs: 20, opentelemetry: true });
    const store = await openStore(config.store);
    host = await WorkerHost.create(config, { store, jobs: jobsFromModule({ greet }, "inline"), logger: silentLogger, telemetry });
    expect(host.telemetry).toBe(telemetry);
    await host.start();
    await store.enqueue({ jobs: [{ id: "g1", jobName: "greet", queue: "greetings", payload: "null", dueAt: 0 }], now: Date.now() });
    const deadline = Date.now() + 30_000;
    while ((await store.getJob("g1"))?.state !== "succeeded") {
      if (Date.now() > deadline) throw new Error("g1 not done");
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(spans).toContainEqual({ name: "process greetings", attributes: expect.objectContaining({ "messaging.message.id": "g1", "messaging.operation.type": "process" }) });
  });
});
