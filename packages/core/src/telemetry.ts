import type { ClaimedJob, EnqueueResult, ExpiredLease, JobStore, NewJob, OutcomeResult } from "@belay/contract";
import type { ExecutionResult } from "./driver-types.js";
import type {
  OtelApi, OtelAttributes, OtelContext, OtelMeterProvider, OtelObservableCallback, OtelObservableResult, OtelSpan,
  OtelSpanContext, OtelTracer, OtelTracerProvider,
} from "./otel-api.js";
import { formatTraceContext, parseTraceContext } from "./trace-context.js";

/** The instrumentation scope of every span and metric. */
export const TELEMETRY_SCOPE = "@belay/core";

// The values of the API's SpanKind and SpanStatusCode enums (fixed by the OTLP protocol).
const PRODUCER = 3;
const CONSUMER = 4;
const ERROR = 2;

/** States counted by the `belay.queue.depth` gauge: jobs not yet terminal. */
const LIVE_STATES = new Set(["scheduled", "awaitingParents", "leased"]);

export interface BelayTelemetryOptions {
  /** The `@opentelemetry/api` namespace: `import * as otel from "@opentelemetry/api"`. */
  readonly api: OtelApi;
  /** Default: the globally registered one (`api.trace`). */
  readonly tracerProvider?: OtelTracerProvider;
  /** Default: the globally registered one (`api.metrics`). */
  readonly meterProvider?: OtelMeterProvider;
  /** Report `belay.queue.depth` (a `countJobs()` per collection) from each worker. Default true. */
  readonly queueDepth?: boolean;
}

/** A handler run's span, with what its metrics need. */
export interface ProcessSpan {
  readonly span: OtelSpan;
  readonly context: OtelContext;
  readonly attributes: OtelAttributes;
}

/** What a worker reports through its gauges. */
export interface ObservedWorker {
  readonly store: JobStore;
  readonly pumps: () => readonly ObservedPump[];
}

export interface ObservedPump {
  readonly group: string;
  readonly workerId: string;
  readonly executing: number;
  readonly poolSize: number;
}

/**
 * OpenTelemetry for a {@link Client} and a {@link Worker}: spans after the messaging semantic
 * conventions (an enqueue is a `send` span whose W3C trace context the job carries; a handler run
 * is a `process` span in that trace) and the job metrics. Without it, neither does any telemetry
 * work; core itself never imports `@opentelemetry/api`.
 *
 * Metrics: counters `belay.jobs.enqueued`, `belay.jobs.started`, `belay.jobs.succeeded`,
 * `belay.jobs.failed`, `belay.jobs.dead_lettered`, `belay.leases.expired`; histograms
 * `belay.job.duration` and `belay.job.queue_wait` (seconds); gauges `belay.queue.depth` and
 * `belay.worker.slots.in_use` / `belay.worker.slots.limit`. Job metrics carry `belay.job.name`
 * and `messaging.destination.name` (the queue).
 *
 * @example
 * ```ts
 * import * as otel from "@opentelemetry/api";
 * const telemetry = belayTelemetry({ api: otel });
 * const client = new Client({ store, telemetry });
 * const worker = new Worker({ store, jobs, telemetry });
 * ```
 */
export function belayTelemetry(options: BelayTelemetryOptions): BelayTelemetry {
  return new BelayTelemetry(options);
}

/** Failed runs remembered for their report (dead-letter counting); the oldest are forgotten past this. */
const AWAITING_REPORT_MAX = 10_000;

/** What a handler run gets when the tracer itself failed: nothing is recorded. */
const NOOP_SPAN: OtelSpan = {
  spanContext: () => ({ traceId: "0".repeat(32), spanId: "0".repeat(16), traceFlags: 0 }),
  setAttribute: () => undefined,
  setStatus: () => undefined,
  recordException: () => undefined,
  end: () => undefined,
};

/** Made by {@link belayTelemetry}; pass it as `telemetry` to a `Client` or `Worker`. */
export class BelayTelemetry {
  readonly #api: OtelApi;
  readonly #tracer: OtelTracer;
  readonly #queueDepth: boolean;
  readonly #meter;
  readonly #enqueued;
  readonly #started;
  readonly #succeeded;
  readonly #failed;
  readonly #deadLettered;
  readonly #leasesExpired;
  readonly #duration;
  readonly #queueWait;
  /** Failed executions awaiting their report, so a dead-lettering can be counted by job name and queue. */
  readonly #awaitingReport = new Map<string, OtelAttributes>();
  readonly #workers = new Set<ObservedWorker>();
  #gauges = false;
  #warned = false;

  /**
   * Instrumentation never throws into the job path: a tracer, meter or provider that throws is
   * reported once on stderr and the call goes on without it.
   */
  #safely<T>(what: string, fallback: () => T, fn: () => T): T {
    try {
      return fn();
    } catch (error) {
      if (!this.#warned) {
        this.#warned = true;
        console.error(`[belay] telemetry: ${what} threw, ignored (said once): ${error instanceof Error ? error.message : String(error)}`);
      }
      return fallback();
    }
  }

  constructor(options: BelayTelemetryOptions) {
    this.#api = options.api;
    this.#tracer = (options.tracerProvider ?? options.api.trace).getTracer(TELEMETRY_SCOPE);
    const meter = (options.meterProvider ?? options.api.metrics).getMeter(TELEMETRY_SCOPE);
    this.#meter = meter;
    this.#queueDepth = options.queueDepth ?? true;
    const jobs = "{job}";
    this.#enqueued = meter.createCounter("belay.jobs.enqueued", { description: "Jobs created by enqueue (duplicates not counted).", unit: jobs });
    this.#started = meter.createCounter("belay.jobs.started", { description: "Handler runs started.", unit: jobs });
    this.#succeeded = meter.createCounter("belay.jobs.succeeded", { description: "Handler runs that succeeded.", unit: jobs });
    this.#failed = meter.createCounter("belay.jobs.failed", { description: "Handler runs that failed (retried or not).", unit: jobs });
    this.#deadLettered = meter.createCounter("belay.jobs.dead_lettered", { description: "Jobs dead-lettered.", unit: jobs });
    this.#leasesExpired = meter.createCounter("belay.leases.expired", { description: "Expired leases swept, by the state they were disposed to.", unit: "{lease}" });
    this.#duration = meter.createHistogram("belay.job.duration", { description: "Handler run duration.", unit: "s" });
    this.#queueWait = meter.createHistogram("belay.job.queue_wait", { description: "From a job's due time to its handler's start.", unit: "s" });
  }

  /**
   * Starts one `send` span per job and returns the jobs carrying their span's trace context (a
   * caller's own `traceContext` is kept), with the function that ends the spans.
   */
  startSend(jobs: readonly NewJob[], maxTraceContextLength: number): { jobs: NewJob[]; end(outcome: SendOutcome): void } {
    return this.#safely("send span", () => ({ jobs: [...jobs], end: () => undefined }), () => this.#startSend(jobs, maxTraceContextLength));
  }

  #startSend(jobs: readonly NewJob[], maxTraceContextLength: number): { jobs: NewJob[]; end(outcome: SendOutcome): void } {
    const parent = this.#api.context.active();
    const spans = jobs.map((job) =>
      this.#tracer.startSpan(
        `send ${job.queue}`,
        {
          kind: PRODUCER,
          attributes: {
            "messaging.system": "belay",
            "messaging.operation.type": "send",
            "messaging.operation.name": "send",
            "messaging.destination.name": job.queue,
            "messaging.message.id": job.id,
            "belay.job.name": job.jobName,
          },
        },
        parent,
      ),
    );
    const carried = jobs.map((job, i) => {
      if (job.traceContext != null) return job;
      const traceContext = formatTraceContext(carriedOf(spans[i]!.spanContext()), maxTraceContextLength);
      return traceContext === null ? job : { ...job, traceContext };
    });
    return {
      jobs: carried,
      end: (outcome) => this.#safely("send span end", () => undefined, () => this.#endSend(jobs, spans, outcome)),
    };
  }

  #endSend(jobs: readonly NewJob[], spans: readonly OtelSpan[], outcome: SendOutcome): void {
    for (const [i, span] of spans.entries()) {
      const job = jobs[i]!;
      if ("error" in outcome) {
        span.recordException(outcome.error);
        span.setStatus({ code: ERROR, message: outcome.error instanceof Error ? outcome.error.message : String(outcome.error) });
      } else {
        const status = outcome.statuses[i] ?? "notWritten";
        span.setAttribute("belay.enqueue.status", status);
        if (status === "created") this.#enqueued.add(1, { "belay.job.name": job.jobName, "messaging.destination.name": job.queue });
        else if (status === "rejected" || status === "notWritten") span.setStatus({ code: ERROR, message: `enqueue ${status}` });
      }
      span.end();
    }
  }

  /** Starts a handler run's `process` span, in the trace the job carries (its parent and link). */
  startProcess(job: ClaimedJob, group: string, startedAt: number): ProcessSpan {
    return this.#safely(
      "process span",
      () => ({ span: NOOP_SPAN, context: this.#api.ROOT_CONTEXT, attributes: {} }),
      () => this.#startProcess(job, group, startedAt),
    );
  }

  #startProcess(job: ClaimedJob, group: string, startedAt: number): ProcessSpan {
    const attributes: OtelAttributes = { "belay.job.name": job.jobName, "messaging.destination.name": job.queue };
    this.#started.add(1, attributes);
    this.#queueWait.record(Math.max(0, startedAt - Math.max(job.dueAt, job.enqueuedAt)) / 1000, attributes);
    const carried = parseTraceContext(job.traceContext);
    const remote: OtelSpanContext | null =
      carried === null
        ? null
        : {
            traceId: carried.traceId,
            spanId: carried.spanId,
            traceFlags: carried.traceFlags,
            isRemote: true,
            ...(carried.traceState !== "" && this.#api.createTraceState ? { traceState: this.#api.createTraceState(carried.traceState) } : {}),
          };
    const parent = remote === null ? this.#api.ROOT_CONTEXT : this.#api.trace.setSpanContext(this.#api.ROOT_CONTEXT, remote);
    const span = this.#tracer.startSpan(
      `process ${job.queue}`,
      {
        kind: CONSUMER,
        attributes: {
          "messaging.system": "belay",
          "messaging.operation.type": "process",
          "messaging.operation.name": "process",
          "messaging.destination.name": job.queue,
          "messaging.message.id": job.id,
          "messaging.consumer.group.name": group,
          "belay.job.name": job.jobName,
          "belay.job.attempt": job.attempt,
        },
        ...(remote === null ? {} : { links: [{ context: remote }] }),
      },
      parent,
    );
    return { span, context: this.#api.trace.setSpan(parent, span), attributes };
  }

  /** Runs `fn` with the `process` span active, so the handler's own spans are its children. */
  within<T>(process: ProcessSpan, fn: () => T): T {
    let called = false;
    try {
      return this.#api.context.with(process.context, () => {
        called = true;
        return fn();
      });
    } catch (error) {
      if (called) throw error; // the handler's own error
      return this.#safely("context", fn, () => {
        throw error;
      });
    }
  }

  /** Ends a handler run's span and records its outcome. */
  endProcess(job: ClaimedJob, process: ProcessSpan, result: ExecutionResult, durationMs: number): void {
    this.#safely("process span end", () => undefined, () => this.#endProcess(job, process, result, durationMs));
  }

  #endProcess(job: ClaimedJob, process: ProcessSpan, result: ExecutionResult, durationMs: number): void {
    const { span, attributes } = process;
    span.setAttribute("belay.job.outcome", result.type);
    this.#duration.record(durationMs / 1000, { ...attributes, "belay.job.outcome": result.type });
    switch (result.type) {
      case "succeeded":
        this.#succeeded.add(1, attributes);
        break;
      case "failed": {
        this.#failed.add(1, attributes);
        this.#awaitingReport.set(`${job.id}\u0000${job.attempt}`, attributes);
        // Outcomes the driver drops (a lost lease, a stop's deadline) are never reported: bounded.
        if (this.#awaitingReport.size > AWAITING_REPORT_MAX) this.#awaitingReport.delete(this.#awaitingReport.keys().next().value!);
        const detail = result.failureDetail ?? "the handler failed";
        const firstLine = detail.split("\n", 1)[0]!;
        const colon = firstLine.indexOf(": ");
        if (colon > 0 && result.failureDetail !== null) span.setAttribute("error.type", firstLine.slice(0, colon));
        span.setStatus({ code: ERROR, message: firstLine });
        break;
      }
      case "unroutable":
        span.setStatus({ code: ERROR, message: result.reason });
        break;
      case "cancelled":
        break;
    }
    span.end();
  }

  /** Counts the dead-letterings among reported outcomes. */
  outcomesReported(results: readonly OutcomeResult[]): void {
    if (this.#awaitingReport.size === 0) return;
    this.#safely("outcome metrics", () => undefined, () => this.#outcomesReported(results));
  }

  #outcomesReported(results: readonly OutcomeResult[]): void {
    for (const result of results) {
      const key = `${result.jobId}\u0000${result.attempt}`;
      const attributes = this.#awaitingReport.get(key);
      if (attributes === undefined) continue;
      this.#awaitingReport.delete(key);
      if (result.status === "applied" && result.state === "deadLettered") this.#deadLettered.add(1, { ...attributes, "belay.dead_letter.cause": "failed" });
    }
  }

  /** Counts swept leases, and the dead-letterings among them. */
  leasesExpired(expired: readonly ExpiredLease[]): void {
    this.#safely("lease metrics", () => undefined, () => {
      for (const lease of expired) {
      this.#leasesExpired.add(1, { "belay.job.state": lease.state });
      if (lease.state === "deadLettered") this.#deadLettered.add(1, { "belay.dead_letter.cause": "leaseExpired" });
      }
    });
  }

  /** Adds a worker to the gauges; returns the function that takes it off again. */
  observe(worker: ObservedWorker): () => void {
    if (!this.#gauges) this.#safely("gauges", () => undefined, () => this.#startGauges());
    this.#workers.add(worker);
    return () => void this.#workers.delete(worker);
  }

  /** Created once: the callbacks read whichever workers are observed at each collection. */
  #startGauges(): void {
    const slotsInUse = this.#meter.createObservableGauge("belay.worker.slots.in_use", { description: "Handlers running.", unit: "{slot}" });
    const slotsLimit = this.#meter.createObservableGauge("belay.worker.slots.limit", { description: "Handler slots (pool size).", unit: "{slot}" });
    const each = (result: OtelObservableResult, value: (p: ObservedPump) => number) => {
      for (const worker of this.#workers) {
        for (const p of worker.pumps()) result.observe(value(p), { "belay.worker.group": p.group, "belay.worker.id": p.workerId });
      }
    };
    const inUse: OtelObservableCallback = (result) => each(result, (p) => p.executing);
    const limit: OtelObservableCallback = (result) => each(result, (p) => p.poolSize);
    slotsInUse.addCallback(inUse);
    slotsLimit.addCallback(limit);
    const depth = this.#queueDepth ? this.#meter.createObservableGauge("belay.queue.depth", { description: "Live jobs per queue and state.", unit: "{job}" }) : null;
    const count: OtelObservableCallback = async (result) => {
      // Several workers on one store report its depth once.
      const stores = new Set([...this.#workers].map((w) => w.store));
      for (const store of stores) {
        for (const c of await store.countJobs()) {
          if (LIVE_STATES.has(c.state)) result.observe(c.count, { "messaging.destination.name": c.queue, "belay.job.state": c.state });
        }
      }
    };
    depth?.addCallback(count);
    this.#gauges = true;
  }
}

/** How an enqueue call ended: each job's status, or the error it threw. */
export type SendOutcome = { readonly statuses: readonly EnqueueResult["status"][] } | { readonly error: unknown };

function carriedOf(context: OtelSpanContext) {
  return { traceId: context.traceId, spanId: context.spanId, traceFlags: context.traceFlags, traceState: context.traceState?.serialize() ?? "" };
}
