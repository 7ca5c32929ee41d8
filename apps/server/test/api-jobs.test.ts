import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ADMIN, type Harness, VIEWER, harness, resize, welcome } from "./helpers.js";

let h: Harness;
afterEach(() => h.close());

describe("jobs API without job definitions (raw enqueue)", () => {
  beforeEach(async () => {
    h = await harness();
  });

  it("POST /jobs enqueues raw JSON in queue default and answers 201 with receipts", async () => {
    const res = await h.json("POST", "/api/v1/jobs", {
      token: ADMIN,
      body: { jobs: [{ id: "j1", jobName: "anything.at.all", payload: { a: [1, 2], b: null }, tags: ["urgent", "tenant=acme"] }] },
    });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({ jobs: [{ id: "j1", status: "created", state: "scheduled" }] });
    const job = await h.store.getJob("j1");
    expect(job).toMatchObject({ queue: "default", jobName: "anything.at.all", payload: '{"a":[1,2],"b":null}' });
    expect(job?.tags).toEqual([
      { key: "", value: "urgent" },
      { key: "tenant", value: "acme" },
    ]);
  });

  it("POST /jobs with a repeated id answers 200 duplicate and leaves the job unchanged", async () => {
    await h.json("POST", "/api/v1/jobs", { token: ADMIN, body: { jobs: [{ id: "j1", jobName: "x", payload: 1 }] } });
    const res = await h.json("POST", "/api/v1/jobs", { token: ADMIN, body: { jobs: [{ id: "j1", jobName: "y", payload: 2 }] } });
    expect(res.status).toBe(200);
    expect(res.body.jobs).toEqual([{ id: "j1", status: "duplicate", state: "scheduled" }]);
    expect((await h.store.getJob("j1"))?.payload).toBe("1");
  });

  it("POST /jobs enqueues many atomically with parents, delay, runAt and generated ids", async () => {
    const runAt = Date.now() + 3_600_000;
    const res = await h.json("POST", "/api/v1/jobs", {
      token: ADMIN,
      body: {
        jobs: [
          { id: "p", jobName: "parent", queue: "q1" },
          { id: "c", jobName: "child", parents: ["p"], dependencyMode: "onAnyTerminal", traceContext: "00-abc-def-01" },
          { jobName: "later", delayMs: 60_000 },
          { id: "at", jobName: "at", runAt: new Date(runAt).toISOString() },
        ],
      },
    });
    expect(res.status).toBe(201);
    expect(res.body.jobs.map((j: { state: string }) => j.state)).toEqual(["scheduled", "awaitingParents", "scheduled", "scheduled"]);
    expect(res.body.jobs[2].id).toMatch(/^[0-9A-Z]{26}$/);
    expect((await h.store.getJob("at"))?.dueAt).toBe(runAt);
    expect((await h.store.getJob("c"))).toMatchObject({ parentIds: ["p"], dependencyMode: "onAnyTerminal", traceContext: "00-abc-def-01" });
  });

  it("GET /jobs/:id shows the summary and history; payload only with viewSensitive", async () => {
    await h.json("POST", "/api/v1/jobs", { token: ADMIN, body: { jobs: [{ id: "j1", jobName: "x", payload: { secret: "s" } }] } });
    const anonymous = await h.json("GET", "/api/v1/jobs/j1");
    expect(anonymous.status).toBe(200);
    expect(anonymous.body.sensitive).toBe(false);
    expect(anonymous.body.payload).toBeUndefined();
    expect(anonymous.body.job).toMatchObject({ id: "j1", state: "scheduled", jobName: "x" });
    expect(anonymous.body.history).toHaveLength(1);
    const viewer = await h.json("GET", "/api/v1/jobs/j1", { token: VIEWER });
    expect(viewer.body).toMatchObject({ sensitive: true, payload: { secret: "s" }, output: null });
  });

  it("GET /jobs/:id?sensitive=true insists: 401 anonymous, 403 without the permission", async () => {
    await h.json("POST", "/api/v1/jobs", { token: ADMIN, body: { jobs: [{ id: "j1", jobName: "x" }] } });
    expect((await h.json("GET", "/api/v1/jobs/j1?sensitive=true")).status).toBe(401);
    expect((await h.json("GET", "/api/v1/jobs/j1?sensitive=true", { token: "operator-secret-1" })).status).toBe(403);
    expect((await h.json("GET", "/api/v1/jobs/j1?sensitive=true", { token: VIEWER })).status).toBe(200);
  });

  it("GET /jobs/:id shows output and failure detail of executed jobs to viewSensitive only", async () => {
    await h.json("POST", "/api/v1/jobs", { token: ADMIN, body: { jobs: [{ id: "ok", jobName: "x" }, { id: "bad", jobName: "x" }] } });
    const now = Date.now();
    await h.store.claim({ workerId: "w", queues: ["default"], max: 2, leaseMs: 60_000, now });
    await h.store.reportOutcomes({
      reports: [
        { jobId: "ok", workerId: "w", attempt: 1, outcome: { type: "succeeded", output: '{"n":42}' } },
        { jobId: "bad", workerId: "w", attempt: 1, outcome: { type: "failed", retryAt: null, failureDetail: "Error: boom\n  at handler" } },
      ],
      now,
    });
    const ok = await h.json("GET", "/api/v1/jobs/ok", { token: VIEWER });
    expect(ok.body.output).toEqual({ n: 42 });
    const bad = await h.json("GET", "/api/v1/jobs/bad", { token: VIEWER });
    expect(bad.body.job.state).toBe("deadLettered");
    expect(bad.body.history.at(-1).failureDetail).toContain("boom");
    const hidden = await h.json("GET", "/api/v1/jobs/bad");
    expect(hidden.body.history.every((t: { failureDetail: unknown }) => t.failureDetail === null)).toBe(true);
    expect(hidden.body.output).toBeUndefined();
  });

  it("GET /jobs/:id and /dependencies answer 404 for an unknown job", async () => {
    for (const path of ["/api/v1/jobs/nope", "/api/v1/jobs/nope/dependencies"]) {
      const res = await h.json("GET", path);
      expect(res.status).toBe(404);
      expect(res.body.error).toMatchObject({ code: "BELAY_NOT_FOUND", field: "id" });
    }
  });

  it("GET /jobs/:id/dependencies lists parents (gating) and children", async () => {
    await h.json("POST", "/api/v1/jobs", { token: ADMIN, body: { jobs: [{ id: "p", jobName: "x" }, { id: "c", jobName: "x", parents: ["p"] }] } });
    const parent = await h.json("GET", "/api/v1/jobs/p/dependencies");
    expect(parent.body).toEqual({ parents: [], children: [{ jobId: "c", state: "awaitingParents" }] });
    const child = await h.json("GET", "/api/v1/jobs/c/dependencies");
    expect(child.body.parents).toEqual([{ jobId: "p", state: "scheduled", gating: true }]);
  });

  it("GET /jobs filters by state, queue, job name, tag, schedule and workflow, newest first with keyset paging", async () => {
    const jobs = Array.from({ length: 7 }, (_, i) => ({
      id: `j${i}`,
      jobName: i % 2 === 0 ? "even" : "odd",
      queue: i < 4 ? "a" : "b",
      tags: i % 3 === 0 ? ["urgent", "tenant=acme"] : ["tenant=globex"],
    }));
    await h.json("POST", "/api/v1/jobs", { token: ADMIN, body: { jobs } });
    const ids = async (query: string) => (await h.json("GET", `/api/v1/jobs${query}`)).body.jobs.map((j: { id: string }) => j.id);
    expect(await ids("")).toEqual(["j6", "j5", "j4", "j3", "j2", "j1", "j0"]);
    expect(await ids("?order=oldestFirst&limit=2")).toEqual(["j0", "j1"]);
    expect(await ids("?queue=a&jobName=even")).toEqual(["j2", "j0"]);
    expect(await ids("?tag=urgent")).toEqual(["j6", "j3", "j0"]);
    expect(await ids("?tag=tenant=globex&queue=b")).toEqual(["j5", "j4"]);
    expect(await ids("?tag=tenant=*&tag=urgent&queue=a")).toEqual(["j3", "j0"]);
    expect(await ids("?state=scheduled,leased&jobName=odd")).toEqual(["j5", "j3", "j1"]);
    expect(await ids("?state=succeeded")).toEqual([]);
    expect(await ids("?scheduleId=nightly")).toEqual([]);
    expect(await ids("?workflowId=w1")).toEqual([]);

    const seen: string[] = [];
    let after: string | null = null;
    do {
      const page: { status: number; body: { jobs: { id: string }[]; nextCursor: string | null } } = await h.json(
        "GET",
        `/api/v1/jobs?limit=3${after ? `&after=${encodeURIComponent(after)}` : ""}`,
      );
      expect(page.status).toBe(200);
      seen.push(...page.body.jobs.map((j) => j.id));
      after = page.body.nextCursor;
    } while (after !== null);
    expect(seen).toEqual(["j6", "j5", "j4", "j3", "j2", "j1", "j0"]);
  });

  it("POST /jobs/:id/cancel cancels, requests cancellation of a leased job, 409 when terminal, 404 when unknown", async () => {
    await h.json("POST", "/api/v1/jobs", { token: ADMIN, body: { jobs: [{ id: "a", jobName: "x" }, { id: "b", jobName: "x" }] } });
    expect((await h.json("POST", "/api/v1/jobs/a/cancel", { token: ADMIN })).body).toEqual({ status: "cancelled" });
    const again = await h.json("POST", "/api/v1/jobs/a/cancel", { token: ADMIN });
    expect(again.status).toBe(409);
    expect(again.body.error).toMatchObject({ code: "BELAY_NOT_CANCELLABLE", state: "cancelled" });
    await h.store.claim({ workerId: "w", queues: ["default"], max: 1, leaseMs: 60_000, now: Date.now() });
    expect((await h.json("POST", "/api/v1/jobs/b/cancel", { token: ADMIN })).body).toEqual({ status: "cancelRequested" });
    expect((await h.json("POST", "/api/v1/jobs/zzz/cancel", { token: ADMIN })).status).toBe(404);
  });

  it("POST /jobs/:id/requeue requeues a dead-lettered job, 409 otherwise, 404 when unknown", async () => {
    await h.json("POST", "/api/v1/jobs", { token: ADMIN, body: { jobs: [{ id: "a", jobName: "x" }] } });
    expect((await h.json("POST", "/api/v1/jobs/a/requeue", { token: ADMIN })).status).toBe(409);
    const now = Date.now();
    await h.store.claim({ workerId: "w", queues: ["default"], max: 1, leaseMs: 60_000, now });
    await h.store.reportOutcomes({ reports: [{ jobId: "a", workerId: "w", attempt: 1, outcome: { type: "failed", retryAt: null } }], now });
    const res = await h.json("POST", "/api/v1/jobs/a/requeue", { token: ADMIN });
    expect(res).toMatchObject({ status: 200, body: { status: "requeued" } });
    expect((await h.store.getJob("a"))).toMatchObject({ state: "scheduled", attempt: 0 });
    expect((await h.json("POST", "/api/v1/jobs/zzz/requeue", { token: ADMIN })).status).toBe(404);
  });

  it("POST /workflows enqueues members atomically; a repeat is a 200 duplicate; GET lists and shows it", async () => {
    const body = { id: "wf1", name: "order", jobs: [{ id: "v", jobName: "validate" }, { id: "s", jobName: "ship", parents: ["v"] }] };
    const created = await h.json("POST", "/api/v1/workflows", { token: ADMIN, body });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ id: "wf1", status: "created", jobs: [{ id: "v", state: "scheduled" }, { id: "s", state: "awaitingParents" }] });
    const again = await h.json("POST", "/api/v1/workflows", { token: ADMIN, body });
    expect(again).toMatchObject({ status: 200, body: { status: "duplicate" } });
    const list = await h.json("GET", "/api/v1/workflows");
    expect(list.body.workflows).toEqual([expect.objectContaining({ id: "wf1", name: "order", status: "running", jobCount: 2 })]);
    const one = await h.json("GET", "/api/v1/workflows/wf1");
    expect(one.body.jobs.map((j: { id: string }) => j.id)).toEqual(["v", "s"]);
    expect((await h.json("GET", "/api/v1/workflows/nope")).status).toBe(404);
    expect((await h.json("GET", "/api/v1/jobs?workflowId=wf1")).body.jobs).toHaveLength(2);
  });

  it("POST /workflows names the member at fault and writes nothing", async () => {
    const res = await h.json("POST", "/api/v1/workflows", {
      token: ADMIN,
      body: { name: "bad", jobs: [{ id: "v", jobName: "validate" }, { id: "s", jobName: "ship", parents: ["elsewhere"] }] },
    });
    expect(res.status).toBe(422);
    expect(res.body.error).toMatchObject({ code: "BELAY_WORKFLOW_CONTAINMENT", field: "jobs[1].parents" });
    expect(await h.store.getJob("v")).toBeNull();
  });
});

describe("jobs API with job definitions", () => {
  beforeEach(async () => {
    h = await harness({ jobs: [welcome, resize] });
  });

  it("validates the payload with the job's schema and defaults queue and tags from the definition", async () => {
    const res = await h.json("POST", "/api/v1/jobs", { token: ADMIN, body: { jobs: [{ id: "w1", jobName: "email.welcome", payload: { userId: "u1" }, tags: ["vip"] }] } });
    expect(res.status).toBe(201);
    expect(await h.store.getJob("w1")).toMatchObject({
      queue: "mail",
      tags: [
        { key: "", value: "email" },
        { key: "", value: "vip" },
      ],
    });
  });

  it("an explicit queue overrides the definition's", async () => {
    await h.json("POST", "/api/v1/jobs", { token: ADMIN, body: { jobs: [{ id: "w1", jobName: "email.welcome", queue: "bulk", payload: { userId: "u1" } }] } });
    expect((await h.store.getJob("w1"))?.queue).toBe("bulk");
  });

  it("a payload the schema rejects is a 400 naming the field inside the payload", async () => {
    const res = await h.json("POST", "/api/v1/jobs", {
      token: ADMIN,
      body: { jobs: [{ id: "ok", jobName: "image.resize", payload: { width: 10 } }, { id: "w1", jobName: "email.welcome", payload: { userId: 7 } }] },
    });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: "BELAY_PAYLOAD_INVALID", field: "jobs[1].payload.userId" });
    expect(await h.store.getJob("ok")).toBeNull();
  });

  it("an unknown job name is a 422 naming jobName", async () => {
    const res = await h.json("POST", "/api/v1/jobs", { token: ADMIN, body: { jobs: [{ jobName: "email.goodbye", payload: {} }] } });
    expect(res.status).toBe(422);
    expect(res.body.error).toMatchObject({ code: "BELAY_UNKNOWN_JOB_NAME", field: "jobs[0].jobName" });
  });
});
