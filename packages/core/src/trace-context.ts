/**
 * The W3C trace context a job carries in its `traceContext` field: the `traceparent` header
 * value, then — when there is one and it fits the store's bound — a space and the `tracestate`
 * value. A `traceparent` never contains a space, so the first one separates the two.
 */

/** The parts of a span context that travel with a job. */
export interface CarriedSpanContext {
  readonly traceId: string;
  readonly spanId: string;
  readonly traceFlags: number;
  /** The serialised `tracestate`, `""` when there is none. */
  readonly traceState: string;
}

// Lowercase hex only (W3C). Version 00 has exactly these four fields; a later version may append
// more after another "-", which a reader of version 00 ignores.
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;
const ZERO_TRACE = "0".repeat(32);
const ZERO_SPAN = "0".repeat(16);

/**
 * Formats a span context for a job's `traceContext`. The `tracestate` is dropped when keeping it
 * would exceed `maxLength` (the store's `traceContextLength` bound): the trace still links.
 * `null` when there is nothing to carry: an invalid context (a no-op tracer's all-zero ids) or a
 * bound too small for the `traceparent` itself.
 */
export function formatTraceContext(context: CarriedSpanContext, maxLength: number): string | null {
  if (!/^[0-9a-f]{32}$/.test(context.traceId) || !/^[0-9a-f]{16}$/.test(context.spanId)) return null;
  if (context.traceId === ZERO_TRACE || context.spanId === ZERO_SPAN) return null;
  const flags = (context.traceFlags & 0xff).toString(16).padStart(2, "0");
  const traceparent = `00-${context.traceId}-${context.spanId}-${flags}`;
  if (traceparent.length > maxLength) return null;
  if (context.traceState === "") return traceparent;
  const both = `${traceparent} ${context.traceState}`;
  return both.length <= maxLength ? both : traceparent;
}

/**
 * Reads a job's `traceContext` back; `null` when it is absent or not a valid version-00
 * `traceparent` (any opaque text a caller chose to carry is left alone, not an error).
 */
export function parseTraceContext(text: string | null): CarriedSpanContext | null {
  if (text === null) return null;
  const space = text.indexOf(" ");
  const traceparent = (space === -1 ? text : text.slice(0, space)).trim();
  const match = TRACEPARENT.exec(traceparent);
  if (match === null) return null;
  const [, version, traceId, spanId, flags, rest] = match as unknown as [string, string, string, string, string, string | undefined];
  if (version === "ff" || (version === "00" && rest !== undefined) || traceId === ZERO_TRACE || spanId === ZERO_SPAN) return null;
  return { traceId, spanId, traceFlags: Number.parseInt(flags, 16), traceState: space === -1 ? "" : text.slice(space + 1).trim() };
}
