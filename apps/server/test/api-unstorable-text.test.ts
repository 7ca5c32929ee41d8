import { expect, it } from "vitest";
import { ADMIN, harnessFor, storeSnapshot } from "./helpers.js";
import { describeOnTargets, storeTargets } from "./store-targets.js";

// Text no store holds faithfully (NUL, lone UTF-16 surrogates) is refused with 400 naming the
// request's own field, wherever it comes in (path, query, body), on SQLite and PostgreSQL alike,
// also for anonymous reads; it is never stored rewritten, and never a 500.

const NUL = "\u0000";
const LONE = "\ud800";

interface Case {
  readonly name: string;
  readonly method: string;
  readonly path: string;
  readonly body?: unknown;
  /** Anonymous unless set. */
  readonly token?: string;
  readonly field: string;
}

const job = (extra: Record<string, unknown>) => ({ jobs: [{ jobName: "raw.job", queue: "mail", ...extra }] });
const schedule = (extra: Record<string, unknown>) => ({ cron: "0 * * * *", jobName: "raw.job", ...extra });

const PATH_CASES: Case[] = [
  { name: "job id", method: "GET", path: "/api/v1/jobs/a%00b", field: "id" },
  { name: "job id (dependencies)", method: "GET", path: "/api/v1/jobs/a%00/dependencies", field: "id" },
  { name: "job id (cancel)", method: "POST", path: "/api/v1/jobs/a%00/cancel", token: ADMIN, field: "id" },
  { name: "job id (requeue)", method: "POST", path: "/api/v1/jobs/%00/requeue", token: ADMIN, field: "id" },
  { name: "workflow id", method: "GET", path: "/api/v1/workflows/w%00", field: "id" },
  { name: "queue", method: "GET", path: "/api/v1/queues/mail%00", field: "queue" },
  { name: "queue (pause)", method: "POST", path: "/api/v1/queues/mail%00/pause", token: ADMIN, field: "queue" },
  { name: "queue (resume)", method: "POST", path: "/api/v1/queues/mail%00/resume", token: ADMIN, field: "queue" },
  { name: "queue (limit)", method: "PUT", path: "/api/v1/queues/mail%00/concurrency-limit", token: ADMIN, body: { limit: 2 }, field: "queue" },
  { name: "schedule id", method: "GET", path: "/api/v1/schedules/s1%00", field: "id" },
  { name: "schedule id (define)", method: "PUT", path: "/api/v1/schedules/s%00", token: ADMIN, body: schedule({}), field: "id" },
  { name: "schedule id (remove)", method: "DELETE", path: "/api/v1/schedules/s1%00", token: ADMIN, field: "id" },
  { name: "schedule id (trigger)", method: "POST", path: "/api/v1/schedules/s1%00/trigger", token: ADMIN, field: "id" },
  { name: "observer id", method: "GET", path: "/api/v1/observers/o%00", field: "id" },
];

const QUERY_CASES: Case[] = [
  ...["queue", "jobName", "tag", "scheduleId", "workflowId", "after"].map((key) => ({
    name: `jobs filter ${key}`,
    method: "GET",
    path: `/api/v1/jobs?${key}=a%00`,
    field: key,
  })),
  { name: "jobs filter keyed tag value", method: "GET", path: "/api/v1/jobs?tag=tenant%3Dacme%00", field: "tag" },
  { name: "jobs filter keyed tag key", method: "GET", path: "/api/v1/jobs?tag=ten%00ant%3D*", field: "tag" },
  { name: "jobs filter second queue", method: "GET", path: "/api/v1/jobs?queue=mail&queue=a%00", field: "queue[1]" },
  ...["queue", "jobName", "tag", "scheduleId", "workflowId", "key"].map((key) => ({
    name: `facets ${key}`,
    method: "GET",
    path: `/api/v1/tags/facets?${key}=a%00`,
    field: key,
  })),
  ...["prefix", "key", "after"].map((key) => ({ name: `suggestions ${key}`, method: "GET", path: `/api/v1/tags/suggestions?${key}=a%00`, field: key })),
  { name: "audit target", method: "GET", path: "/api/v1/audit?target=mail%00", field: "target" },
  { name: "audit cursor", method: "GET", path: "/api/v1/audit?after=%00", field: "after" },
  { name: "workflows cursor", method: "GET", path: "/api/v1/workflows?after=%00", field: "after" },
];

const BODY_CASES: Case[] = [NUL, LONE].flatMap((bad) => {
  const label = bad === NUL ? "NUL" : "a lone surrogate";
  const cases: Omit<Case, "token">[] = [
    { name: "job id", method: "POST", path: "/api/v1/jobs", body: job({ id: `j${bad}` }), field: "jobs[0].id" },
    { name: "job name", method: "POST", path: "/api/v1/jobs", body: job({ jobName: `raw${bad}` }), field: "jobs[0].jobName" },
    { name: "queue", method: "POST", path: "/api/v1/jobs", body: job({ queue: `mail${bad}` }), field: "jobs[0].queue" },
    { name: "parent", method: "POST", path: "/api/v1/jobs", body: job({ parents: [`j1${bad}`] }), field: "jobs[0].parents[0]" },
    { name: "label", method: "POST", path: "/api/v1/jobs", body: job({ tags: [`urgent${bad}`] }), field: "jobs[0].tags[0]" },
    { name: "tag key", method: "POST", path: "/api/v1/jobs", body: job({ tags: [`ten${bad}ant=acme`] }), field: "jobs[0].tags[0]" },
    { name: "tag value", method: "POST", path: "/api/v1/jobs", body: job({ tags: [`tenant=acme${bad}`] }), field: "jobs[0].tags[0]" },
    { name: "trace context", method: "POST", path: "/api/v1/jobs", body: job({ traceContext: `00-${bad}` }), field: "jobs[0].traceContext" },
    { name: "second job's id", method: "POST", path: "/api/v1/jobs", body: { jobs: [{ jobName: "raw.job" }, { id: bad, jobName: "raw.job" }] }, field: "jobs[1].id" },
    { name: "workflow id", method: "POST", path: "/api/v1/workflows", body: { id: `w${bad}`, name: "w", jobs: [{ jobName: "raw.job" }] }, field: "id" },
    { name: "workflow name", method: "POST", path: "/api/v1/workflows", body: { name: `w${bad}`, jobs: [{ jobName: "raw.job" }] }, field: "name" },
    { name: "workflow member", method: "POST", path: "/api/v1/workflows", body: { name: "w", jobs: [{ jobName: `raw${bad}` }] }, field: "jobs[0].jobName" },
    { name: "schedule cron", method: "PUT", path: "/api/v1/schedules/s2", body: schedule({ cron: `0 * * * *${bad}` }), field: "cron" },
    { name: "schedule time zone", method: "PUT", path: "/api/v1/schedules/s2", body: schedule({ timeZone: `UTC${bad}` }), field: "timeZone" },
    { name: "schedule job name", method: "PUT", path: "/api/v1/schedules/s2", body: schedule({ jobName: `raw${bad}` }), field: "jobName" },
    { name: "schedule queue", method: "PUT", path: "/api/v1/schedules/s2", body: schedule({ queue: `q${bad}` }), field: "queue" },
    { name: "schedule tag", method: "PUT", path: "/api/v1/schedules/s2", body: schedule({ tags: [`t${bad}`] }), field: "tags[0]" },
  ];
  return cases.map((c) => ({ ...c, name: `${label} in the ${c.name}`, token: ADMIN }));
});

const DASHBOARD_PATHS = [
  "/jobs/a%00b",
  "/jobs?queue=a%00",
  "/jobs?tag=a%00",
  "/jobs?scheduleId=%00",
  "/workflows?after=%00",
  "/audit?after=%00",
  "/failures?after=%00",
  "/tags/suggest?prefix=a%00",
  "/tags/suggest?key=a%00",
];

describeOnTargets(await storeTargets("api-unstorable-text.test.ts"), "unstorable text", (store) => {
  const h = harnessFor(store, async (h) => {
    const seed = await h.json("POST", "/api/v1/jobs", { token: ADMIN, body: { jobs: [{ id: "j1", jobName: "raw.job", queue: "mail", tags: ["urgent"] }] } });
    expect(seed.status).toBe(201);
    expect((await h.json("PUT", "/api/v1/schedules/s1", { token: ADMIN, body: schedule({}) })).status).toBe(201);
  });

  it.each([...PATH_CASES, ...QUERY_CASES, ...BODY_CASES].map((c) => [c.name, c] as const))("%s gets 400 naming the field", async (_name, c) => {
    const before = await storeSnapshot(store());
    const res = await h().request(c.method, c.path, { ...(c.token === undefined ? {} : { token: c.token }), ...(c.body === undefined ? {} : { body: c.body }) });
    const body = (await res.json()) as { error: { code: string; field: string | null; message: string } };
    expect(res.status, JSON.stringify(body)).toBe(400);
    expect(body.error.code).toBe("BELAY_INVALID_INPUT");
    expect(body.error.field).toBe(c.field);
    expect(body.error.message).toMatch(/NUL|surrogate/);
    expect(await storeSnapshot(store())).toEqual(before);
  });

  it.each(DASHBOARD_PATHS.map((p) => [p] as const))("dashboard %s gets a 4xx, not a 500", async (path) => {
    const res = await h().request("GET", path);
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.status).toBeLessThan(500);
  });

  it("a dashboard action on a NUL id gets a 4xx and changes nothing", async () => {
    const before = await storeSnapshot(store());
    const res = await h().request("POST", "/actions/jobs/j1%00/cancel", { rawBody: "_csrf=x&_confirmed=1", headers: { "content-type": "application/x-www-form-urlencoded" } });
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.status).toBeLessThan(500);
    expect(await storeSnapshot(store())).toEqual(before);
  });
});
