import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ADMIN, type Harness, VIEWER, harness, welcome } from "./helpers.js";

let h: Harness;
beforeEach(async () => {
  h = await harness({ jobs: [welcome] });
});
afterEach(() => h.close());

const enqueue = (jobs: unknown[]) => h.json("POST", "/api/v1/jobs", { token: ADMIN, body: { jobs } });

describe("queues API", () => {
  it("GET /counts and GET /queues show depth per queue and state, including queues known only from definitions", async () => {
    await enqueue([{ jobName: "email.welcome", payload: { userId: "a" } }, { jobName: "email.welcome", queue: "bulk", payload: { userId: "b" } }]);
    const counts = await h.json("GET", "/api/v1/counts");
    expect(counts.body.counts).toEqual(
      expect.arrayContaining([
        { queue: "mail", state: "scheduled", count: 1 },
        { queue: "bulk", state: "scheduled", count: 1 },
      ]),
    );
    expect(counts.body.totals.scheduled).toBe(2);
    const queues = await h.json("GET", "/api/v1/queues");
    expect(queues.body.queues.map((q: { queue: string }) => q.queue)).toEqual(["bulk", "mail"]);
    expect(queues.body.queues[1]).toMatchObject({ queue: "mail", paused: false, concurrencyLimit: null, live: 1, total: 1 });
    expect((await h.json("GET", "/api/v1/queues/mail")).body.counts.scheduled).toBe(1);
    expect((await h.json("GET", "/api/v1/queues/nope")).status).toBe(404);
  });

  it("pause, resume and concurrency limit apply, are audited with the actor, and 404 for an unknown queue", async () => {
    expect((await h.json("POST", "/api/v1/queues/mail/pause", { token: ADMIN })).body).toEqual({ status: "applied" });
    expect((await h.json("GET", "/api/v1/queues/mail")).body.paused).toBe(true);
    expect((await h.json("PUT", "/api/v1/queues/mail/concurrency-limit", { token: ADMIN, body: { limit: 3 } })).status).toBe(200);
    expect((await h.json("GET", "/api/v1/queues/mail")).body.concurrencyLimit).toBe(3);
    expect((await h.json("PUT", "/api/v1/queues/mail/concurrency-limit", { token: ADMIN, body: { limit: null } })).status).toBe(200);
    expect((await h.json("POST", "/api/v1/queues/mail/resume", { token: ADMIN })).status).toBe(200);
    expect((await h.json("GET", "/api/v1/queues/mail")).body).toMatchObject({ paused: false, concurrencyLimit: null });
    const audit = await h.json("GET", "/api/v1/audit?order=oldestFirst");
    expect(audit.body.records.map((r: { action: string; actor: string; target: string }) => [r.action, r.actor, r.target])).toEqual([
      ["pauseQueue", "admin", "mail"],
      ["setConcurrencyLimit", "admin", "mail"],
      ["setConcurrencyLimit", "admin", "mail"],
      ["resumeQueue", "admin", "mail"],
    ]);
    for (const [method, path, body] of [
      ["POST", "/api/v1/queues/nope/pause", undefined],
      ["POST", "/api/v1/queues/nope/resume", undefined],
      ["PUT", "/api/v1/queues/nope/concurrency-limit", { limit: 2 }],
    ] as const) {
      expect((await h.json(method, path, { token: ADMIN, body })).status).toBe(404);
    }
    expect((await h.json("GET", "/api/v1/audit")).body.records).toHaveLength(4);
  });
});

describe("schedules API", () => {
  const definition = { cron: "*/10 * * * * *", jobName: "email.welcome", payload: { userId: "cron" }, tags: ["nightly"] };

  it("PUT creates (201) then redefines (200, cursor kept), each audited with the token's name; GET lists with next ticks; payload to viewSensitive only", async () => {
    const created = await h.json("PUT", "/api/v1/schedules/s1", { token: ADMIN, body: definition });
    expect(created.status).toBe(201);
    expect(created.body.status).toBe("created");
    const updated = await h.json("PUT", "/api/v1/schedules/s1", { token: ADMIN, body: { ...definition, cron: "0 3 * * *", timeZone: "Europe/Paris" } });
    expect(updated.body).toEqual({ status: "updated", cursor: created.body.cursor });
    expect((await h.store.listAuditRecords({ target: "s1" })).records).toEqual([
      expect.objectContaining({ actor: "admin", action: "upsertSchedule", targetKind: "schedule", detail: "created" }),
      expect.objectContaining({ actor: "admin", action: "upsertSchedule", targetKind: "schedule", detail: "updated" }),
    ]);
    const list = await h.json("GET", "/api/v1/schedules");
    expect(list.body.schedules).toHaveLength(1);
    expect(list.body.schedules[0]).toMatchObject({ id: "s1", cron: "0 3 * * *", timeZone: "Europe/Paris", queue: "mail", jobName: "email.welcome" });
    expect(list.body.schedules[0].nextTicks).toHaveLength(3);
    expect(list.body.schedules[0].payload).toBeUndefined();
    expect((await h.json("GET", "/api/v1/schedules/s1")).body.payload).toBeUndefined();
    expect((await h.json("GET", "/api/v1/schedules/s1", { token: VIEWER })).body.payload).toEqual({ userId: "cron" });
    expect((await h.json("GET", "/api/v1/schedules/nope")).status).toBe(404);
  });

  it("POST /schedules/:id/trigger mints one job due now, audited; 404 when unknown", async () => {
    await h.json("PUT", "/api/v1/schedules/s1", { token: ADMIN, body: definition });
    const res = await h.json("POST", "/api/v1/schedules/s1/trigger", { token: ADMIN });
    expect(res.status).toBe(200);
    expect(res.body.status).toBe("triggered");
    expect(await h.store.getJob(res.body.jobId)).toMatchObject({ scheduleId: "s1", jobName: "email.welcome", state: "scheduled" });
    expect((await h.json("GET", "/api/v1/jobs?scheduleId=s1")).body.jobs).toHaveLength(1);
    const audit = await h.json("GET", "/api/v1/audit?targetKind=schedule");
    expect(audit.body.records[0]).toMatchObject({ action: "triggerSchedule", actor: "admin", target: "s1" });
    expect((await h.json("POST", "/api/v1/schedules/nope/trigger", { token: ADMIN })).status).toBe(404);
  });

  it("DELETE removes a schedule (its jobs stay); 404 when unknown", async () => {
    await h.json("PUT", "/api/v1/schedules/s1", { token: ADMIN, body: definition });
    expect((await h.json("DELETE", "/api/v1/schedules/s1", { token: ADMIN })).body).toEqual({ status: "removed" });
    expect((await h.json("GET", "/api/v1/schedules")).body.schedules).toEqual([]);
    expect((await h.json("DELETE", "/api/v1/schedules/s1", { token: ADMIN })).status).toBe(404);
  });
});

describe("monitoring API", () => {
  it("audit log pages newest first with keyset cursors", async () => {
    for (let i = 0; i < 5; i++) await h.json("POST", "/api/v1/queues/mail/pause", { token: ADMIN });
    const first = await h.json("GET", "/api/v1/audit?limit=2");
    expect(first.body.records).toHaveLength(2);
    const second = await h.json("GET", `/api/v1/audit?limit=2&after=${encodeURIComponent(first.body.nextCursor)}`);
    expect(second.body.records[0].seq).toBeLessThan(first.body.records[1].seq);
    expect((await h.json("GET", "/api/v1/audit?target=mail&targetKind=queue")).body.records).toHaveLength(5);
  });

  it("tag facets count jobs per value within the filter; suggestions complete labels, keys and values", async () => {
    await enqueue([
      { jobName: "email.welcome", payload: { userId: "a" }, tags: ["urgent", "tenant=acme"] },
      { jobName: "email.welcome", payload: { userId: "b" }, tags: ["tenant=acme"] },
      { jobName: "email.welcome", queue: "bulk", payload: { userId: "c" }, tags: ["tenant=globex"] },
    ]);
    const tenants = await h.json("GET", "/api/v1/tags/facets?key=tenant");
    expect(tenants.body).toEqual({ key: "tenant", values: [{ value: "acme", count: 2 }, { value: "globex", count: 1 }] });
    const labels = await h.json("GET", "/api/v1/tags/facets?queue=mail");
    expect(labels.body.values).toEqual([{ value: "email", count: 2 }, { value: "urgent", count: 1 }]);
    const suggest = await h.json("GET", "/api/v1/tags/suggestions?prefix=t");
    expect(suggest.body.suggestions).toEqual([{ kind: "key", key: "tenant", text: "tenant=" }]);
    const values = await h.json("GET", "/api/v1/tags/suggestions?key=tenant&prefix=g");
    expect(values.body.suggestions.map((s: { text: string }) => s.text)).toEqual(["tenant=globex"]);
  });

  it("observers show cursor, pending and lag; one observer shows its dead letters (errors to viewSensitive)", async () => {
    await enqueue([{ id: "j1", jobName: "email.welcome", payload: { userId: "a" } }]);
    const now = Date.now() + 1_000;
    await h.store.registerObserver({ subscription: { observerId: "alerts", states: ["deadLettered"] }, startAt: "beginning", now });
    await h.store.claim({ workerId: "w", queues: ["mail"], max: 1, leaseMs: 60_000, now });
    await h.store.reportOutcomes({ reports: [{ jobId: "j1", workerId: "w", attempt: 1, outcome: { type: "failed", retryAt: null } }], now });
    const list = await h.json("GET", "/api/v1/observers");
    expect(list.body.observers).toEqual([expect.objectContaining({ id: "alerts", states: ["deadLettered"], pending: 1, deadLetters: 0 })]);
    expect(list.body.observers[0].lagMs).toBeGreaterThanOrEqual(0);
    const claim = await h.store.claimObserverDeliveries({ observerId: "alerts", workerId: "o", max: 5, leaseMs: 60_000, now });
    if (claim.status !== "acquired") throw new Error("no lease");
    await h.store.reportObserverDeliveries({
      observerId: "alerts",
      workerId: "o",
      outcomes: claim.deliveries.map((d) => ({ position: d.position, outcome: "deadLettered" as const, error: "pager down" })),
      now,
    });
    const one = await h.json("GET", "/api/v1/observers/alerts", { token: VIEWER });
    expect(one.body.observer).toMatchObject({ pending: 0, deadLetters: 1, lagMs: null });
    expect(one.body.deadLetters).toEqual([expect.objectContaining({ jobId: "j1", error: "pager down", state: "deadLettered" })]);
    expect((await h.json("GET", "/api/v1/observers/alerts")).body.deadLetters[0].error).toBeNull();
    expect((await h.json("GET", "/api/v1/observers/nope")).status).toBe(404);
  });

  it("throughput, health and me answer", async () => {
    const throughput = await h.json("GET", "/api/v1/throughput");
    expect(throughput.body.buckets).toHaveLength(60);
    expect((await h.json("GET", "/api/v1/health")).body).toEqual({ status: "ok", store: "memory", worker: null });
    expect((await h.json("GET", "/api/v1/me")).body).toEqual({ actor: "anonymous", permissions: ["view"] });
    expect((await h.json("GET", "/api/v1/me", { token: VIEWER })).body).toEqual({ actor: "viewer", permissions: ["view", "viewSensitive"] });
  });

  it("the OpenAPI document describes every route", async () => {
    const res = await h.json("GET", "/api/v1/openapi.json");
    expect(res.status).toBe(200);
    expect(res.body.openapi).toMatch(/^3\./);
    const routes = Object.entries(res.body.paths as Record<string, Record<string, unknown>>).flatMap(([path, ops]) =>
      Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`),
    );
    expect(routes.sort()).toEqual(
      [
        "POST /jobs",
        "GET /jobs",
        "GET /jobs/{id}",
        "GET /jobs/{id}/dependencies",
        "POST /jobs/{id}/cancel",
        "POST /jobs/{id}/requeue",
        "POST /workflows",
        "GET /workflows",
        "GET /workflows/{id}",
        "GET /counts",
        "GET /queues",
        "GET /queues/{queue}",
        "POST /queues/{queue}/pause",
        "POST /queues/{queue}/resume",
        "PUT /queues/{queue}/concurrency-limit",
        "GET /schedules",
        "GET /schedules/{id}",
        "PUT /schedules/{id}",
        "DELETE /schedules/{id}",
        "POST /schedules/{id}/trigger",
        "GET /audit",
        "GET /tags/facets",
        "GET /tags/suggestions",
        "GET /observers",
        "GET /observers/{id}",
        "GET /throughput",
        "GET /health",
        "GET /me",
      ].sort(),
    );
    expect(res.body.components.schemas.Error).toBeDefined();
    expect(res.body.paths["/jobs"].post.responses["413"]).toBeDefined();
  });

  it("an unknown API route is a JSON 404", async () => {
    const res = await h.json("GET", "/api/v1/nothing-here");
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe("BELAY_NOT_FOUND");
  });
});
