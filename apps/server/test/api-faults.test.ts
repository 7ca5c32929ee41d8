import { type JobStore, StoreClosedError, TransientStoreError } from "@belay/contract";
import { MemoryStore } from "@belay/memory";
import { afterEach, describe, expect, it } from "vitest";
import { ADMIN, type Harness, harness } from "./helpers.js";

/** A store whose every operation throws `fault()` (capabilities still answer). */
function faulty(fault: () => Error): JobStore {
  const inner = new MemoryStore();
  return new Proxy(inner, {
    get(target, key) {
      const value = Reflect.get(target, key, target) as unknown;
      if (typeof value !== "function") return value;
      if (key === "migrate" || key === "close") return (value as () => unknown).bind(target);
      return () => Promise.reject(fault());
    },
  });
}

let h: Harness;
afterEach(() => h.close());

describe("store faults", () => {
  it.each([
    ["GET", "/api/v1/jobs", undefined],
    ["GET", "/api/v1/jobs/j1", undefined],
    ["POST", "/api/v1/jobs", { jobs: [{ jobName: "x" }] }],
    ["POST", "/api/v1/jobs/j1/cancel", undefined],
    ["GET", "/api/v1/queues", undefined],
    ["POST", "/api/v1/queues/q/pause", undefined],
    ["PUT", "/api/v1/schedules/s1", { cron: "0 * * * *", jobName: "x" }],
    ["GET", "/api/v1/audit", undefined],
    ["GET", "/api/v1/observers", undefined],
  ] as const)("%s %s: a TransientStoreError is a 503 with Retry-After", async (method, path, body) => {
    h = await harness({ store: faulty(() => new TransientStoreError("database is locked")) });
    const res = await h.json(method, path, { token: ADMIN, body });
    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).toBe("1");
    expect(res.body.error.code).toBe("BELAY_TRANSIENT_STORE");
  });

  it("a dashboard page over a busy store is a 503 with Retry-After", async () => {
    h = await harness({ store: faulty(() => new TransientStoreError("busy")) });
    const res = await h.request("GET", "/queues");
    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).toBe("1");
  });

  it("a closed store is a 503", async () => {
    h = await harness({ store: faulty(() => new StoreClosedError()) });
    expect((await h.json("GET", "/api/v1/jobs")).status).toBe(503);
  });

  it("anything else is a 500 that reveals nothing", async () => {
    h = await harness({ store: faulty(() => new Error("SELECT * FROM secrets exploded")) });
    const res = await h.json("GET", "/api/v1/jobs");
    expect(res.status).toBe(500);
    expect(res.body.error).toEqual({ code: "BELAY_INTERNAL", field: null, message: "internal server error" });
  });
});
