import { describe, expect, it } from "vitest";
import { parseAddress } from "./addresses.js";
import { PollHub, type Poller } from "./poll-hub.js";

describe("parseAddress", () => {
  it.each([
    ["poll://uni@workers/w1", { kind: "poll", mode: "uni", group: "workers", id: "w1" }],
    ["poll://any@workers/w1", { kind: "poll", mode: "any", group: "workers", id: "w1" }],
    ["poll://any@workers", { kind: "poll", mode: "any", group: "workers", id: null }],
    ["poll://any@g/a/b", { kind: "poll", mode: "any", group: "g", id: "a/b" }],
    ["https://hooks.example/x?y=1", { kind: "http", url: "https://hooks.example/x?y=1" }],
    ["poll://uni@workers", { kind: "unsupported", scheme: "poll" }],
    ["poll://multi@workers", { kind: "unsupported", scheme: "poll" }],
    ["gcps://project/topic", { kind: "unsupported", scheme: "gcps" }],
  ] as const)("%s", (address, parsed) => {
    expect(parseAddress(address)).toEqual(parsed);
  });
});

describe("PollHub", () => {
  const poller = (group: string, id: string): Poller => ({ group, id, send: async () => true, close() {} });

  it("routes uni to its id only, any@group/id to that id first, any@group round robin", () => {
    const hub = new PollHub(10);
    const [a, b, c] = [poller("g", "a"), poller("g", "b"), poller("h", "c")];
    for (const p of [a, b, c]) expect(hub.add(p)).toBe(true);
    expect(hub.pick({ kind: "poll", mode: "uni", group: "g", id: "b" })).toBe(b);
    expect(hub.pick({ kind: "poll", mode: "uni", group: "g", id: "z" })).toBeNull();
    expect(hub.pick({ kind: "poll", mode: "any", group: "g", id: "b" })).toBe(b);
    expect([a, b]).toContain(hub.pick({ kind: "poll", mode: "any", group: "g", id: "z" }));
    const seen = new Set([hub.pick({ kind: "poll", mode: "any", group: "g", id: null }), hub.pick({ kind: "poll", mode: "any", group: "g", id: null })]);
    expect(seen).toEqual(new Set([a, b]));
    expect(hub.pick({ kind: "poll", mode: "any", group: "nobody", id: null })).toBeNull();
  });

  it("prefers the newest connection of an id, forgets removed pollers and refuses past capacity", () => {
    const hub = new PollHub(2);
    const old = poller("g", "a");
    const fresh = poller("g", "a");
    hub.add(old);
    hub.add(fresh);
    expect(hub.add(poller("g", "b"))).toBe(false);
    expect(hub.pick({ kind: "poll", mode: "uni", group: "g", id: "a" })).toBe(fresh);
    hub.remove(fresh);
    expect(hub.pick({ kind: "poll", mode: "uni", group: "g", id: "a" })).toBe(old);
    hub.remove(old);
    expect(hub.size).toBe(0);
    expect(hub.pick({ kind: "poll", mode: "any", group: "g", id: null })).toBeNull();
  });

  it("names what its pollers can take as an outbox filter: uni exactly, any@group and any@group/…, and push targets", () => {
    const hub = new PollHub(10);
    expect(hub.outboxFilter()).toEqual({ addresses: [], prefixes: ["http://", "https://", "HTTP://", "HTTPS://"] });
    const a = poller("g", "a");
    hub.add(a);
    hub.add(poller("g", "b"));
    hub.add(poller("h", "c"));
    const filter = hub.outboxFilter();
    expect([...filter.addresses].sort()).toEqual(["poll://any@g", "poll://any@h", "poll://uni@g/a", "poll://uni@g/b", "poll://uni@h/c"]);
    expect(filter.prefixes).toEqual(expect.arrayContaining(["poll://any@g/", "poll://any@h/", "https://"]));
    hub.remove(a);
    expect(hub.outboxFilter().addresses).not.toContain("poll://uni@g/a");
  });
});
