import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ADMIN, type Harness, VIEWER, harness, storeSnapshot } from "./helpers.js";

// The dashboard's redirects stay on this origin, its forms are bounded, cross-origin POSTs are
// refused, a sign-in link never switches a signed-in session, and a sign-in sets one cookie.

let h: Harness;
beforeEach(async () => {
  h = await harness();
  const res = await h.json("POST", "/api/v1/jobs", { token: ADMIN, body: { jobs: [{ id: "j1", jobName: "email.send", queue: "mail", delayMs: 60_000 }] } });
  expect(res.status).toBe(201);
});
afterEach(() => h.close());

function sessionCookies(res: Response): string[] {
  return res.headers.getSetCookie().filter((c) => c.startsWith("belay_session="));
}

async function signIn(secret: string): Promise<string> {
  const res = await h.request("GET", `/?token=${secret}`);
  expect(res.status).toBe(303);
  const cookies = sessionCookies(res);
  expect(cookies).toHaveLength(1);
  return cookies[0]!.split(";")[0]!;
}

async function csrfOf(cookie: string): Promise<string> {
  const text = await (await h.request("GET", "/jobs/j1", { headers: { cookie } })).text();
  const match = /name="_csrf" value="([^"]+)"/.exec(text);
  if (!match) throw new Error("no CSRF token on the page");
  return match[1]!;
}

function post(path: string, cookie: string, fields: Record<string, string>, headers: Record<string, string> = {}) {
  return h.request("POST", path, {
    rawBody: new URLSearchParams(fields).toString(),
    headers: { cookie, "content-type": "application/x-www-form-urlencoded", ...headers },
  });
}

describe("the redirect after an action stays on this origin", () => {
  it.each([
    ["a tab between the slashes", "/\t/evil.example"],
    ["a newline between the slashes", "/\n/evil.example"],
    ["two slashes", "//evil.example"],
    ["a backslash", "/\\evil.example"],
    ["an encoded slash", "/%2F/evil.example"],
    ["an encoded tab", "/%09/evil.example"],
    ["an encoded backslash", "/%5Cevil.example"],
    ["a doubled slash later on", "/jobs//evil.example"],
    ["an absolute URL", "https://evil.example/"],
    ["a scheme-relative URL", "\\\\evil.example"],
    ["a leading space", " /jobs"],
    ["a control character", "/jobs\u0007"],
    ["text that does not decode", "/%E0%A4%A"],
  ])("%s falls back to /", async (_name, back) => {
    const cookie = await signIn(ADMIN);
    const res = await post("/actions/jobs/j1/cancel", cookie, { _csrf: await csrfOf(cookie), _confirmed: "1", _back: back });
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toBe("/");
  });

  it("a same-origin path with a query is kept", async () => {
    const cookie = await signIn(ADMIN);
    const res = await post("/actions/jobs/j1/cancel", cookie, { _csrf: await csrfOf(cookie), _confirmed: "1", _back: "/jobs?state=cancelled&tag=tenant%3Dacme" });
    expect(res.headers.get("location")).toBe("/jobs?state=cancelled&tag=tenant%3Dacme");
  });

  it("the sign-in page's next is held to the same rule", async () => {
    const page = await (await h.request("GET", `/login?next=${encodeURIComponent("/\t/evil.example")}`)).text();
    expect(page).not.toContain("evil.example");
  });
});

describe("action forms are bounded", () => {
  it("a 40 MB form gets 413 and changes nothing", async () => {
    const cookie = await signIn(ADMIN);
    const before = await storeSnapshot(h.store);
    const res = await post("/actions/jobs/j1/cancel", cookie, { _csrf: await csrfOf(cookie), _confirmed: "1", junk: "x".repeat(40 * 1024 * 1024) });
    expect(res.status).toBe(413);
    expect(await storeSnapshot(h.store)).toEqual(before);
  });

  it("so is a sign-in form", async () => {
    const res = await h.request("POST", "/login", {
      rawBody: `token=${"x".repeat(2 * 1024 * 1024)}`,
      headers: { "content-type": "application/x-www-form-urlencoded" },
    });
    expect(res.status).toBe(413);
  });
});

describe("cross-origin POSTs are refused", () => {
  it.each([
    ["another Origin", { origin: "http://evil.example" }],
    ["an opaque Origin", { origin: "null" }],
    ["another port", { origin: "http://belay.test:8081" }],
    ["another scheme", { origin: "https://belay.test" }],
    ["a Referer elsewhere, without an Origin", { referer: "http://evil.example/page" }],
  ])("%s gets 403 and changes nothing", async (_name, headers) => {
    const cookie = await signIn(ADMIN);
    const csrf = await csrfOf(cookie);
    const before = await storeSnapshot(h.store);
    const res = await post("/actions/jobs/j1/cancel", cookie, { _csrf: csrf, _confirmed: "1" }, headers);
    expect(res.status).toBe(403);
    expect(await storeSnapshot(h.store)).toEqual(before);
    const login = await h.request("POST", "/login", { rawBody: `_csrf=${csrf}&token=${ADMIN}`, headers: { cookie, "content-type": "application/x-www-form-urlencoded", ...headers } });
    expect(login.status).toBe(403);
    const logout = await h.request("POST", "/logout", { rawBody: `_csrf=${csrf}`, headers: { cookie, "content-type": "application/x-www-form-urlencoded", ...headers } });
    expect(logout.status).toBe(403);
  });

  it("the server's own origin (or none given) is accepted", async () => {
    const cookie = await signIn(ADMIN);
    const ok = await post("/actions/jobs/j1/cancel", cookie, { _csrf: await csrfOf(cookie), _confirmed: "1" }, { origin: "http://belay.test", referer: "http://belay.test/jobs/j1" });
    expect(ok.status).toBe(303);
    expect((await h.store.getJob("j1"))?.state).toBe("cancelled");
  });
});

describe("sign-in", () => {
  it("a sign-in link does not switch a signed-in session to another token", async () => {
    const cookie = await signIn(VIEWER);
    const res = await h.request("GET", `/jobs?token=${ADMIN}`, { headers: { cookie } });
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toBe("/jobs");
    // The session cookie is rewritten only to carry the flash: still the viewer's session.
    const rewritten = sessionCookies(res);
    expect(rewritten).toHaveLength(1);
    const next = rewritten[0]!.split(";")[0]!;
    const page = await (await h.request("GET", "/jobs", { headers: { cookie: next } })).text();
    expect(page).toContain("viewer");
    expect(page).toMatch(/already signed in as viewer/i);
    expect(page).not.toContain("/actions/jobs/j1/cancel");
  });

  it("a sign-in link sets exactly one session cookie", async () => {
    const res = await h.request("GET", `/?token=${ADMIN}`);
    expect(sessionCookies(res)).toHaveLength(1);
  });

  it("the sign-in form sets exactly one session cookie", async () => {
    const first = await h.request("GET", "/login");
    const cookie = sessionCookies(first)[0]!.split(";")[0]!;
    const csrf = /name="_csrf" value="([^"]+)"/.exec(await first.text())![1]!;
    const res = await h.request("POST", "/login", { rawBody: `_csrf=${csrf}&token=${ADMIN}`, headers: { cookie, "content-type": "application/x-www-form-urlencoded" } });
    expect(res.status).toBe(303);
    expect(sessionCookies(res)).toHaveLength(1);
  });

  it("a first visit sets exactly one session cookie", async () => {
    expect(sessionCookies(await h.request("GET", "/jobs"))).toHaveLength(1);
  });
});
