import { DEFAULT_PROMISE_BOUNDS } from "@belay/contract";
import { describe, expect, it } from "vitest";
import { envelopeField, toStoreRequest } from "./envelope-requests.js";
import { isLocalCaller, isLoopbackAddress } from "./promise-access.js";

describe("envelopeField", () => {
  it.each([
    ["id", "data.id"],
    ["tags.resonate:target", "data.tags.resonate:target"],
    ["tasks[3].version", "data.tasks[3].version"],
    ["action", "data.action"],
    ["action.kind", "data.action.kind"],
    ["action.tags.x", "data.action.data.tags.x"],
    ["actions[2].awaited", "data.actions[2].data.awaited"],
    ["request", "data"],
    ["kind", "kind"],
  ])("%s → %s", (store, envelope) => {
    expect(envelopeField(store)).toBe(envelope);
  });
});

describe("toStoreRequest", () => {
  const head = { corrId: "inner", version: "2026-04-01" };
  it("flattens nested envelopes and carries only the kind's fields", () => {
    expect(
      toStoreRequest("task.fence", { id: "r", version: 1, extra: true, action: { kind: "promise.settle", head, data: { id: "r:1", state: "resolved", junk: 1 } } }, DEFAULT_PROMISE_BOUNDS),
    ).toEqual({ request: { kind: "task.fence", id: "r", version: 1, action: { kind: "promise.settle", id: "r:1", state: "resolved" } }, actionCorrId: "inner" });
    expect(
      toStoreRequest("task.suspend", { id: "r", version: 1, actions: [{ kind: "promise.register_callback", head, data: { awaiter: "r", awaited: "r:1" } }] }, DEFAULT_PROMISE_BOUNDS).request,
    ).toEqual({ kind: "task.suspend", id: "r", version: 1, actions: [{ kind: "promise.register_callback", awaiter: "r", awaited: "r:1" }] });
  });
});

describe("local callers", () => {
  it("knows loopback peers", () => {
    for (const address of ["127.0.0.1", "127.255.0.9", "::1", "::ffff:127.0.0.1"]) expect(isLoopbackAddress(address), address).toBe(true);
    for (const address of ["10.0.0.1", "::ffff:10.0.0.1", "192.168.1.1", "fe80::1", "", null]) expect(isLoopbackAddress(address), String(address)).toBe(false);
  });
  it("needs a loopback peer, a loopback host name and no Origin", () => {
    const request = (url: string, headers: Record<string, string> = {}) => new Request(url, { headers });
    expect(isLocalCaller(request("http://localhost:8001/"), "127.0.0.1")).toBe(true);
    expect(isLocalCaller(request("http://[::1]:8001/"), "::1")).toBe(true);
    expect(isLocalCaller(request("http://127.0.0.1:8001/"), "10.0.0.2")).toBe(false);
    expect(isLocalCaller(request("http://rebound.example:8001/"), "127.0.0.1")).toBe(false);
    expect(isLocalCaller(request("http://127.0.0.1:8001/", { origin: "http://127.0.0.1:3000" }), "127.0.0.1")).toBe(false);
  });
});
