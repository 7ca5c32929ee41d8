import { type Server, createServer as createHttpServer } from "node:http";
import type { AddressInfo } from "node:net";
import { isMessage } from "@resonatehq/sdk";
import { silentLogger } from "@belay/core";
import { MemoryPromiseStore } from "@belay/memory";
import { afterEach, describe, expect, it } from "vitest";
import { type Listener, createPromiseServer, serve } from "../src/index.js";
import { type PromiseHarness, VERSION, promiseHarness } from "./promise-helpers.js";
import { connectPoller, until } from "./sdk-helpers.js";

// Delivery from the outbox: SSE pollers (`uni` and `any` routing, a bounded number of them),
// HTTP push targets, and what stays in the outbox when nobody can take it.

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function open(options: Parameters<typeof promiseHarness>[0] = {}): Promise<PromiseHarness> {
  const h = await promiseHarness(options);
  cleanups.push(() => h.close());
  return h;
}

/** A poller over a real socket, closed after the test: the parsed messages it has received so far. */
async function connect(base: string, group: string, id: string): Promise<{ readonly messages: any[] }> {
  const poller = await connectPoller(base, group, id);
  cleanups.push(async () => poller.close());
  return {
    get messages() {
      return poller.messages.map((m) => m.message);
    },
  };
}

async function listen(
  options: Partial<Parameters<typeof createPromiseServer>[0]> = {},
): Promise<{ listener: Listener; send: (kind: string, data: unknown) => Promise<any>; server: ReturnType<typeof createPromiseServer>; store: MemoryPromiseStore }> {
  const store = new MemoryPromiseStore();
  await store.migrate();
  // Long intervals: a message arriving promptly was delivered by the wake after its write.
  const server = createPromiseServer({ store, logger: silentLogger, timerIntervalMs: 60_000, outboxIntervalMs: 60_000, ...options });
  const listener = await serve(server, { port: 0 });
  cleanups.push(() => listener.close());
  let n = 0;
  const send = async (kind: string, data: unknown) => {
    const response = await fetch(listener.url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ kind, head: { corrId: `d${++n}`, version: VERSION }, data }) });
    return response.json();
  };
  return { listener, send, server, store };
}

describe("delivery to pollers", () => {
  it("an execute reaches a poller of the target's group at once after the write (the store's hint wakes the drain); uni reaches only its own id; any@group/id prefers that id", async () => {
    const { listener, send, server, store } = await listen();
    const w1 = await connect(listener.url, "workers", "w1");
    const w2 = await connect(listener.url, "workers", "w2");
    await until("both pollers", () => (server.pollers.size === 2 ? true : undefined));

    const timeoutAt = Date.now() + 60_000;
    await send("promise.create", { id: "to-w2", timeoutAt, tags: { "resonate:target": "poll://any@workers/w2" } });
    const execute = await until("the execute", () => w2.messages.find((m) => m.kind === "execute"));
    expect(execute).toEqual({ kind: "execute", head: { serverUrl: listener.url }, data: { task: { id: "to-w2", version: 0 } } });
    expect(isMessage(execute)).toBe(true);
    expect(w1.messages).toEqual([]);

    await send("promise.create", { id: "awaited", timeoutAt });
    await send("promise.register_listener", { awaited: "awaited", address: "poll://uni@workers/w1" });
    await send("promise.settle", { id: "awaited", state: "resolved", value: { data: "eQ==" } });
    const unblock = await until("the unblock", () => w1.messages.find((m) => m.kind === "unblock"));
    expect(unblock).toMatchObject({ kind: "unblock", head: {}, data: { promise: { id: "awaited", state: "resolved", value: { data: "eQ==" } } } });
    expect(isMessage(unblock)).toBe(true);
    expect(w2.messages.filter((m) => m.kind === "unblock")).toEqual([]);

    // any@group without an id: some poller of the group, round robin.
    for (const id of ["a1", "a2"]) await send("promise.create", { id, timeoutAt, tags: { "resonate:target": "poll://any@workers" } });
    await until("both anycasts", () => (w1.messages.length + w2.messages.length === 4 ? true : undefined));
    expect(new Set([...w1.messages, ...w2.messages].map((m) => m.data.task?.id ?? m.data.promise.id))).toEqual(new Set(["to-w2", "awaited", "a1", "a2"]));
    await until("an empty outbox", async () => ((await store.snapshot(Date.now())).outbox.length === 0 ? true : undefined));
  });

  it("a message sent before its poller connects is delivered once it does", async () => {
    const { listener, send, server } = await listen({ outboxLeaseMs: 60_000 });
    await send("promise.create", { id: "early", timeoutAt: Date.now() + 60_000, tags: { "resonate:target": "poll://any@late" } });
    await new Promise((r) => setTimeout(r, 100));
    const late = await connect(listener.url, "late", "l1");
    const execute = await until("the execute", () => late.messages.find((m) => m.kind === "execute"));
    expect(execute.data.task.id).toBe("early");
    expect(server.pollers.size).toBe(1);
  });

  it("refuses pollers past its bound with 503", async () => {
    const { listener } = await listen({ maxPollers: 1 });
    await connect(listener.url, "g", "p1");
    const second = await fetch(`${listener.url}/poll/g/p2`);
    expect(second.status).toBe(503);
    expect(second.headers.get("retry-after")).not.toBeNull();
  });
});

describe("the outbox drain", () => {
  const target = "poll://any@nobody";

  /** A poller of the hub that answers `send` with `ok` (one that fails leaves the hub, as an SSE poller does). */
  const fakePoller = (h: PromiseHarness, group: string, id: string, ok: boolean) => {
    const sent: any[] = [];
    const poller = {
      group,
      id,
      send: async (data: string) => {
        if (!ok) {
          poller.close();
          return false;
        }
        sent.push(JSON.parse(data));
        return true;
      },
      close: () => h.server.pollers.remove(poller),
    };
    h.server.pollers.add(poller);
    return { poller, sent };
  };

  it("takes only what its pollers and push targets can take: a message for nobody stays untaken; a sweep hands it back at once", async () => {
    const h = await open({ outboxLeaseMs: 1_000 });
    await h.send("promise.create", { id: "p", timeoutAt: h.clock.time + 60_000, tags: { "resonate:target": target } });
    expect(await h.server.drain.drainOnce()).toEqual({ taken: 0, delivered: 0, dropped: 0, released: 0 });
    expect(await h.server.drain.sweep()).toEqual({ taken: 1, delivered: 0, dropped: 0, released: 1 });
    const [message] = (await h.store.describePromise("p", h.clock.time))!.messages;
    expect(message).toMatchObject({ kind: "execute", address: target, availableAt: h.clock.time, takes: 1 });
    // A poller of the group connects: the next pass takes the message (no lease to wait out).
    const { sent } = fakePoller(h, "nobody", "n1", true);
    expect(await h.server.drain.drainOnce()).toMatchObject({ taken: 1, delivered: 1 });
    expect(sent.map((m) => m.data.task.id)).toEqual(["p"]);
    expect((await h.store.snapshot(h.clock.time)).outbox).toEqual([]);
  });

  it("releases at once a message whose poller left between the take and the write, for the next poller", async () => {
    const h = await open({ outboxLeaseMs: 60_000 });
    fakePoller(h, "g", "leaving", false);
    await h.send("promise.create", { id: "p", timeoutAt: h.clock.time + 120_000, tags: { "resonate:target": "poll://any@g" } });
    expect(await h.server.drain.drainOnce()).toEqual({ taken: 1, delivered: 0, dropped: 0, released: 1 });
    expect(h.server.pollers.size).toBe(0);
    expect((await h.store.describePromise("p", h.clock.time))!.messages).toMatchObject([{ availableAt: h.clock.time, takes: 1 }]);
    const { sent } = fakePoller(h, "g", "staying", true);
    expect(await h.server.drain.drainOnce()).toMatchObject({ taken: 1, delivered: 1 });
    expect(sent).toHaveLength(1);
  });

  it("gives up an unblock unblockGiveUpMs after it was written, once taken before undelivered; drops a message to an address it cannot reach", async () => {
    const h = await open({ outboxLeaseMs: 1_000, unblockGiveUpMs: 5_000 });
    await h.send("promise.create", { id: "p", timeoutAt: h.clock.time + 60_000 });
    await h.send("promise.register_listener", { awaited: "p", address: "poll://uni@client/gone" });
    await h.send("promise.settle", { id: "p", state: "resolved" });
    expect((await h.server.drain.drainOnce()).taken).toBe(0);
    expect(await h.server.drain.sweep()).toMatchObject({ taken: 1, dropped: 0, released: 1 });
    h.clock.time += 2_000;
    expect(await h.server.drain.sweep()).toMatchObject({ taken: 1, dropped: 0, released: 1 });
    h.clock.time += 3_000;
    expect(await h.server.drain.sweep()).toMatchObject({ taken: 1, dropped: 1 });
    expect((await h.store.snapshot(h.clock.time)).outbox).toEqual([]);

    // Old, but never taken before (every server was down meanwhile): offered once more first.
    await h.send("promise.create", { id: "q", timeoutAt: h.clock.time + 60_000 });
    await h.send("promise.register_listener", { awaited: "q", address: "poll://uni@client/gone" });
    await h.send("promise.settle", { id: "q", state: "resolved" });
    h.clock.time += 10_000;
    expect(await h.server.drain.sweep()).toMatchObject({ taken: 1, dropped: 0, released: 1 });
    expect(await h.server.drain.sweep()).toMatchObject({ taken: 1, dropped: 1 });

    await h.send("promise.create", { id: "b", timeoutAt: h.clock.time + 60_000, tags: { "resonate:target": "bash://run-it" } });
    expect((await h.server.drain.drainOnce()).taken).toBe(0);
    expect(await h.server.drain.sweep()).toMatchObject({ taken: 1, dropped: 1 });
    expect((await h.store.snapshot(h.clock.time)).outbox).toEqual([]);
  });

  it("POSTs messages to http(s) targets: acknowledged on 2xx, kept otherwise", async () => {
    const received: { path: string; type: string | undefined; body: any }[] = [];
    let answer = 200;
    const hook: Server = createHttpServer((request, response) => {
      let body = "";
      request.on("data", (chunk: Buffer) => (body += chunk.toString()));
      request.on("end", () => {
        received.push({ path: request.url ?? "", type: request.headers["content-type"], body: JSON.parse(body) });
        response.writeHead(answer).end();
      });
    });
    await new Promise<void>((resolve) => hook.listen(0, "127.0.0.1", resolve));
    cleanups.push(() => new Promise((resolve) => hook.close(resolve)));
    const url = `http://127.0.0.1:${(hook.address() as AddressInfo).port}/hook`;
    const h = await open({ outboxLeaseMs: 1_000, serverUrl: "http://belay.example:8001" });
    await h.send("promise.create", { id: "p", timeoutAt: h.clock.time + 60_000, tags: { "resonate:target": url } });
    answer = 500;
    expect(await h.server.drain.drainOnce()).toMatchObject({ taken: 1, delivered: 0 });
    answer = 202;
    h.clock.time += 1_000;
    expect(await h.server.drain.drainOnce()).toMatchObject({ taken: 1, delivered: 1 });
    expect((await h.store.snapshot(h.clock.time)).outbox).toEqual([]);
    expect(received.at(-1)).toEqual({
      path: "/hook",
      type: "application/json",
      body: { kind: "execute", head: { serverUrl: "http://belay.example:8001" }, data: { task: { id: "p", version: 0 } } },
    });
  });
});
