import { AggregationTemporality, MeterProvider, MetricReader, type DataPoint, type Histogram } from "@opentelemetry/sdk-metrics";
import { BasicTracerProvider, InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";

/** A tracer provider whose finished spans land in memory. */
export function tracing(): { provider: BasicTracerProvider; exporter: InMemorySpanExporter } {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  return { provider, exporter };
}

/** A metric reader that collects only when asked (no export interval, nothing time-driven). */
class OnDemandReader extends MetricReader {
  constructor() {
    super({ aggregationTemporalitySelector: () => AggregationTemporality.CUMULATIVE });
  }
  protected override async onForceFlush(): Promise<void> {}
  protected override async onShutdown(): Promise<void> {}
}

export type Point = DataPoint<number | Histogram>;

/** A meter provider and a `collect()` giving every metric's points by name. */
export function metering(): { provider: MeterProvider; collect(): Promise<Map<string, Point[]>> } {
  const reader = new OnDemandReader();
  const provider = new MeterProvider({ readers: [reader] });
  return {
    provider,
    async collect() {
      const { resourceMetrics, errors } = await reader.collect();
      if (errors.length > 0) throw errors[0];
      const byName = new Map<string, Point[]>();
      for (const scope of resourceMetrics.scopeMetrics) {
        for (const metric of scope.metrics) byName.set(metric.descriptor.name, [...(byName.get(metric.descriptor.name) ?? []), ...(metric.dataPoints as Point[])]);
      }
      return byName;
    },
  };
}

/** The value of a counter or gauge point with these attributes (0 when there is none). */
export function valueOf(points: Map<string, Point[]>, name: string, attributes: Record<string, unknown>): number {
  const point = find(points, name, attributes);
  return point === undefined ? 0 : (point.value as number);
}

/** The number of values a histogram recorded with these attributes. */
export function countOf(points: Map<string, Point[]>, name: string, attributes: Record<string, unknown>): number {
  const point = find(points, name, attributes);
  return point === undefined ? 0 : (point.value as Histogram).count;
}

function find(points: Map<string, Point[]>, name: string, attributes: Record<string, unknown>): Point | undefined {
  const matching = (points.get(name) ?? []).filter((p) => Object.entries(attributes).every(([k, v]) => p.attributes[k] === v));
  if (matching.length > 1) throw new Error(`${matching.length} points of ${name} match ${JSON.stringify(attributes)}`);
  return matching[0];
}

/** A finished span as plain JSON (what a child process prints). */
export interface SpanRecord {
  readonly name: string;
  readonly kind: number;
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId: string | null;
  readonly links: readonly { readonly traceId: string; readonly spanId: string }[];
  readonly attributes: Record<string, unknown>;
  readonly status: { readonly code: number; readonly message?: string };
}

export function spanRecord(span: ReadableSpan): SpanRecord {
  const context = span.spanContext();
  return {
    name: span.name,
    kind: span.kind,
    traceId: context.traceId,
    spanId: context.spanId,
    parentSpanId: span.parentSpanContext?.spanId ?? null,
    links: span.links.map((l) => ({ traceId: l.context.traceId, spanId: l.context.spanId })),
    attributes: { ...span.attributes },
    status: { ...span.status },
  };
}

/** Polls `check` until it returns something other than `undefined`, or fails after `timeoutMs`. */
export async function eventually<T>(check: () => Promise<T | undefined> | T | undefined, what: string, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
