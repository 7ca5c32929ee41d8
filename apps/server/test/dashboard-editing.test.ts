import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ADMIN, type Harness, OPERATOR, VIEWER, harness, resize, storeSnapshot, welcome } from "./helpers.js";

// The dashboard's editing forms: enqueue a job, create and redefine a schedule, cancel a
// workflow — each behind its permission, the session's CSRF token and the confirmation, each
// refused input shown again with the field named and nothing written — and the workflow page.

let h: Harness;
/** The store's audit trail, oldest first. */
const audit = async () => (await h.store.listAuditRecords({})).records;

beforeEach(async () => {
  h = await harness({ jobs: [welcome, resize] });
});
afterEach(() => h.close());

function cookieOf(res: Response): string {
  const last = res.headers.getSetCookie().filter((c) => c.startsWith("belay_session=")).at(-1);
  if (last === undefined) throw new Error("no session cookie");
  return last.split(";")[0]!;
}

async function signIn(secret: string): Promise<{ cookie: string; csrf: string }> {
  const cookie = cookieOf(await h.request("GET", `/?token=${secret}`));
  const text = await (await h.request("GET", "/queues", { headers: { cookie } })).text();
  return { cookie, csrf: /name="_csrf" value="([^"]+)"/.exec(text)![1]! };
}

const post = (path: string, cookie: string, fields: Record<string, string>) =>
  h.request("POST", path, { headers: { cookie, "content-type": "application/x-www-form-urlencoded" }, rawBody: new URLSearchParams(fields).toString() });

/** The page a redirect leads to, with the cookie the redirect set (its flash). */
async function follow(res: Response): Promise<string> {
  expect(res.status).toBe(303);
  return (await h.request("GET", res.headers.get("location")!, { headers: { cookie: cookieOf(res) } })).text();
}

const flashOf = (page: string) => /<div class="flash (\w+)" role="status">([^<]*)<\/div>/.exec(page)?.slice(1) ?? null;

describe("enqueue from the dashboard", () => {
  it("offers the job names of the jobs module", async () => {
    const { cookie } = await signIn(ADMIN);
    const page = await (await h.request("GET", "/enqueue", { headers: { cookie } })).text();
    expect(page).toContain('<option value="email.welcome">');
    expect(page).toContain('<option value="image.resize">');
    expect(page).toContain('action="/actions/enqueue"');
    expect(await (await h.request("GET", "/jobs", { headers: { cookie } })).text()).toContain('href="/enqueue"');
  });

  it("enqueues a valid payload into the definition's queue, with tags and a due time; audited with the actor", async () => {
    const { cookie, csrf } = await signIn(ADMIN);
    const res = await post("/actions/enqueue", cookie, {
      _csrf: csrf,
      _confirmed: "1",
      jobName: "email.welcome",
      payload: '{"userId": "u42"}',
      tags: "vip, tenant=acme",
      runAt: "2030-01-01T09:00:00Z",
      id: "form-1",
    });
    expect(res.headers.get("location")).toBe("/jobs/form-1");
    const job = await h.store.getJob("form-1");
    expect(job).toMatchObject({ jobName: "email.welcome", queue: "mail", state: "scheduled", dueAt: Date.parse("2030-01-01T09:00:00Z") });
    expect(JSON.parse(job!.payload)).toEqual({ userId: "u42" });
    expect(job!.tags.map((t) => (t.key ? `${t.key}=${t.value}` : t.value)).sort()).toEqual(["email", "tenant=acme", "vip"]);
    expect(flashOf(await follow(res))).toEqual(["success", "Job form-1 enqueued (email.welcome in queue mail)."]);
    expect(await audit()).toEqual([expect.objectContaining({ actor: "admin", action: "enqueue", targetKind: "job", target: "form-1", detail: "email.welcome" })]);
    // The same id again enqueues nothing and says so.
    const again = await post("/actions/enqueue", cookie, { _csrf: csrf, _confirmed: "1", jobName: "email.welcome", payload: '{"userId": "other"}', id: "form-1" });
    expect(flashOf(await follow(again))?.[1]).toContain("already exists; nothing was enqueued");
    expect(JSON.parse((await h.store.getJob("form-1"))!.payload)).toEqual({ userId: "u42" });
  });

  it.each([
    [{ jobName: "email.welcome", payload: '{"userId": ""}' }, "payload.userId:"],
    [{ jobName: "email.welcome", payload: "{userId: u1" }, "payload: is not JSON"],
    [{ jobName: "image.resize", payload: '{"width": -3}' }, "payload.width:"],
    [{ jobName: "no.such.job", payload: "{}" }, "jobName:"],
    [{ jobName: "email.welcome", payload: '{"userId": "u1"}', runAt: "tomorrow" }, "runAt:"],
    [{ jobName: "email.welcome", payload: '{"userId": "u1"}', tags: "a=b=c=" + "x".repeat(300) }, "tags"],
  ])("refuses %j naming the field (%s), writing nothing, and shows the form again", async (fields, named) => {
    const { cookie, csrf } = await signIn(ADMIN);
    const before = await storeSnapshot(h.store);
    const res = await post("/actions/enqueue", cookie, { _csrf: csrf, _confirmed: "1", ...fields });
    expect(res.status).toBe(422);
    const page = await res.text();
    const [kind, message] = flashOf(page)!;
    expect(kind).toBe("error");
    expect(message).toContain("Nothing was enqueued.");
    expect(message).toContain(named);
    // What was typed is still there.
    expect(page).toContain('action="/actions/enqueue"');
    expect(await storeSnapshot(h.store)).toEqual(before);
    expect(await audit()).toEqual([]);
  });

  it("refuses (403) without the enqueue permission, anonymously, or without the CSRF token", async () => {
    const before = await storeSnapshot(h.store);
    const fields = { _confirmed: "1", jobName: "email.welcome", payload: '{"userId": "u1"}' };
    const operator = await signIn(OPERATOR);
    expect(await (await h.request("GET", "/enqueue", { headers: { cookie: operator.cookie } })).text()).toContain("You may not enqueue jobs");
    expect((await post("/actions/enqueue", operator.cookie, { ...fields, _csrf: operator.csrf })).status).toBe(403);
    const admin = await signIn(ADMIN);
    expect((await post("/actions/enqueue", admin.cookie, { ...fields, _csrf: "forged" })).status).toBe(403);
    expect((await post("/actions/enqueue", admin.cookie, fields)).status).toBe(403);
    const anonymous = cookieOf(await h.request("GET", "/login"));
    const csrf = /name="_csrf" value="([^"]+)"/.exec(await (await h.request("GET", "/login", { headers: { cookie: anonymous } })).text())![1]!;
    expect((await post("/actions/enqueue", anonymous, { ...fields, _csrf: csrf })).status).toBe(403);
    const unconfirmed = await post("/actions/enqueue", admin.cookie, { ...fields, _csrf: admin.csrf, _confirmed: "" });
    expect(unconfirmed.status).toBe(303);
    expect(await storeSnapshot(h.store)).toEqual(before);
    expect(await audit()).toEqual([]);
  });
});

describe("schedules from the dashboard", () => {
  const schedule = { mode: "new", id: "nightly", cron: "0 3 * * *", timeZone: "Europe/Paris", jobName: "image.resize", payload: '{"width": 640}', tags: "system", catchUp: "skip" };

  it("creates a schedule, then redefines it keeping its cursor; both audited", async () => {
    const { cookie, csrf } = await signIn(ADMIN);
    expect(await (await h.request("GET", "/schedules/new", { headers: { cookie } })).text()).toContain('action="/actions/schedules/save"');
    const created = await post("/actions/schedules/save", cookie, { _csrf: csrf, _confirmed: "1", ...schedule });
    expect(created.headers.get("location")).toBe("/schedules");
    expect(flashOf(await follow(created))).toEqual(["success", "Schedule nightly created."]);
    const stored = await h.store.getSchedule("nightly");
    expect(stored).toMatchObject({ cron: "0 3 * * *", timeZone: "Europe/Paris", jobName: "image.resize", queue: "media", catchUp: "skip", noOverlap: false });
    expect(JSON.parse(stored!.payload)).toEqual({ width: 640 });

    const list = await (await h.request("GET", "/schedules", { headers: { cookie } })).text();
    expect(list).toContain('href="/schedules/nightly/edit"');
    const edit = await (await h.request("GET", "/schedules/nightly/edit", { headers: { cookie } })).text();
    expect(edit).toContain('value="0 3 * * *"');
    expect(edit).toContain("&quot;width&quot;: 640");
    const redefined = await post("/actions/schedules/save", cookie, { _csrf: csrf, _confirmed: "1", ...schedule, mode: "edit", cron: "30 4 * * 1-5", catchUp: "coalesce", noOverlap: "1" });
    expect(flashOf(await follow(redefined))?.[1]).toBe("Schedule nightly redefined (its cursor is kept).");
    expect(await h.store.getSchedule("nightly")).toMatchObject({ cron: "30 4 * * 1-5", catchUp: "coalesce", noOverlap: true, cursor: stored!.cursor });
    expect((await h.store.listAuditRecords({ target: "nightly", targetKind: "schedule" })).records).toEqual([
      expect.objectContaining({ actor: "admin", action: "upsertSchedule", target: "nightly", detail: "created" }),
      expect.objectContaining({ actor: "admin", action: "upsertSchedule", target: "nightly", detail: "updated" }),
    ]);
  });

  it.each([
    [{ cron: "every day" }, "cron:"],
    [{ cron: "61 * * * *" }, "cron:"],
    [{ timeZone: "Mars/Olympus" }, "timeZone:"],
    [{ payload: '{"width": "wide"}' }, "payload.width:"],
    [{ payload: "[" }, "payload: is not JSON"],
    [{ jobName: "no.such.job" }, "jobName:"],
    [{ id: "" }, "id:"],
  ])("refuses %j naming the field (%s) and writes nothing", async (change, named) => {
    const { cookie, csrf } = await signIn(ADMIN);
    const res = await post("/actions/schedules/save", cookie, { _csrf: csrf, _confirmed: "1", ...schedule, ...change });
    expect(res.status).toBe(422);
    const [kind, message] = flashOf(await res.text())!;
    expect(kind).toBe("error");
    expect(message).toContain("Nothing was saved.");
    expect(message).toContain(named);
    expect(await h.store.listSchedules()).toEqual([]);
    expect(await audit()).toEqual([]);
  });

  it("a new schedule never overwrites an existing one", async () => {
    const { cookie, csrf } = await signIn(ADMIN);
    await post("/actions/schedules/save", cookie, { _csrf: csrf, _confirmed: "1", ...schedule });
    const res = await post("/actions/schedules/save", cookie, { _csrf: csrf, _confirmed: "1", ...schedule, cron: "* * * * *" });
    expect(res.status).toBe(422);
    expect(flashOf(await res.text())?.[1]).toContain("exists already");
    expect((await h.store.getSchedule("nightly"))?.cron).toBe("0 3 * * *");
  });

  it("refuses (403) without manageSchedules or without the CSRF token", async () => {
    const operator = await signIn(OPERATOR);
    expect(await (await h.request("GET", "/schedules/new", { headers: { cookie: operator.cookie } })).text()).toContain("You may not manage schedules");
    expect((await post("/actions/schedules/save", operator.cookie, { _csrf: operator.csrf, _confirmed: "1", ...schedule })).status).toBe(403);
    const admin = await signIn(ADMIN);
    expect((await post("/actions/schedules/save", admin.cookie, { _csrf: "forged", _confirmed: "1", ...schedule })).status).toBe(403);
    expect(await h.store.listSchedules()).toEqual([]);
    expect(await audit()).toEqual([]);
  });
});

describe("workflows on the dashboard", () => {
  beforeEach(async () => {
    // a → b → c, and d alone (in another queue, so it can be claimed by itself).
    const res = await h.json("POST", "/api/v1/workflows", {
      token: ADMIN,
      body: {
        id: "wf-1",
        name: "signup",
        jobs: [
          { id: "a", jobName: "email.welcome", payload: { userId: "u1" } },
          { id: "b", jobName: "email.welcome", payload: { userId: "u1" }, parents: ["a"] },
          { id: "c", jobName: "email.welcome", payload: { userId: "u1" }, parents: ["b"] },
          { id: "d", jobName: "image.resize", payload: { width: 10 } },
        ],
      },
    });
    expect(res.status).toBe(201);
    const claimed = await h.store.claim({ workerId: "w1", queues: ["media"], max: 1, leaseMs: 60_000, now: Date.now() });
    expect(claimed.jobs.map((j) => j.id)).toEqual(["d"]);
  });

  it("draws the members and their parent edges with their states, each node linking to its job", async () => {
    const page = await (await h.request("GET", "/workflows/wf-1")).text();
    const nodes = [...page.matchAll(/<a href="\/jobs\/(\w)" data-test="wf-node" data-job="\w" data-state="(\w+)">/g)].map((m) => [m[1], m[2]]);
    expect(nodes.sort()).toEqual([["a", "scheduled"], ["b", "awaitingParents"], ["c", "awaitingParents"], ["d", "leased"]]);
    const edges = [...page.matchAll(/data-test="wf-edge" data-from="(\w)" data-to="(\w)"/g)].map((m) => `${m[1]}→${m[2]}`);
    expect(edges.sort()).toEqual(["a→b", "b→c"]);
    expect(page).toMatch(/<svg class="wf" width="\d+" height="\d+"/);
    expect(page).not.toMatch(/<script[^>]+src=/);
    const job = await (await h.request("GET", "/jobs/b")).text();
    expect(job).toContain('href="/workflows/wf-1" data-test="workflow-link"');
    expect(await (await h.request("GET", "/workflows")).text()).toContain('href="/workflows/wf-1"');
    expect((await h.request("GET", "/workflows/ghost")).status).toBe(404);
  });

  it("cancels every unfinished member with the actor, each audited, in one flash", async () => {
    const { cookie, csrf } = await signIn(ADMIN);
    expect(await (await h.request("GET", "/workflows/wf-1", { headers: { cookie } })).text()).toContain("/actions/workflows/wf-1/cancel");
    const res = await post("/actions/workflows/wf-1/cancel", cookie, { _csrf: csrf, _confirmed: "1", _back: "/workflows/wf-1" });
    expect(res.headers.get("location")).toBe("/workflows/wf-1");
    expect(flashOf(await follow(res))).toEqual(["success", "Workflow wf-1: 3 cancelled (2 with a parent), 1 cancellation requested (running)."]);
    for (const id of ["a", "b", "c"]) expect((await h.store.getJob(id))?.state).toBe("cancelled");
    expect(await h.store.getJob("d")).toMatchObject({ state: "leased", cancelRequested: true });
    const records = (await h.store.listAuditRecords()).records;
    expect(records.map((r) => [r.actor, r.action, r.target])).toEqual([
      ["admin", "cancel", "a"],
      ["admin", "cancel", "d"],
    ]);
  });

  it("refuses (403) without the cancel permission or the CSRF token", async () => {
    const before = await storeSnapshot(h.store);
    const viewer = await signIn(VIEWER);
    expect(await (await h.request("GET", "/workflows/wf-1", { headers: { cookie: viewer.cookie } })).text()).not.toContain("/actions/workflows/wf-1/cancel");
    expect((await post("/actions/workflows/wf-1/cancel", viewer.cookie, { _csrf: viewer.csrf, _confirmed: "1" })).status).toBe(403);
    const admin = await signIn(ADMIN);
    expect((await post("/actions/workflows/wf-1/cancel", admin.cookie, { _csrf: "forged", _confirmed: "1" })).status).toBe(403);
    expect(await storeSnapshot(h.store)).toEqual(before);
  });
});
