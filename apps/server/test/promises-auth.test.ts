import { describe, expect, it } from "vitest";
import type { ServerToken } from "../src/index.js";
import { ADMIN, TOKENS, VIEWER } from "./helpers.js";
import { type PromiseHarness, VERSION, promiseHarnesses } from "./promise-helpers.js";

// Who may use the durable-promise listener: with tokens configured, a token with the `promises`
// permission (in `Authorization: Bearer` or `head.auth`) and nobody else; without tokens,
// anonymous callers from this machine only (loopback peer and host, no Origin).

const SDK = "sdk-secret-1234";
const WITH_SDK: readonly ServerToken[] = [...TOKENS, { name: "sdk", secret: SDK, permissions: ["promises"] }];

const open = promiseHarnesses();

const get = (h: PromiseHarness, options: Parameters<PromiseHarness["send"]>[2] = {}) => h.send("promise.get", { id: "missing" }, options);

describe("promise listener auth with tokens", () => {
  it("anonymous callers may do nothing, even from loopback (401 with WWW-Authenticate), and learn nothing of their request", async () => {
    const h = await open({ tokens: WITH_SDK });
    const anonymous = await get(h, { corrId: "a1" });
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get("www-authenticate")).toMatch(/^Bearer/);
    expect(anonymous.body).toEqual({ kind: "promise.get", head: { corrId: "a1", status: 401, version: VERSION }, data: expect.stringContaining("bearer token") });
    const garbage = await h.post(undefined, { rawBody: "{not json" });
    expect(garbage.status).toBe(401);
    const poll = await h.request("GET", "/poll/workers/w1");
    expect(poll.status).toBe(401);
    expect((await h.request("GET", "/health")).status).toBe(200);
    expect((await h.request("GET", "/ready")).status).toBe(200);
  });

  it("a token needs the promises permission (403 without it); an unknown token is 401", async () => {
    const h = await open({ tokens: WITH_SDK });
    const viewer = await get(h, { token: VIEWER });
    expect(viewer.status).toBe(403);
    expect(viewer.body.data).toBe("viewer lacks the promises permission");
    expect((await get(h, { token: "not-a-token-at-all" })).status).toBe(401);
    expect((await get(h, { token: SDK })).status).toBe(404);
    // A token without a permission list grants every permission, promises included.
    expect((await get(h, { token: ADMIN })).status).toBe(404);
  });

  it("takes the token from head.auth too; both places must agree; Authorization must be Bearer", async () => {
    const h = await open({ tokens: WITH_SDK });
    expect((await get(h, { head: { auth: SDK } })).status).toBe(404);
    expect((await get(h, { head: { auth: SDK }, token: SDK })).status).toBe(404);
    const mismatch = await get(h, { head: { auth: SDK }, token: ADMIN });
    expect(mismatch.status).toBe(401);
    expect(mismatch.body.data).toMatch(/different tokens/);
    expect((await get(h, { head: { auth: VIEWER } })).status).toBe(403);
    expect((await get(h, { headers: { authorization: `Basic ${btoa("a:b")}` } })).status).toBe(401);
  });

  it("GET /poll takes the bearer token", async () => {
    const h = await open({ tokens: WITH_SDK });
    const poll = await h.request("GET", "/poll/workers/w1", { token: SDK });
    expect(poll.status).toBe(200);
    expect(poll.headers.get("content-type")).toMatch(/^text\/event-stream/);
    await poll.body?.cancel();
    expect((await h.request("GET", "/poll/workers/w1", { token: VIEWER })).status).toBe(403);
  });

  it("a host's authorize callback decides the promises permission", async () => {
    const h = await open({
      authorize: (request, permission) => ({ allowed: permission === "promises" && request.headers.get("authorization") === "Bearer let-me-in", actor: "host" }),
    });
    expect((await get(h, { token: "let-me-in" })).status).toBe(404);
    expect((await get(h, { head: { auth: "let-me-in" } })).status).toBe(404);
    expect((await get(h)).status).toBe(401);
    expect((await get(h, { token: "nope" })).status).toBe(403);
  });
});

describe("promise listener auth without tokens", () => {
  it.each(["127.0.0.1", "127.3.4.5", "::1", "::ffff:127.0.0.1"])("a program on this machine (peer %s) may do everything", async (peer) => {
    const h = await open();
    expect(h.server.anonymous).toBe("local");
    expect((await get(h, { peer })).status).toBe(404);
    expect((await h.send("promise.create", { id: "p", timeoutAt: h.clock.time + 1_000 }, { peer })).status).toBe(200);
  });

  it.each([
    ["a remote peer", { peer: "10.1.2.3" }],
    ["an unknown peer", { peer: null }],
    ["a web page (Origin header)", { headers: { origin: "https://evil.example" } }],
    ["a DNS-rebound host name", { host: "evil.example:8001" }],
  ] as const)("%s gets 401", async (_what, options) => {
    const h = await open();
    const answer = await get(h, options);
    expect(answer.status).toBe(401);
    const poll = await h.request("GET", "/poll/workers/w1", options);
    expect(poll.status).toBe(401);
  });

  it("refuses a token it does not know, even from a local caller", async () => {
    const h = await open();
    expect((await get(h, { token: "made-up-token" })).status).toBe(401);
    expect((await get(h, { head: { auth: "made-up-token" } })).status).toBe(401);
  });

  it("anonymous: none refuses local callers too", async () => {
    const h = await open({ anonymous: "none" });
    expect((await get(h)).status).toBe(401);
  });
});
