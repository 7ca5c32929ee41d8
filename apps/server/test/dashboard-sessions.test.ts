import { MemoryStore } from "@belay/memory";
import { afterEach, describe, expect, it } from "vitest";
import { ADMIN, type Harness, harness } from "./helpers.js";

// Sessions live in sealed cookies: a server started again with the same session secret (or
// another instance holding it) reads them; a cookie edited, or sealed under another secret, is
// refused and the browser is anonymous again.

const SECRET = "a-session-secret-of-32-characters!";
const open: Harness[] = [];
afterEach(async () => {
  for (const h of open.splice(0)) await h.close();
});

async function start(options: { store: MemoryStore; sessionSecret?: string }): Promise<Harness> {
  const h = await harness(options);
  open.push(h);
  return h;
}

function cookieOf(res: Response): string {
  const last = res.headers.getSetCookie().filter((c) => c.startsWith("belay_session=")).at(-1);
  if (last === undefined) throw new Error("no session cookie");
  return last.split(";")[0]!;
}

const whoIs = async (h: Harness, cookie: string) => {
  const text = await (await h.request("GET", "/queues", { headers: { cookie } })).text();
  return /Signed in as <b>([^<]+)<\/b>/.exec(text)?.[1] ?? null;
};

describe("dashboard sessions", () => {
  it("survive a restart with the same session secret, and their CSRF token still works", async () => {
    const store = new MemoryStore();
    const first = await start({ store, sessionSecret: SECRET });
    const cookie = cookieOf(await first.request("GET", `/?token=${ADMIN}`));
    expect(await whoIs(first, cookie)).toBe("admin");
    const csrf = /name="_csrf" value="([^"]+)"/.exec(await (await first.request("GET", "/queues", { headers: { cookie } })).text())![1]!;
    await first.close();
    open.length = 0;

    const second = await start({ store, sessionSecret: SECRET });
    expect(await whoIs(second, cookie)).toBe("admin");
    await store.enqueue({ jobs: [{ id: "j1", jobName: "email.send", queue: "mail", payload: "null", dueAt: Date.now() + 60_000 }], now: Date.now() });
    const res = await second.request("POST", "/actions/jobs/j1/cancel", {
      headers: { cookie, "content-type": "application/x-www-form-urlencoded" },
      rawBody: new URLSearchParams({ _csrf: csrf, _confirmed: "1", _back: "/jobs/j1" }).toString(),
    });
    expect(res.status).toBe(303);
    expect((await store.getJob("j1"))?.state).toBe("cancelled");
    expect((await store.listAuditRecords()).records[0]).toMatchObject({ actor: "admin", action: "cancel", target: "j1" });
  });

  it("end at a restart without a configured secret", async () => {
    const store = new MemoryStore();
    const first = await start({ store });
    const cookie = cookieOf(await first.request("GET", `/?token=${ADMIN}`));
    expect(await whoIs(first, cookie)).toBe("admin");
    const second = await start({ store });
    expect(await whoIs(second, cookie)).toBeNull();
  });

  it("refuse a tampered cookie or one sealed under another secret", async () => {
    const store = new MemoryStore();
    const h = await start({ store, sessionSecret: SECRET });
    const cookie = cookieOf(await h.request("GET", `/?token=${ADMIN}`));
    const value = cookie.slice("belay_session=".length);
    // Flip one character in the middle of the sealed text, then in its last (authentication) part.
    for (const at of [Math.floor(value.length / 2), value.length - 2]) {
      const flipped = value.slice(0, at) + (value[at] === "A" ? "B" : "A") + value.slice(at + 1);
      const res = await h.request("GET", "/queues", { headers: { cookie: `belay_session=${flipped}` } });
      expect(res.status).toBe(200);
      expect(await res.text()).not.toContain("Signed in as");
      // A refused cookie is replaced by a fresh anonymous session.
      expect(res.headers.getSetCookie().some((c) => c.startsWith("belay_session="))).toBe(true);
    }
    expect(await whoIs(h, "belay_session=not-a-sealed-value")).toBeNull();
    const other = await start({ store, sessionSecret: "another-secret-also-32-characters!!" });
    expect(await whoIs(other, cookie)).toBeNull();
    expect(await whoIs(h, cookie)).toBe("admin");
  });

  it("a session secret shorter than 32 characters is refused naming the field", async () => {
    await expect(harness({ sessionSecret: "short" })).rejects.toMatchObject({ code: "BELAY_INVALID_INPUT", field: "sessionSecret" });
  });

  it("the cookie does not show the token it signed in with", async () => {
    const h = await start({ store: new MemoryStore(), sessionSecret: SECRET });
    const set = (await h.request("GET", `/?token=${ADMIN}`)).headers.getSetCookie().join("\n");
    expect(set).not.toContain(ADMIN);
    expect(Buffer.from(cookieOf(await h.request("GET", `/?token=${ADMIN}`)).split("=")[1]!, "base64url").toString("latin1")).not.toContain(ADMIN);
  });
});
