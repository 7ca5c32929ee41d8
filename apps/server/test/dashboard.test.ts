import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ADMIN, type Harness, VIEWER, expectStandalonePage, harness } from "./helpers.js";

let h: Harness;
beforeEach(async () => {
  h = await harness({ livePollMs: 50 });
  const res = await h.json("POST", "/api/v1/jobs", {
    token: ADMIN,
    body: { jobs: [{ id: "j1", jobName: "email.send", queue: "mail", tags: ["urgent"], payload: { to: "a@example.com" } }] },
  });
  expect(res.status).toBe(201);
});
afterEach(() => h.close());

/** The session cookie a response set, as a request `cookie` header. */
function cookieOf(res: Response): string {
  // A sign-in replaces the session a request started with: the last cookie set wins, as in a browser.
  const set = res.headers.getSetCookie();
  const last = set.filter((c) => c.startsWith("belay_session=")).at(-1);
  if (last === undefined) throw new Error(`no session cookie in ${set.join(" | ")}`);
  return last.split(";")[0]!;
}

async function signIn(secret: string): Promise<string> {
  const res = await h.request("GET", `/?token=${secret}`);
  expect(res.status).toBe(303);
  return cookieOf(res);
}

async function csrfOf(cookie: string, path = "/jobs/j1"): Promise<string> {
  const text = await (await h.request("GET", path, { headers: { cookie } })).text();
  const match = /name="_csrf" value="([^"]+)"/.exec(text);
  if (!match) throw new Error("no CSRF token on the page");
  return match[1]!;
}

function form(fields: Record<string, string>): string {
  return new URLSearchParams(fields).toString();
}

describe("dashboard pages", () => {
  it.each(["/", "/jobs", "/jobs/j1", "/queues", "/failures", "/failures?tab=quarantined", "/schedules", "/workflows", "/observers", "/audit", "/login"])(
    "%s renders for an anonymous viewer, with its CSS inlined and a strict CSP",
    async (path) => {
      await expectStandalonePage(h, path);
    },
  );

  it("an unknown job is a 404 page; an unknown path a 404", async () => {
    expect((await h.request("GET", "/jobs/ghost")).status).toBe(404);
    expect((await h.request("GET", "/nothing")).status).toBe(404);
  });

  it("hides payloads and actions from anonymous viewers and shows them to permitted tokens", async () => {
    const anonymous = await (await h.request("GET", "/jobs/j1")).text();
    expect(anonymous).toContain("needs the viewSensitive permission");
    expect(anonymous).not.toContain("a@example.com");
    expect(anonymous).not.toContain("/actions/jobs/j1/cancel");
    const viewer = await (await h.request("GET", "/jobs/j1", { headers: { cookie: await signIn(VIEWER) } })).text();
    expect(viewer).toContain("a@example.com");
    expect(viewer).not.toContain("/actions/jobs/j1/cancel");
    const admin = await (await h.request("GET", "/jobs/j1", { headers: { cookie: await signIn(ADMIN) } })).text();
    expect(admin).toContain("/actions/jobs/j1/cancel");
  });

  it("escapes what jobs carry", async () => {
    await h.json("POST", "/api/v1/jobs", { token: ADMIN, body: { jobs: [{ id: "x<script>", jobName: "<img src=x onerror=alert(1)>", tags: ['"><i>evil</i>'] }] } });
    const text = await (await h.request("GET", "/jobs")).text();
    expect(text).not.toContain("<img src=x");
    expect(text).toContain("&lt;img src=x onerror=alert(1)&gt;");
    expect(text).not.toContain("<i>evil");
    expect(text).toContain("&quot;&gt;&lt;i&gt;evil&lt;/i&gt;");
  });

  it("filters jobs by tag and shows tag facets", async () => {
    await h.json("POST", "/api/v1/jobs", { token: ADMIN, body: { jobs: [{ id: "j2", jobName: "email.send", queue: "mail", tags: ["tenant=acme"] }] } });
    const text = await (await h.request("GET", "/jobs?tag=urgent")).text();
    expect(text).toContain('href="/jobs/j1"');
    expect(text).not.toContain('href="/jobs/j2"');
    expect(text).toMatch(/Labels<\/b>/);
    const suggest = await h.json("GET", "/tags/suggest?prefix=ten");
    expect(suggest.body.suggestions).toEqual(["tenant="]);
  });

  it("a bad filter is explained on the page, not a server error", async () => {
    const res = await h.request("GET", "/jobs?state=bogus&after=zzz");
    expect(res.status).toBe(200);
    expect(await res.text()).toContain("This filter cannot be read");
  });
});

describe("browser sign-in", () => {
  it("?token= sets an HttpOnly SameSite=Strict session cookie and redirects without the token", async () => {
    const res = await h.request("GET", `/queues?tab=x&token=${ADMIN}`);
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toBe("/queues?tab=x");
    const cookie = res.headers.get("set-cookie") ?? "";
    expect(cookie).toMatch(/HttpOnly/i);
    expect(cookie).toMatch(/SameSite=Strict/i);
    const page = await (await h.request("GET", "/queues", { headers: { cookie: cookieOf(res) } })).text();
    expect(page).toContain("Signed in as <b>admin</b>");
  });

  it("an invalid ?token= leaves the browser read-only with a message", async () => {
    const res = await h.request("GET", "/?token=wrong-token");
    const page = await (await h.request("GET", "/", { headers: { cookie: cookieOf(res) } })).text();
    expect(page).toContain("That token is not valid");
    expect(page).not.toContain("Signed in as");
  });

  it("the login form signs in with a valid token and refuses others", async () => {
    const first = await h.request("GET", "/login");
    const cookie = cookieOf(first);
    const csrf = /name="_csrf" value="([^"]+)"/.exec(await first.text())![1]!;
    const bad = await h.request("POST", "/login", { headers: { cookie, "content-type": "application/x-www-form-urlencoded" }, rawBody: form({ _csrf: csrf, token: "nope", next: "/" }) });
    expect(bad.status).toBe(401);
    const good = await h.request("POST", "/login", { headers: { cookie, "content-type": "application/x-www-form-urlencoded" }, rawBody: form({ _csrf: csrf, token: ADMIN, next: "/queues" }) });
    expect(good.status).toBe(303);
    expect(good.headers.get("location")).toBe("/queues");
    const forged = await h.request("POST", "/login", { headers: { "content-type": "application/x-www-form-urlencoded" }, rawBody: form({ token: ADMIN }) });
    expect(forged.status).toBe(403);
  });
});

describe("operator actions", () => {
  const post = (path: string, cookie: string, fields: Record<string, string>) =>
    h.request("POST", path, { headers: { cookie, "content-type": "application/x-www-form-urlencoded" }, rawBody: form(fields) });

  it("a confirmed action with the CSRF token applies, is audited with the actor, and answers 303 with a flash", async () => {
    const cookie = await signIn(ADMIN);
    const csrf = await csrfOf(cookie);
    const res = await post("/actions/jobs/j1/cancel", cookie, { _csrf: csrf, _confirmed: "1", _back: "/jobs/j1" });
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toBe("/jobs/j1");
    expect((await h.store.getJob("j1"))?.state).toBe("cancelled");
    expect((await h.store.listAuditRecords()).records[0]).toMatchObject({ actor: "admin", action: "cancel", target: "j1" });
    // The flash rides in the session cookie the answer set.
    const page = await (await h.request("GET", "/jobs/j1", { headers: { cookie: cookieOf(res) } })).text();
    expect(page).toContain("Job j1 cancelled.");
  });

  it("refuses (403) without the CSRF token, without the permission, or anonymously; unconfirmed actions change nothing", async () => {
    const admin = await signIn(ADMIN);
    expect((await post("/actions/jobs/j1/cancel", admin, { _confirmed: "1" })).status).toBe(403);
    expect((await post("/actions/jobs/j1/cancel", admin, { _csrf: "forged", _confirmed: "1" })).status).toBe(403);
    const viewer = await signIn(VIEWER);
    expect((await post("/actions/jobs/j1/cancel", viewer, { _csrf: await csrfOf(viewer), _confirmed: "1" })).status).toBe(403);
    const anonymousPage = await h.request("GET", "/jobs/j1");
    const anonymous = cookieOf(anonymousPage);
    expect((await post("/actions/queues/mail/pause", anonymous, { _csrf: await csrfOf(anonymous, "/login"), _confirmed: "1" })).status).toBe(403);
    const unconfirmed = await post("/actions/jobs/j1/cancel", admin, { _csrf: await csrfOf(admin) });
    expect(unconfirmed.status).toBe(303);
    expect((await h.store.getJob("j1"))?.state).toBe("scheduled");
    expect((await h.store.listQueueSettings())).toEqual([]);
    expect((await h.store.listAuditRecords()).records).toEqual([]);
  });

  it("sets and clears a concurrency limit; refuses a bad one with a flash", async () => {
    const cookie = await signIn(ADMIN);
    const csrf = await csrfOf(cookie);
    await post("/actions/queues/mail/limit", cookie, { _csrf: csrf, _confirmed: "1", limit: "3" });
    expect(await h.store.listQueueSettings()).toEqual([{ queue: "mail", paused: false, concurrencyLimit: 3 }]);
    await post("/actions/queues/mail/limit", cookie, { _csrf: csrf, _confirmed: "1", limit: "zero" });
    expect((await h.store.listQueueSettings())[0]?.concurrencyLimit).toBe(3);
    await post("/actions/queues/mail/limit", cookie, { _csrf: csrf, _confirmed: "1", limit: "" });
    expect((await h.store.listQueueSettings())[0]?.concurrencyLimit).toBeNull();
    const unknown = await post("/actions/queues/ghost/pause", cookie, { _csrf: csrf, _confirmed: "1" });
    expect(unknown.status).toBe(303);
    expect((await h.store.listQueueSettings()).map((q) => q.queue)).toEqual(["mail"]);
  });

  it("never redirects off-site", async () => {
    const cookie = await signIn(ADMIN);
    const res = await post("/actions/jobs/j1/cancel", cookie, { _csrf: await csrfOf(cookie), _confirmed: "1", _back: "//evil.example/" });
    expect(res.headers.get("location")).toBe("/");
  });
});

describe("live refresh", () => {
  it("pushes a change event at once, then only when counts change", async () => {
    const controller = new AbortController();
    const res = await h.server.fetch(new Request("http://belay.test/live", { signal: controller.signal }));
    expect(res.headers.get("content-type")).toContain("text/event-stream");
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    // One read in flight at a time: a read abandoned by a timeout still receives the next chunk.
    let pending: Promise<ReadableStreamReadResult<Uint8Array>> | null = null;
    const nextEvent = async (timeoutMs: number): Promise<{ version: number } | null> => {
      const deadline = Date.now() + timeoutMs;
      while (Date.now() < deadline) {
        const end = buffer.indexOf("\n\n");
        if (end >= 0) {
          const chunk = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const data = /^data: (.*)$/m.exec(chunk);
          if (data) return JSON.parse(data[1]!) as { version: number };
          continue;
        }
        pending ??= reader.read();
        const read = await Promise.race([pending, new Promise<null>((r) => setTimeout(() => r(null), deadline - Date.now()))]);
        if (read === null) return null;
        pending = null;
        if (read.done) return null;
        buffer += decoder.decode(read.value, { stream: true });
      }
      return null;
    };
    // Waits for an event get a generous deadline; only the quiet spell is a short window.
    const first = await nextEvent(20_000);
    expect(first).not.toBeNull();
    expect(await nextEvent(400)).toBeNull();
    await h.json("POST", "/api/v1/jobs", { token: ADMIN, body: { jobs: [{ jobName: "email.send", queue: "mail" }] } });
    const second = await nextEvent(20_000);
    expect(second!.version).toBeGreaterThan(first!.version);
    controller.abort();
    await reader.cancel().catch(() => {});
  });
});

describe("a host that restricts viewing", () => {
  it("sends anonymous browsers to sign in; a token without view does not sign in", async () => {
    await h.close();
    h = await harness({
      tokens: [],
      authorize: (request) => {
        const auth = request.headers.get("authorization");
        if (auth === "Bearer alice-secret") return { allowed: true, actor: "alice" };
        return { allowed: false, actor: auth === "Bearer mallory-secret" ? "mallory" : "anonymous" };
      },
    });
    const anonymous = await h.request("GET", "/queues?x=1");
    expect(anonymous.status).toBe(303);
    expect(anonymous.headers.get("location")).toBe("/login?next=%2Fqueues%3Fx%3D1");
    expect((await h.request("GET", "/live")).status).toBe(401);
    expect((await h.request("GET", "/login")).status).toBe(200);
    const alice = await h.request("GET", "/?token=alice-secret");
    expect((await h.request("GET", "/queues", { headers: { cookie: cookieOf(alice) } })).status).toBe(200);
    const mallory = await h.request("GET", "/?token=mallory-secret");
    expect((await h.request("GET", "/queues", { headers: { cookie: cookieOf(mallory) } })).status).toBe(303);
  });
});
