/**
 * The few parts of `@opentelemetry/api` that Belay uses, as local structural types: core never
 * imports the package (it is an optional peer), and the namespace object of any 1.x version
 * (`import * as otel from "@opentelemetry/api"`) satisfies {@link OtelApi}.
 */

export type OtelAttributes = Record<string, string | number | boolean | undefined>;

/** An OpenTelemetry `Context` (opaque here). */
export type OtelContext = object;

/** An OpenTelemetry `TraceState` (the `tracestate` header's list). */
export interface OtelTraceState {
  set(key: string, value: string): OtelTraceState;
  unset(key: string): OtelTraceState;
  get(key: string): string | undefined;
  serialize(): string;
}

export interface OtelSpanContext {
  readonly traceId: string;
  readonly spanId: string;
  readonly traceFlags: number;
  readonly isRemote?: boolean;
  readonly traceState?: OtelTraceState;
}

export interface OtelSpan {
  spanContext(): OtelSpanContext;
  setAttribute(key: string, value: string | number | boolean): unknown;
  setStatus(status: { code: number; message?: string }): unknown;
  recordException(exception: unknown): void;
  end(): void;
}

export interface OtelSpanOptions {
  kind?: number;
  attributes?: OtelAttributes;
  links?: { context: OtelSpanContext; attributes?: OtelAttributes }[];
}

export interface OtelTracer {
  startSpan(name: string, options?: OtelSpanOptions, context?: OtelContext): OtelSpan;
}

export interface OtelObservableResult {
  observe(value: number, attributes?: OtelAttributes): void;
}

export type OtelObservableCallback = (result: OtelObservableResult) => void | Promise<void>;

export interface OtelObservable {
  addCallback(callback: OtelObservableCallback): void;
  removeCallback(callback: OtelObservableCallback): void;
}

export interface OtelInstrumentOptions {
  description?: string;
  unit?: string;
}

export interface OtelMeter {
  createCounter(name: string, options?: OtelInstrumentOptions): { add(value: number, attributes?: OtelAttributes): void };
  createHistogram(name: string, options?: OtelInstrumentOptions): { record(value: number, attributes?: OtelAttributes): void };
  createObservableGauge(name: string, options?: OtelInstrumentOptions): OtelObservable;
}

export interface OtelTracerProvider {
  getTracer(name: string, version?: string): OtelTracer;
}

export interface OtelMeterProvider {
  getMeter(name: string, version?: string): OtelMeter;
}

/** What Belay needs of `@opentelemetry/api`: pass the package's namespace object. */
export interface OtelApi {
  readonly trace: OtelTracerProvider & {
    setSpan(context: OtelContext, span: OtelSpan): OtelContext;
    setSpanContext(context: OtelContext, spanContext: OtelSpanContext): OtelContext;
  };
  readonly metrics: OtelMeterProvider;
  readonly context: {
    active(): OtelContext;
    with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(
      context: OtelContext,
      fn: F,
      thisArg?: ThisParameterType<F>,
      ...args: A
    ): ReturnType<F>;
  };
  readonly ROOT_CONTEXT: OtelContext;
  /** Present since API 1.1; without it a carried `tracestate` is not restored. */
  readonly createTraceState?: (raw?: string) => OtelTraceState;
}
