import { isResponse } from "@resonatehq/sdk";
import { TransientStoreError } from "@belay/contract";
import { MemoryPromiseStore } from "@belay/memory";
import { describe, expect, it } from "vitest";
import { type PromiseHarness, VERSION, nested, nullPaths, promiseHarnesses } from "./promise-helpers.js";

// The envelope of the durable-promise listener: every kind's mapping to the promise store and
// back, every status, the 400s naming the field (writing nothing), the 503 and 500 mappings, the
// debug gate. Answers of the kinds the SDK sends are checked with the SDK's own shape guards.

const open = promiseHarnesses();

const TARGET = "poll://any@workers";
const future = (h: PromiseHarness, ms = 60_000) => h.clock.time + ms;

/** Checks the envelope of an answer: kind and corrId echoed, status in head and on the wire, no nulls. */
function expectEnvelope(answer: { status: number; body: any }, kind: string, status: number): any {
  expect(answer.status).toBe(status);
  expect(answer.body).toMatchObject({ kind, head: { status, version: VERSION } });
  expect(typeof answer.body.head.corrId).toBe("string");
  expect(nullPaths(answer.body)).toEqual([]);
  if (status >= 400) expect(typeof answer.body.data).toBe("string");
  return answer.body.data;
}

describe("envelope: every kind", () => {
  it("promise kinds map to the store and back (SDK shape checks pass)", async () => {
    const h = await open();
    const created = await h.send("promise.create", { id: "p1", timeoutAt: future(h), param: { headers: { a: "b" }, data: "eA==" }, tags: { t: "1" } }, { corrId: "my-corr" });
    expect(created.body.head.corrId).toBe("my-corr");
    const promise = expectEnvelope(created, "promise.create", 200).promise;
    expect(promise).toEqual({ id: "p1", state: "pending", param: { headers: { a: "b" }, data: "eA==" }, value: {}, tags: { t: "1" }, timeoutAt: future(h), createdAt: h.clock.time });
    expect(isResponse(created.body)).toBe(true);

    expect(expectEnvelope(await h.send("promise.get", { id: "p1" }), "promise.get", 200).promise.id).toBe("p1");
    const missing = await h.send("promise.get", { id: "nope" });
    expect(expectEnvelope(missing, "promise.get", 404)).toMatch(/not found/);
    expect(isResponse(missing.body)).toBe(true);

    const listener = await h.send("promise.register_listener", { awaited: "p1", address: "poll://uni@client/c1" });
    expect(expectEnvelope(listener, "promise.register_listener", 200).promise.state).toBe("pending");
    expect(isResponse(listener.body)).toBe(true);

    const callback = await h.send("promise.register_callback", { awaited: "p1", awaiter: "p1-untargeted" });
    expect(expectEnvelope(callback, "promise.register_callback", 422)).toMatch(/awaiter/);

    h.clock.time += 10;
    const settled = await h.send("promise.settle", { id: "p1", state: "resolved", value: { data: "eQ==" } });
    expect(expectEnvelope(settled, "promise.settle", 200).promise).toMatchObject({ state: "resolved", value: { data: "eQ==" }, settledAt: h.clock.time });
    expect(isResponse(settled.body)).toBe(true);

    const search = await h.send("promise.search", { state: "resolved", limit: 10 });
    const page = expectEnvelope(search, "promise.search", 200);
    expect(page.promises.map((p: { id: string }) => p.id)).toEqual(["p1"]);
    expect(page).not.toHaveProperty("cursor");
  });

  it("task kinds: create, fence (its inner answer an envelope echoing the inner corrId), suspend 200 and 300, heartbeat, release, acquire, fulfill, get, halt, continue, search", async () => {
    const h = await open();
    const tags = { "resonate:target": TARGET, "resonate:origin": "root", "resonate:branch": "root" };
    const create = await h.send("task.create", { pid: "w1", ttl: 10_000, action: nested("promise.create", { id: "root", timeoutAt: future(h), tags }) });
    const created = expectEnvelope(create, "task.create", 200);
    expect(created.task).toEqual({ id: "root", state: "acquired", version: 1, resumes: 0, ttl: 10_000, pid: "w1" });
    expect(created.preload).toEqual([]);
    expect(isResponse(create.body)).toBe(true);

    const fence = await h.send("task.fence", {
      id: "root",
      version: 1,
      action: nested("promise.create", { id: "root:1", timeoutAt: future(h), tags: { "resonate:scope": "local", "resonate:branch": "root" } }, "inner-corr"),
    });
    const fenced = expectEnvelope(fence, "task.fence", 200);
    expect(fenced.action).toEqual({
      kind: "promise.create",
      head: { corrId: "inner-corr", status: 200, version: VERSION },
      data: { promise: expect.objectContaining({ id: "root:1", state: "pending" }) },
    });
    expect(fenced.preload).toEqual([]);
    expect(isResponse(fence.body)).toBe(true);
    const stale = await h.send("task.fence", { id: "root", version: 7, action: nested("promise.settle", { id: "root:1", state: "resolved" }) });
    expect(expectEnvelope(stale, "task.fence", 409)).toMatch(/version/);
    expect(isResponse(stale.body)).toBe(true);

    // A mixed-origin heartbeat (the SDK sends all of a worker's tasks at once) is accepted.
    const heartbeat = await h.send("task.heartbeat", { pid: "w1", tasks: [{ id: "root", version: 1 }, { id: "other:1.2", version: 3 }] });
    expect(expectEnvelope(heartbeat, "task.heartbeat", 200)).toEqual({});
    expect(isResponse(heartbeat.body)).toBe(true);

    await h.send("promise.create", { id: "root:2", timeoutAt: future(h), tags: { "resonate:scope": "global", "resonate:branch": "root:2" } });
    const suspend = await h.send("task.suspend", { id: "root", version: 1, actions: [nested("promise.register_callback", { awaiter: "root", awaited: "root:2" })] });
    expect(expectEnvelope(suspend, "task.suspend", 200)).toEqual({});
    expect(isResponse(suspend.body)).toBe(true);
    expect(expectEnvelope(await h.send("task.get", { id: "root" }), "task.get", 200).task).toEqual({ id: "root", state: "suspended", version: 1, resumes: 0 });

    // Settling the awaited wakes the task (pending, same version); acquire takes it at version 2.
    await h.send("promise.settle", { id: "root:2", state: "resolved" });
    const acquire = await h.send("task.acquire", { id: "root", version: 1, pid: "w2", ttl: 5_000 });
    const acquired = expectEnvelope(acquire, "task.acquire", 200);
    expect(acquired.task).toMatchObject({ state: "acquired", version: 2, pid: "w2" });
    expect(acquired.preload.map((p: { id: string }) => p.id)).toEqual(["root:1"]);
    expect(isResponse(acquire.body)).toBe(true);
    expect(expectEnvelope(await h.send("task.acquire", { id: "root", version: 1, pid: "w3", ttl: 5_000 }), "task.acquire", 409)).toMatch(/not pending/);

    // Suspending on a settled promise answers 300 with the preload; the task stays acquired.
    const redirect = await h.send("task.suspend", { id: "root", version: 2, actions: [nested("promise.register_callback", { awaiter: "root", awaited: "root:2" })] });
    expect(expectEnvelope(redirect, "task.suspend", 300).preload.map((p: { id: string }) => p.id)).toEqual(["root:1"]);
    expect(isResponse(redirect.body)).toBe(true);

    const release = await h.send("task.release", { id: "root", version: 2 });
    expect(expectEnvelope(release, "task.release", 200)).toEqual({});
    expect(isResponse(release.body)).toBe(true);
    expect(expectEnvelope(await h.send("task.halt", { id: "root" }), "task.halt", 200)).toEqual({});
    expect(expectEnvelope(await h.send("task.continue", { id: "root" }), "task.continue", 200)).toEqual({});
    expect(expectEnvelope(await h.send("task.continue", { id: "root" }), "task.continue", 409)).toMatch(/not halted/);
    await h.send("task.acquire", { id: "root", version: 2, pid: "w2", ttl: 5_000 });
    const fulfill = await h.send("task.fulfill", { id: "root", version: 3, action: nested("promise.settle", { id: "root", state: "resolved", value: { data: "ZG9uZQ==" } }) });
    expect(expectEnvelope(fulfill, "task.fulfill", 200).promise).toMatchObject({ id: "root", state: "resolved", value: { data: "ZG9uZQ==" } });
    expect(isResponse(fulfill.body)).toBe(true);
    expect(expectEnvelope(await h.send("task.halt", { id: "root" }), "task.halt", 409)).toMatch(/fulfilled/);

    const tasks = expectEnvelope(await h.send("task.search", { state: "fulfilled" }), "task.search", 200);
    expect(tasks.tasks.map((t: { id: string }) => t.id)).toEqual(["root"]);
    expect(expectEnvelope(await h.send("task.get", { id: "nope" }), "task.get", 404)).toMatch(/not found/);
  });

  it("schedule kinds: create computes the first run from the cron (5, 6 or 7 fields, UTC), get, search, delete", async () => {
    const h = await open();
    h.clock.time = Date.UTC(2030, 0, 1, 10, 7, 30);
    const nightly = {
      id: "nightly",
      cron: "0 3 * * *",
      promiseId: "{{.id}}-{{.timestamp}}",
      promiseTimeout: 60_000,
      promiseParam: { data: "e30=" },
      promiseTags: { "resonate:target": TARGET },
    };
    const create = await h.send("schedule.create", nightly);
    // The schedule comes back as it was given, with its creation time and first run.
    expect(expectEnvelope(create, "schedule.create", 200).schedule).toEqual({
      ...nightly,
      createdAt: h.clock.time,
      nextRunAt: Date.UTC(2030, 0, 2, 3, 0, 0),
    });
    expect(isResponse(create.body)).toBe(true);
    for (const [cron, next] of [
      ["*/15 * * * * *", Date.UTC(2030, 0, 1, 10, 7, 45)],
      ["0 0 12 1 6 * 2031", Date.UTC(2031, 5, 1, 12, 0, 0)],
    ] as const) {
      const answer = await h.send("schedule.create", { id: `s-${next}`, cron, promiseId: "x-{{.timestamp}}", promiseTimeout: 1_000, promiseTags: { "resonate:target": TARGET } });
      expect(expectEnvelope(answer, "schedule.create", 200).schedule.nextRunAt).toBe(next);
    }
    const get = await h.send("schedule.get", { id: "nightly" });
    expect(expectEnvelope(get, "schedule.get", 200).schedule.id).toBe("nightly");
    expect(isResponse(get.body)).toBe(true);
    expect(expectEnvelope(await h.send("schedule.search", { limit: 2 }), "schedule.search", 200).cursor).toBeDefined();
    const del = await h.send("schedule.delete", { id: "nightly" });
    expect(expectEnvelope(del, "schedule.delete", 200)).toEqual({});
    expect(isResponse(del.body)).toBe(true);
    expect(expectEnvelope(await h.send("schedule.delete", { id: "nightly" }), "schedule.delete", 404)).toMatch(/not found/);
  });

  it("the timeout scan fires a due schedule (its next run computed by the server) and every pending deadline, untargeted ones too", async () => {
    const h = await open();
    h.clock.time = Date.UTC(2030, 0, 1, 0, 0, 0);
    await h.send("schedule.create", { id: "minutely", cron: "* * * * *", promiseId: "{{.id}}-{{.timestamp}}", promiseTimeout: 5_000, promiseTags: { "resonate:target": TARGET } });
    await h.send("promise.create", { id: "latent", timeoutAt: h.clock.time + 30_000, tags: { "resonate:scope": "global" } });
    h.clock.time += 61_000;
    const result = await h.server.scan.scan(h.clock.time);
    expect(result).toMatchObject({ promisesTimedOut: 1, schedulesFired: 1 });
    const fired = await h.send("promise.get", { id: `minutely-${Date.UTC(2030, 0, 1, 0, 1, 0)}` });
    expect(expectEnvelope(fired, "promise.get", 200).promise.tags).toMatchObject({ "resonate:schedule": "minutely", "resonate:target": TARGET });
    expect(expectEnvelope(await h.send("schedule.get", { id: "minutely" }), "schedule.get", 200).schedule).toMatchObject({
      lastRunAt: Date.UTC(2030, 0, 1, 0, 1, 0),
      nextRunAt: Date.UTC(2030, 0, 1, 0, 2, 0),
    });
    const snapshot = await h.store.snapshot(h.clock.time);
    expect(snapshot.promises.find((p) => p.id === "latent")).toMatchObject({ state: "rejected_timedout", settledAt: h.clock.time - 31_000 });
  });
});

describe("envelope: refusals", () => {
  const id = "p-bad";
  const cases: readonly [string, string, unknown][] = [
    ["an array body", "body", []],
    ["no kind", "kind", { head: { corrId: "c", version: VERSION }, data: {} }],
    ["a kind that is a number", "kind", { kind: 7, head: { corrId: "c", version: VERSION }, data: {} }],
    ["an unknown kind", "kind", { kind: "promise.explode", head: { corrId: "c", version: VERSION }, data: {} }],
    ["no head", "head", { kind: "promise.get", data: { id } }],
    ["a corrId that is a number", "head.corrId", { kind: "promise.get", head: { corrId: 1, version: VERSION }, data: { id } }],
    ["a corrId with NUL", "head.corrId", { kind: "promise.get", head: { corrId: "a\u0000b", version: VERSION }, data: { id } }],
    ["another version", "head.version", { kind: "promise.get", head: { corrId: "c", version: "2025-01-01" }, data: { id } }],
    ["no version", "head.version", { kind: "promise.get", head: { corrId: "c" }, data: { id } }],
    ["an auth that is not text", "head.auth", { kind: "promise.get", head: { corrId: "c", version: VERSION, auth: 5 }, data: { id } }],
    ["no data", "data", { kind: "promise.get", head: { corrId: "c", version: VERSION } }],
    ["data that is an array", "data", { kind: "promise.get", head: { corrId: "c", version: VERSION }, data: [] }],
    ["an id with NUL", "data.id", { kind: "promise.create", head: { corrId: "c", version: VERSION }, data: { id: "a\u0000b", timeoutAt: 1 } }],
    ["an id with a lone surrogate", "data.id", { kind: "promise.create", head: { corrId: "c", version: VERSION }, data: { id: "a\ud800b", timeoutAt: 1 } }],
    ["a timeoutAt that is text", "data.timeoutAt", { kind: "promise.create", head: { corrId: "c", version: VERSION }, data: { id, timeoutAt: "soon" } }],
    ["a tag that is a number", "data.tags.a", { kind: "promise.create", head: { corrId: "c", version: VERSION }, data: { id, timeoutAt: 1, tags: { a: 1 } } }],
    ["a settle state outside the protocol", "data.state", { kind: "promise.settle", head: { corrId: "c", version: VERSION }, data: { id, state: "rejected_timedout" } }],
    ["a nested action without head", "data.action.head", { kind: "task.create", head: { corrId: "c", version: VERSION }, data: { pid: "w", ttl: 1_000, action: { kind: "promise.create", data: { id, timeoutAt: 1 } } } }],
    ["a nested action of another kind", "data.action.kind", { kind: "task.create", head: { corrId: "c", version: VERSION }, data: { pid: "w", ttl: 1_000, action: nested("promise.settle", { id, state: "resolved" }) } }],
    ["a nested id with NUL", "data.action.data.id", { kind: "task.create", head: { corrId: "c", version: VERSION }, data: { pid: "w", ttl: 1_000, action: nested("promise.create", { id: "x\u0000", timeoutAt: 1, tags: { "resonate:target": TARGET } }) } }],
    ["a task.create without a target", "data.action.data.tags.resonate:target", { kind: "task.create", head: { corrId: "c", version: VERSION }, data: { pid: "w", ttl: 1_000, action: nested("promise.create", { id, timeoutAt: 1 }) } }],
    ["a suspend callback without awaited", "data.actions[0].data.awaited", { kind: "task.suspend", head: { corrId: "c", version: VERSION }, data: { id, version: 1, actions: [nested("promise.register_callback", { awaiter: id })] } }],
    ["a suspend callback that is not an envelope", "data.actions[0]", { kind: "task.suspend", head: { corrId: "c", version: VERSION }, data: { id, version: 1, actions: ["x"] } }],
    ["a heartbeat version that is text", "data.tasks[0].version", { kind: "task.heartbeat", head: { corrId: "c", version: VERSION }, data: { pid: "w", tasks: [{ id, version: "1" }] } }],
    ["a ttl of zero", "data.ttl", { kind: "task.acquire", head: { corrId: "c", version: VERSION }, data: { id, version: 0, pid: "w", ttl: 0 } }],
    ["a cron of four fields", "data.cron", { kind: "schedule.create", head: { corrId: "c", version: VERSION }, data: { id, cron: "* * * *", promiseId: "x", promiseTimeout: 1, promiseTags: { "resonate:target": TARGET } } }],
    ["a cron that does not parse", "data.cron", { kind: "schedule.create", head: { corrId: "c", version: VERSION }, data: { id, cron: "61 * * * *", promiseId: "x", promiseTimeout: 1, promiseTags: { "resonate:target": TARGET } } }],
    ["a cron with no future occurrence", "data.cron", { kind: "schedule.create", head: { corrId: "c", version: VERSION }, data: { id, cron: "0 0 0 1 1 * 1970", promiseId: "x", promiseTimeout: 1, promiseTags: { "resonate:target": TARGET } } }],
    ["a debug.tick without time", "data.time", { kind: "debug.tick", head: { corrId: "c", version: VERSION }, data: {} }],
  ];

  it.each(cases)("%s answers 400 naming %s and writes nothing", async (_what, field, body) => {
    const h = await open({ debug: true });
    await h.send("promise.create", { id: "existing", timeoutAt: future(h), tags: { "resonate:target": TARGET } });
    const before = await h.store.snapshot(h.clock.time);
    const answer = await h.post(body);
    expect(answer.status).toBe(400);
    expect(answer.body.head.status).toBe(400);
    expect(answer.body.data).toContain(`invalid ${field}:`);
    expect(await h.store.snapshot(h.clock.time)).toEqual(before);
  });

  it("echoes what it can of a malformed envelope: kind and corrId when they are text, else empty", async () => {
    const h = await open();
    const unknown = await h.post({ kind: "promise.explode", head: { corrId: "k1", version: VERSION }, data: {} });
    expect(unknown.body).toEqual({ kind: "promise.explode", head: { corrId: "k1", status: 400, version: VERSION }, data: expect.stringContaining("invalid kind") });
    const garbage = await h.post({ kind: 1, head: "x" });
    expect(garbage.body.kind).toBe("");
    expect(garbage.body.head.corrId).toBe("");
  });

  it.each([
    ["text that is not JSON", "body", "{kind:"],
    ["an empty body", "body", ""],
    ["bytes that are not UTF-8", "body", new Uint8Array([0x7b, 0xff, 0xfe, 0x7d])],
    ["nesting deeper than 32 levels", "body", `{"kind":"promise.get","head":{"corrId":"c","version":"${VERSION}"},"data":{"id":"x","deep":${"[".repeat(40)}${"]".repeat(40)}}}`],
  ] as const)("%s answers 400 naming %s", async (_what, field, rawBody) => {
    const h = await open();
    const answer = await h.post(undefined, { rawBody });
    expect(answer.status).toBe(400);
    expect(answer.body).toMatchObject({ kind: "", head: { corrId: "", status: 400, version: VERSION } });
    expect(answer.body.data).toContain(`invalid ${field}:`);
  });

  it("an oversized body answers 400 naming body and closes the connection; a wrong content type 400 naming content-type", async () => {
    const h = await open({ bodyLimitBytes: 1_024 });
    const big = await h.send("promise.create", { id: "big", timeoutAt: future(h), param: { data: "x".repeat(2_000) } });
    expect(big.status).toBe(400);
    expect(big.body.data).toContain("invalid body:");
    expect(big.headers.get("connection")).toBe("close");
    const text = await h.post(undefined, { rawBody: JSON.stringify({ kind: "promise.get", head: { corrId: "c", version: VERSION }, data: { id: "x" } }), headers: { "content-type": "text/plain" } });
    expect(text.status).toBe(400);
    expect(text.body).toMatchObject({ kind: "promise.get", head: { corrId: "c" }, data: expect.stringContaining("invalid content-type:") });
  });

  it("a store's bound (the id length) answers 400 naming the envelope's field", async () => {
    const h = await open({ store: new MemoryPromiseStore({ bounds: { idLength: 8 } }) });
    const long = await h.send("task.create", { pid: "w", ttl: 1_000, action: nested("promise.create", { id: "x".repeat(9), timeoutAt: future(h), tags: { "resonate:target": TARGET } }) });
    expect(long.status).toBe(400);
    expect(long.body.data).toMatch(/^invalid data\.action\.data\.id: must be at most 8 /);
  });

  it("the pre-2026 REST paths answer 410, other methods on / 405, unknown paths 404", async () => {
    const h = await open();
    expect((await h.request("GET", "/promises/p1")).status).toBe(410);
    expect((await h.request("POST", "/tasks/claim")).status).toBe(410);
    const get = await h.request("GET", "/");
    expect(get.status).toBe(405);
    expect(get.headers.get("allow")).toBe("POST");
    expect((await h.request("GET", "/nothing")).status).toBe(404);
  });
});

describe("envelope: store faults", () => {
  it("TransientStoreError answers 503 with Retry-After; anything else 500 (a bug), both as envelopes", async () => {
    const store = new MemoryPromiseStore();
    let fault: Error | null = null;
    const original = store.handle.bind(store);
    store.handle = (async (request: never, now: number) => {
      if (fault !== null) throw fault;
      return original(request, now);
    }) as typeof store.handle;
    const h = await open({ store });
    fault = new TransientStoreError("busy");
    const busy = await h.send("promise.get", { id: "x" }, { corrId: "b1" });
    expect(busy.status).toBe(503);
    expect(busy.headers.get("retry-after")).toBe("1");
    expect(busy.body).toEqual({ kind: "promise.get", head: { corrId: "b1", status: 503, version: VERSION }, data: expect.stringContaining("busy") });
    fault = new Error("boom");
    const bug = await h.send("promise.get", { id: "x" }, { corrId: "b2" });
    expect(bug.status).toBe(500);
    expect(bug.body).toEqual({ kind: "promise.get", head: { corrId: "b2", status: 500, version: VERSION }, data: "internal server error" });
  });

  it("/ready answers 503 while the store does not answer its ping (an error, or nothing within 2 s), /health 200", async () => {
    const store = new MemoryPromiseStore();
    const h = await open({ store });
    expect((await h.request("GET", "/ready")).status).toBe(200);
    expect((await h.request("GET", "/health")).status).toBe(200);
    store.ping = async () => {
      throw new TransientStoreError("down");
    };
    const ready = await h.request("GET", "/ready");
    expect(ready.status).toBe(503);
    expect(await ready.json()).toMatchObject({ status: "unavailable", error: expect.stringContaining("down") });
    store.ping = () => new Promise(() => {});
    const hung = await h.request("GET", "/ready");
    expect(hung.status).toBe(503);
    expect(await hung.json()).toMatchObject({ status: "unavailable", error: expect.stringContaining("no answer") });
    expect((await h.request("GET", "/health")).status).toBe(200);
  });
});

describe("envelope: debug mode", () => {
  it("without --debug the debug kinds and resonate:debug_time answer 403", async () => {
    const h = await open();
    for (const kind of ["debug.start", "debug.stop", "debug.reset", "debug.snap", "debug.tick"]) {
      const answer = await h.send(kind, { time: 1 });
      expect(answer.status, kind).toBe(403);
      expect(answer.body).toMatchObject({ kind, head: { status: 403 }, data: expect.stringContaining("debug mode") });
    }
    const timed = await h.send("promise.create", { id: "p", timeoutAt: 10 }, { head: { "resonate:debug_time": 5 } });
    expect(timed.status).toBe(403);
    expect((await h.store.snapshot(h.clock.time)).promises).toEqual([]);
  });

  it("with --debug: start holds the loops, debug_time sets now, tick scans at its time, snap answers the reference shape, reset empties", async () => {
    const h = await open({ debug: true });
    expect((await h.send("debug.start", {})).status).toBe(200);
    const created = await h.send("promise.create", { id: "p", timeoutAt: 5_000, tags: { "resonate:target": TARGET } }, { head: { "resonate:debug_time": 1_000 } });
    expect(created.body.data.promise).toMatchObject({ createdAt: 1_000, state: "pending" });
    await h.send("promise.create", { id: "t", timeoutAt: 3_000, tags: { "resonate:target": TARGET, "resonate:timer": "true" } }, { head: { "resonate:debug_time": 1_000 } });
    const snap = await h.send("debug.snap", {}, { head: { "resonate:debug_time": 2_000 } });
    expect(snap.status).toBe(200);
    expect(isResponse(snap.body)).toBe(true);
    expect(snap.body.data).toMatchObject({
      promiseTimeouts: [
        { id: "p", timeout: 5_000 },
        { id: "t", timeout: 3_000 },
      ],
      taskTimeouts: [
        { id: "p", type: 0, timeout: 31_000 },
        { id: "t", type: 0, timeout: 31_000 },
      ],
      messages: [
        { address: TARGET, message: { kind: "execute", head: {}, data: { task: { id: "p", version: 0 } } } },
        { address: TARGET, message: { kind: "execute", head: {}, data: { task: { id: "t", version: 0 } } } },
      ],
      callbacks: [],
      listeners: [],
    });
    const tick = await h.send("debug.tick", { time: 4_000 });
    expect(tick.body.data).toEqual([]);
    expect(isResponse(tick.body)).toBe(true);
    const after = await h.send("debug.snap", {}, { head: { "resonate:debug_time": 4_000 } });
    expect(after.body.data.promises.find((p: { id: string }) => p.id === "t")).toMatchObject({ state: "resolved", settledAt: 3_000 });
    expect((await h.send("debug.reset", {})).status).toBe(200);
    expect((await h.send("debug.snap", {})).body.data.promises).toEqual([]);
    expect((await h.send("debug.stop", {})).status).toBe(200);
  });
});
