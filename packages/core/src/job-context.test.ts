import { describe, expect, it } from "vitest";
import { HandlerAbort, JobAbortedError } from "./job-context.js";

describe("HandlerAbort", () => {
  it("a signal read after the abort is already aborted, with the abort's reason", () => {
    const abort = new HandlerAbort();
    expect(abort.reason).toBeNull();
    const reason = new JobAbortedError("cancelRequested");
    abort.abort(reason);
    expect(abort.reason).toBe(reason);
    expect(abort.signal.aborted).toBe(true);
    expect(abort.signal.reason).toBe(reason);
  });

  it("a signal read before the abort is aborted by it and fires its listeners once", () => {
    const abort = new HandlerAbort();
    const signal = abort.signal;
    expect(signal.aborted).toBe(false);
    expect(abort.signal).toBe(signal);
    const seen: unknown[] = [];
    signal.addEventListener("abort", () => seen.push(signal.reason));
    const first = new JobAbortedError("leaseLost");
    abort.abort(first);
    abort.abort(new JobAbortedError("stopping"));
    expect(seen).toEqual([first]);
    expect(abort.reason).toBe(first);
  });

  it("the first abort's reason wins whether or not the signal was ever read", () => {
    const abort = new HandlerAbort();
    const first = new JobAbortedError("stopping");
    abort.abort(first);
    abort.abort(new JobAbortedError("cancelRequested"));
    expect(abort.reason).toBe(first);
    expect(abort.signal.reason).toBe(first);
  });
});
