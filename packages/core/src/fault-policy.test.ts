import { TransientStoreError } from "@belay/contract";
import { describe, expect, it } from "vitest";
import { FaultState, classifyStoreFault, nextBackoff } from "./fault-policy.js";

describe("fault policy", () => {
  it("fault policy: a store error is transient by its code, not by its class", () => {
    expect(classifyStoreFault(new TransientStoreError("database is busy"))).toMatchObject({ transient: true });
    // A duplicate install of @belay/contract: another class, the same code.
    expect(classifyStoreFault({ code: "BELAY_TRANSIENT_STORE", message: "busy" }).transient).toBe(true);
    expect(classifyStoreFault(new Error("relation belay_jobs does not exist"))).toEqual({
      transient: false,
      message: "Error: relation belay_jobs does not exist",
    });
    expect(classifyStoreFault("thrown text")).toEqual({ transient: false, message: "thrown text" });
  });

  it("fault policy: backoff starts at min and doubles up to max", () => {
    const range = { min: 100, max: 450 };
    const first = nextBackoff(null, 1_000, range);
    expect(first).toEqual({ at: 1_100, ms: 100 });
    const second = nextBackoff(first, 1_100, range);
    expect(second).toEqual({ at: 1_300, ms: 200 });
    const third = nextBackoff(second, 1_300, range);
    expect(nextBackoff(third, 2_000, range)).toEqual({ at: 2_450, ms: 450 });
  });

  it("fault policy: transient faults degrade until a success; any other fault stops for good", () => {
    const state = new FaultState();
    expect(state.status).toBe("running");
    expect(state.record({ transient: true, message: "busy" })).toEqual({ type: "backOff" });
    expect(state).toMatchObject({ status: "degraded", degraded: true, lastFault: "busy", stopped: null });
    state.recovered();
    expect(state).toMatchObject({ status: "running", degraded: false, lastFault: "busy" });
    expect(state.record({ transient: false, message: "no such table" })).toEqual({ type: "stop" });
    state.recovered();
    expect(state).toMatchObject({ status: "stopped", stopped: "no such table", lastFault: "no such table" });
  });
});
