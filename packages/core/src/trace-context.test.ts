import { describe, expect, it } from "vitest";
import { formatTraceContext, parseTraceContext } from "./trace-context.js";

const context = { traceId: "4bf92f3577b34da6a3ce929d0e0e4736", spanId: "00f067aa0ba902b7", traceFlags: 1, traceState: "" };

describe("trace context", () => {
  it("formats a traceparent and reads it back", () => {
    const text = formatTraceContext(context, 512);
    expect(text).toBe("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
    expect(parseTraceContext(text)).toEqual(context);
  });

  it("keeps the tracestate after a space while it fits the bound, and drops it past the bound", () => {
    const withState = { ...context, traceState: "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7" };
    const text = formatTraceContext(withState, 512);
    expect(text).toBe("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01 congo=t61rcWkgMzE,rojo=00f067aa0ba902b7");
    expect(parseTraceContext(text)).toEqual(withState);
    expect(formatTraceContext(withState, 60)).toBe("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
  });

  it("carries nothing for an invalid context (a no-op tracer's zero ids) or a bound below the traceparent", () => {
    expect(formatTraceContext({ ...context, traceId: "0".repeat(32) }, 512)).toBeNull();
    expect(formatTraceContext({ ...context, spanId: "0".repeat(16) }, 512)).toBeNull();
    expect(formatTraceContext({ ...context, traceId: "XYZ" }, 512)).toBeNull();
    expect(formatTraceContext(context, 54)).toBeNull();
    expect(formatTraceContext(context, 55)).toBe("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
  });

  it("reads a later version's traceparent by its first four fields, version 00 only with exactly four", () => {
    expect(parseTraceContext("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-future")).toEqual(context);
    expect(parseTraceContext("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra")).toBeNull();
  });

  it("reads anything else as no trace context", () => {
    for (const text of [null, "", "00-aa-bb-01", "opaque", "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
      "00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01",
      `00-${"0".repeat(32)}-00f067aa0ba902b7-01`, `00-4bf92f3577b34da6a3ce929d0e0e4736-${"0".repeat(16)}-01`]) {
      expect(parseTraceContext(text)).toBeNull();
    }
  });
});
