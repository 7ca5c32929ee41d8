import { MemoryStore } from "@belay/memory";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Permission } from "../src/index.js";
import { ADMIN, type Harness, OPERATOR, VIEWER, harness, storeSnapshot } from "./helpers.js";

let h: Harness;
afterEach(() => h.close());

async function seed(target: Harness): Promise<void> {
  const res = await target.json("POST", "/api/v1/jobs", {
    token: ADMIN,
    body: { jobs: [{ id: "j1", jobName: "x", queue: "mail" }, { id: "dl", jobName: "x", queue: "dead" }] },
  });
  expect(res.status).toBe(201);
  const now = Date.now() + 1_000;
  await target.store.claim({ workerId: "w", queues: ["dead"], max: 1, leaseMs: 60_000, now });
  await target.store.reportOutcomes({ reports: [{ jobId: "dl", workerId: "w", attempt: 1, outcome: { type: "failed", retryAt: null } }], now });
  expect((await target.json("PUT", "/api/v1/schedules/s1", { token: ADMIN, body: { cron: "0 * * * *", jobName: "x" } })).status).toBe(201);
}

/** Every write route with the permission it needs and a request that succeeds with it. */
const WRITES: readonly { permission: Permission; method: string; path: string; body?: unknown; ok: number }[] = [
  { permission: "enqueue", method: "POST", path: "/api/v1/jobs", body: { jobs: [{ id: "new", jobName: "x" }] }, ok: 201 },
  { permission: "enqueue", method: "POST", path: "/api/v1/workflows", body: { name: "w", jobs: [{ id: "wm", jobName: "x" }] }, ok: 201 },
  { permission: "cancel", method: "POST", path: "/api/v1/jobs/j1/cancel", ok: 200 },
  { permission: "requeue", method: "POST", path: "/api/v1/jobs/dl/requeue", ok: 200 },
  { permission: "pauseQueue", method: "POST", path: "/api/v1/queues/mail/pause", ok: 200 },
  { permission: "pauseQueue", method: "POST", path: "/api/v1/queues/mail/resume", ok: 200 },
  { permission: "pauseQueue", method: "PUT", path: "/api/v1/queues/mail/concurrency-limit", body: { limit: 4 }, ok: 200 },
  { permission: "triggerSchedule", method: "POST", path: "/api/v1/schedules/s1/trigger", ok: 200 },
  { permission: "manageSchedules", method: "PUT", path: "/api/v1/schedules/s2", body: { cron: "0 3 * * *", jobName: "x" }, ok: 201 },
  { permission: "manageSchedules", method: "DELETE", path: "/api/v1/schedules/s1", ok: 200 },
];

describe("bearer tokens", () => {
  beforeEach(async () => {
    h = await harness();
    await seed(h);
  });

  it.each(WRITES.map((w) => [`${w.method} ${w.path}`, w] as const))("%s: 401 without or with an unknown token, 403 without the permission, nothing written", async (_n, w) => {
    const before = await storeSnapshot(h.store);
    const anonymous = await h.json(w.method, w.path, { body: w.body });
    expect(anonymous.status).toBe(401);
    expect(anonymous.body.error.code).toBe("BELAY_UNAUTHENTICATED");
    expect(anonymous.headers.get("www-authenticate")).toContain("Bearer");
    expect((await h.json(w.method, w.path, { token: "not-a-known-token", body: w.body })).status).toBe(401);
    const viewer = await h.json(w.method, w.path, { token: VIEWER, body: w.body });
    expect(viewer.status).toBe(403);
    expect(viewer.body.error).toMatchObject({ code: "BELAY_FORBIDDEN" });
    expect(viewer.body.error.message).toContain(w.permission);
    expect(await storeSnapshot(h.store)).toEqual(before);
  });

  it.each(WRITES.map((w) => [`${w.method} ${w.path}`, w] as const))("%s: allowed with the permission", async (_n, w) => {
    const res = await h.json(w.method, w.path, { token: ADMIN, body: w.body });
    expect(res.status, JSON.stringify(res.body)).toBe(w.ok);
  });

  it("the operator's actions are audited under the token's name", async () => {
    expect((await h.json("POST", "/api/v1/jobs/j1/cancel", { token: OPERATOR })).status).toBe(200);
    expect((await h.json("POST", "/api/v1/jobs/dl/requeue", { token: OPERATOR })).status).toBe(200);
    expect((await h.json("POST", "/api/v1/queues/mail/pause", { token: OPERATOR })).status).toBe(200);
    expect((await h.json("POST", "/api/v1/schedules/s1/trigger", { token: OPERATOR })).status).toBe(200);
    const audit = await h.json("GET", "/api/v1/audit?order=oldestFirst");
    expect(audit.body.records.map((r: { actor: string; action: string }) => `${r.actor}:${r.action}`)).toEqual([
      "admin:upsertSchedule", // the set-up's schedule, defined through the API with the admin token
      "operator:cancel",
      "operator:requeue",
      "operator:pauseQueue",
      "operator:triggerSchedule",
    ]);
  });

  it("reads need no token; the API ignores a dashboard session cookie", async () => {
    expect((await h.json("GET", "/api/v1/jobs")).status).toBe(200);
    const res = await h.request("POST", "/api/v1/jobs/j1/cancel", { headers: { cookie: "belay_session=anything" } });
    expect(res.status).toBe(401);
  });
});

describe("a host's authorize callback", () => {
  const seen: [string | null, Permission][] = [];
  beforeEach(async () => {
    seen.length = 0;
    h = await harness({
      tokens: [],
      authorize: (request, permission) => {
        const user = request.headers.get("x-user");
        seen.push([user, permission]);
        if (permission === "view") return { allowed: true, actor: user ?? "anonymous" };
        if (user === "crash") throw new Error("directory down");
        return { allowed: user === "alice" || (user === "bob" && permission === "enqueue"), actor: user ?? "anonymous", ...(user === null ? {} : {}) };
      },
    });
  });

  it("decides every permission; its actor is audited", async () => {
    const enqueue = await h.request("POST", "/api/v1/jobs", { headers: { "x-user": "bob" }, body: { jobs: [{ id: "j1", jobName: "x" }] } });
    expect(enqueue.status).toBe(201);
    const cancelByBob = await h.request("POST", "/api/v1/jobs/j1/cancel", { headers: { "x-user": "bob" } });
    expect(cancelByBob.status).toBe(401); // no Authorization header: the callback said no, and no credentials were presented
    const cancel = await h.request("POST", "/api/v1/jobs/j1/cancel", { headers: { "x-user": "alice" } });
    expect(cancel.status).toBe(200);
    const audit = await h.json("GET", "/api/v1/audit");
    expect(audit.body.records[0]).toMatchObject({ actor: "alice", action: "cancel", target: "j1" });
    expect(seen).toContainEqual(["alice", "cancel"]);
  });

  it("refuses with 403 when credentials were presented, and when the callback throws", async () => {
    await h.request("POST", "/api/v1/jobs", { headers: { "x-user": "bob" }, body: { jobs: [{ id: "j1", jobName: "x" }] } });
    const bearer = await h.request("POST", "/api/v1/jobs/j1/cancel", { headers: { "x-user": "bob", authorization: "Bearer whatever" } });
    expect(bearer.status).toBe(403);
    const crash = await h.request("POST", "/api/v1/jobs/j1/cancel", { headers: { "x-user": "crash" } });
    expect(crash.status).toBe(403);
    expect((await h.store.getJob("j1"))?.state).toBe("scheduled");
  });
});

describe("no tokens and no callback", () => {
  it("the server is read-only: reads answer, writes are 401", async () => {
    h = await harness({ tokens: [], store: new MemoryStore() });
    expect((await h.json("GET", "/api/v1/queues")).status).toBe(200);
    expect((await h.json("POST", "/api/v1/jobs", { token: ADMIN, body: { jobs: [{ jobName: "x" }] } })).status).toBe(401);
  });
});
