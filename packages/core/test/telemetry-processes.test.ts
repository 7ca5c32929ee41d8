import { spawn } from "node:child_process";
import { join } from "node:path";
import * as otel from "@opentelemetry/api";
import { SqliteStore } from "@belay/sqlite";
import { describe, expect, it } from "vitest";
import { testDir } from "../../../tests/support/fixtures.mjs";
import { Client, belayTelemetry } from "../src/index.js";
import { greet, refuse } from "./fixtures/otel-jobs.js";
import { fixtureScript } from "./support/bundle.js";
import { type SpanRecord, metering, spanRecord, tracing } from "./support/otel.js";

// This process enqueues on a SQLite file; a child process (test/fixtures/otel-worker.ts, bundled
// and run by plain `node`) runs the worker and prints its spans and metrics. One trace must run
// from this process's send span to the child's process span.

const PRODUCER = 3;
const CONSUMER = 4;
const ERROR = 2;
const dir = testDir("belay-core-otel-");
const worker = fixtureScript("otel-worker");

interface ChildReport {
  readonly spans: readonly SpanRecord[];
  readonly points: Record<string, readonly { attributes: Record<string, unknown>; value: number | { count: number } }[]>;
}

function runChild(args: readonly string[]): Promise<ChildReport> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [worker.script, ...args], { stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (out += chunk));
    // A generous bound so a stuck child fails the test instead of hanging it.
    const timer = setTimeout(() => child.kill("SIGKILL"), 90_000);
    child.on("error", reject);
    child.on("exit", (code, signal) => {
      clearTimeout(timer);
      if (code !== 0) return reject(new Error(`the worker process exited with ${code ?? signal}; stdout: ${out}`));
      resolve(JSON.parse(out.trim().split("\n").at(-1)!) as ChildReport);
    });
  });
}

describe("OpenTelemetry across two processes", () => {
  it("one trace runs from the enqueuing process's send span to the worker process's process span", async () => {
    const path = join(dir, "jobs.db");
    const store = new SqliteStore({ path });
    await store.migrate();
    const traces = tracing();
    const metrics = metering();
    const client = new Client({ store, telemetry: belayTelemetry({ api: otel, tracerProvider: traces.provider, meterProvider: metrics.provider }) });

    await client.enqueue(greet, { name: "ada" }, { id: "greet-1" });
    await client.enqueue(refuse, undefined, { id: "refuse-1" });
    await store.close();

    const child = await runChild([path, "greet-1", "refuse-1"]);
    const local = traces.exporter.getFinishedSpans().map(spanRecord);
    const sendOf = (id: string) => local.find((s) => s.kind === PRODUCER && s.attributes["messaging.message.id"] === id)!;
    const processOf = (id: string) => child.spans.filter((s) => s.kind === CONSUMER && s.attributes["messaging.message.id"] === id);

    for (const id of ["greet-1", "refuse-1"]) {
      const send = sendOf(id);
      const runs = processOf(id);
      expect(runs).toHaveLength(1);
      expect(runs[0]!.traceId).toBe(send.traceId);
      expect(runs[0]!.parentSpanId).toBe(send.spanId);
      expect(runs[0]!.links).toEqual([{ traceId: send.traceId, spanId: send.spanId }]);
    }
    // No span was active at enqueue (no context manager is registered here): each send starts its trace.
    expect(sendOf("greet-1").parentSpanId).toBeNull();
    expect(sendOf("greet-1").traceId).not.toBe(sendOf("refuse-1").traceId);
    expect(processOf("greet-1")[0]).toMatchObject({ name: "process greetings", status: { code: 0 } });
    expect(processOf("refuse-1")[0]!.status).toMatchObject({ code: ERROR, message: "PermanentJobError: refused on purpose" });

    const counted = (name: string, jobName: string) =>
      (child.points[name] ?? []).filter((p) => p.attributes["belay.job.name"] === jobName).reduce((n, p) => n + (typeof p.value === "number" ? p.value : p.value.count), 0);
    expect(counted("belay.jobs.started", "greet")).toBe(1);
    expect(counted("belay.jobs.succeeded", "greet")).toBe(1);
    expect(counted("belay.jobs.failed", "refuse")).toBe(1);
    expect(counted("belay.jobs.dead_lettered", "refuse")).toBe(1);
    expect(counted("belay.job.duration", "greet")).toBe(1);
    expect(counted("belay.job.queue_wait", "refuse")).toBe(1);
  }, 180_000);
});
