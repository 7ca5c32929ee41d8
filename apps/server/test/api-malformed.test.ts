import { MemoryStore } from "@belay/memory";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADMIN, type Harness, harness, storeSnapshot, welcome } from "./helpers.js";

// Every malformed or out-of-bound request gets a 4xx naming the field (and the limit and actual
// size for a bound), and writes nothing: the store reads the same before and after.

interface Case {
  readonly name: string;
  readonly method: string;
  readonly path: string;
  readonly body?: unknown;
  readonly rawBody?: string;
  readonly status: number;
  readonly code: string;
  readonly field?: string | null;
  readonly limit?: number;
  readonly actual?: number;
}

const job = (extra: Record<string, unknown> = {}) => ({ jobs: [{ jobName: "raw.job", queue: "raw", ...extra }] });
const long = (n: number) => "x".repeat(n);

const CASES: readonly Case[] = [
  // POST /jobs: shape
  { name: "body is not JSON", method: "POST", path: "/api/v1/jobs", rawBody: "{nope", status: 400, code: "BELAY_INVALID_INPUT", field: "body" },
  { name: "jobs missing", method: "POST", path: "/api/v1/jobs", body: {}, status: 400, code: "BELAY_INVALID_INPUT", field: "jobs" },
  { name: "jobs not an array", method: "POST", path: "/api/v1/jobs", body: { jobs: "j1" }, status: 400, code: "BELAY_INVALID_INPUT", field: "jobs" },
  { name: "jobs empty", method: "POST", path: "/api/v1/jobs", body: { jobs: [] }, status: 400, code: "BELAY_INVALID_INPUT", field: "jobs" },
  { name: "jobName missing", method: "POST", path: "/api/v1/jobs", body: { jobs: [{ payload: 1 }] }, status: 400, code: "BELAY_INVALID_INPUT", field: "jobs[0].jobName" },
  { name: "jobName a number", method: "POST", path: "/api/v1/jobs", body: { jobs: [{ jobName: 5 }] }, status: 400, code: "BELAY_INVALID_INPUT", field: "jobs[0].jobName" },
  { name: "jobName empty", method: "POST", path: "/api/v1/jobs", body: job({ jobName: "" }), status: 400, code: "BELAY_INVALID_INPUT", field: "jobs[0].jobName" },
  { name: "unknown field", method: "POST", path: "/api/v1/jobs", body: job({ colour: "red" }), status: 400, code: "BELAY_INVALID_INPUT", field: "jobs[0].colour" },
  { name: "id a number", method: "POST", path: "/api/v1/jobs", body: job({ id: 12 }), status: 400, code: "BELAY_INVALID_INPUT", field: "jobs[0].id" },
  { name: "id empty", method: "POST", path: "/api/v1/jobs", body: job({ id: "" }), status: 400, code: "BELAY_INVALID_INPUT", field: "jobs[0].id" },
  { name: "queue empty", method: "POST", path: "/api/v1/jobs", body: job({ queue: "" }), status: 400, code: "BELAY_INVALID_INPUT", field: "jobs[0].queue" },
  { name: "delayMs negative", method: "POST", path: "/api/v1/jobs", body: job({ delayMs: -5 }), status: 400, code: "BELAY_INVALID_INPUT", field: "jobs[0].delayMs" },
  { name: "delayMs fractional", method: "POST", path: "/api/v1/jobs", body: job({ delayMs: 1.5 }), status: 400, code: "BELAY_INVALID_INPUT", field: "jobs[0].delayMs" },
  { name: "runAt not a time", method: "POST", path: "/api/v1/jobs", body: job({ runAt: "yesterday" }), status: 400, code: "BELAY_INVALID_INPUT", field: "jobs[0].runAt" },
  { name: "runAt and delayMs", method: "POST", path: "/api/v1/jobs", body: job({ runAt: 0, delayMs: 5 }), status: 400, code: "BELAY_INVALID_INPUT", field: "jobs[0].runAt" },
  { name: "tags a string", method: "POST", path: "/api/v1/jobs", body: job({ tags: "urgent" }), status: 400, code: "BELAY_INVALID_INPUT", field: "jobs[0].tags" },
  { name: "tag empty", method: "POST", path: "/api/v1/jobs", body: job({ tags: [""] }), status: 400, code: "BELAY_INVALID_INPUT", field: "jobs[0].tags[0]" },
  { name: "keyed tag without value", method: "POST", path: "/api/v1/jobs", body: job({ tags: ["tenant="] }), status: 400, code: "BELAY_INVALID_INPUT", field: "jobs[0].tags[0].value" },
  { name: "dependencyMode unknown", method: "POST", path: "/api/v1/jobs", body: job({ dependencyMode: "whenever" }), status: 400, code: "BELAY_INVALID_INPUT", field: "jobs[0].dependencyMode" },
  { name: "parents not an array", method: "POST", path: "/api/v1/jobs", body: job({ parents: "j1" }), status: 400, code: "BELAY_INVALID_INPUT", field: "jobs[0].parents" },
  { name: "own parent", method: "POST", path: "/api/v1/jobs", body: job({ id: "me", parents: ["me"] }), status: 400, code: "BELAY_INVALID_INPUT", field: "jobs[0].parents[0]" },
  { name: "traceContext a number", method: "POST", path: "/api/v1/jobs", body: job({ traceContext: 1 }), status: 400, code: "BELAY_INVALID_INPUT", field: "jobs[0].traceContext" },
  // POST /jobs: bounds and references
  { name: "payload over 64 KiB", method: "POST", path: "/api/v1/jobs", body: job({ payload: long(70_000) }), status: 413, code: "BELAY_PAYLOAD_TOO_LARGE", field: "jobs[0].payload", limit: 65_536, actual: 70_002 },
  {
    name: "second job's payload over 64 KiB (the first is not written either)",
    method: "POST",
    path: "/api/v1/jobs",
    body: { jobs: [{ id: "first", jobName: "raw.job" }, { jobName: "raw.job", payload: { blob: long(66_000) } }] },
    status: 413,
    code: "BELAY_PAYLOAD_TOO_LARGE",
    field: "jobs[1].payload",
    limit: 65_536,
  },
  { name: "request body over the server's limit", method: "POST", path: "/api/v1/jobs", rawBody: JSON.stringify(job({ payload: long(300_000) })), status: 413, code: "BELAY_BODY_TOO_LARGE", field: "body", limit: 262_144 },
  { name: "job name over 128", method: "POST", path: "/api/v1/jobs", body: job({ jobName: long(129) }), status: 422, code: "BELAY_JOB_NAME_TOO_LONG", field: "jobs[0].jobName", limit: 128, actual: 129 },
  { name: "id over 128", method: "POST", path: "/api/v1/jobs", body: job({ id: long(200) }), status: 422, code: "BELAY_ID_TOO_LONG", field: "jobs[0].id", limit: 128, actual: 200 },
  { name: "queue over 128", method: "POST", path: "/api/v1/jobs", body: job({ queue: long(130) }), status: 422, code: "BELAY_QUEUE_NAME_TOO_LONG", field: "jobs[0].queue", limit: 128, actual: 130 },
  {
    name: "17 parents",
    method: "POST",
    path: "/api/v1/jobs",
    body: job({ parents: Array.from({ length: 17 }, (_, i) => `p${i}`) }),
    status: 422,
    code: "BELAY_TOO_MANY_PARENTS",
    field: "jobs[0].parents",
    limit: 16,
    actual: 17,
  },
  { name: "unknown parent", method: "POST", path: "/api/v1/jobs", body: job({ parents: ["ghost"] }), status: 422, code: "BELAY_UNKNOWN_PARENT", field: "jobs[0].parents" },
  { name: "33 tags", method: "POST", path: "/api/v1/jobs", body: job({ tags: Array.from({ length: 33 }, (_, i) => `t${i}`) }), status: 422, code: "BELAY_TOO_MANY_TAGS", field: "jobs[0].tags", limit: 32, actual: 33 },
  { name: "tag value over 256", method: "POST", path: "/api/v1/jobs", body: job({ tags: [`k=${long(257)}`] }), status: 422, code: "BELAY_TAG_TOO_LONG", field: "jobs[0].tags[0].value", limit: 256, actual: 257 },
  { name: "trace context over 512", method: "POST", path: "/api/v1/jobs", body: job({ traceContext: long(513) }), status: 422, code: "BELAY_TRACE_CONTEXT_TOO_LONG", field: "jobs[0].traceContext", limit: 512, actual: 513 },
  {
    name: "batch over enqueueBatch",
    method: "POST",
    path: "/api/v1/jobs",
    body: { jobs: Array.from({ length: 51 }, () => ({ jobName: "raw.job" })) },
    status: 422,
    code: "BELAY_BATCH_TOO_LARGE",
    field: "jobs",
    limit: 50,
    actual: 51,
  },
  // POST /jobs with a known job type
  { name: "payload its schema rejects", method: "POST", path: "/api/v1/jobs", body: { jobs: [{ jobName: "email.welcome", payload: { userId: "" } }] }, status: 400, code: "BELAY_PAYLOAD_INVALID", field: "jobs[0].payload.userId" },
  { name: "payload missing for a schema", method: "POST", path: "/api/v1/jobs", body: { jobs: [{ jobName: "email.welcome" }] }, status: 400, code: "BELAY_PAYLOAD_INVALID", field: "jobs[0].payload" },
  // POST /workflows
  { name: "workflow without name", method: "POST", path: "/api/v1/workflows", body: { jobs: [{ jobName: "raw.job" }] }, status: 400, code: "BELAY_INVALID_INPUT", field: "name" },
  { name: "workflow without jobs", method: "POST", path: "/api/v1/workflows", body: { name: "w", jobs: [] }, status: 400, code: "BELAY_INVALID_INPUT", field: "jobs" },
  { name: "workflow name empty", method: "POST", path: "/api/v1/workflows", body: { name: "", jobs: [{ jobName: "raw.job" }] }, status: 400, code: "BELAY_INVALID_INPUT", field: "name" },
  {
    name: "workflow repeats a member id",
    method: "POST",
    path: "/api/v1/workflows",
    body: { name: "w", jobs: [{ id: "m", jobName: "raw.job" }, { id: "m", jobName: "raw.job" }] },
    status: 400,
    code: "BELAY_INVALID_INPUT",
    field: "jobs[1].id",
  },
  { name: "workflow member id taken", method: "POST", path: "/api/v1/workflows", body: { name: "w", jobs: [{ id: "j1", jobName: "raw.job" }] }, status: 409, code: "BELAY_JOB_EXISTS", field: "jobs[0].id" },
  { name: "workflow member over a bound", method: "POST", path: "/api/v1/workflows", body: { name: "w", jobs: [{ jobName: "raw.job", payload: long(70_000) }] }, status: 413, code: "BELAY_PAYLOAD_TOO_LARGE", field: "jobs[0].payload" },
  // GET /jobs and other listings
  { name: "unknown state", method: "GET", path: "/api/v1/jobs?state=finished", status: 400, code: "BELAY_INVALID_INPUT", field: "state" },
  { name: "limit 0", method: "GET", path: "/api/v1/jobs?limit=0", status: 400, code: "BELAY_INVALID_INPUT", field: "limit" },
  { name: "limit not a number", method: "GET", path: "/api/v1/jobs?limit=ten", status: 400, code: "BELAY_INVALID_INPUT", field: "limit" },
  { name: "limit over monitorPage", method: "GET", path: "/api/v1/jobs?limit=201", status: 422, code: "BELAY_PAGE_TOO_LARGE", field: "limit", limit: 200, actual: 201 },
  { name: "forged cursor", method: "GET", path: "/api/v1/jobs?after=not-a-cursor", status: 400, code: "BELAY_INVALID_INPUT", field: "after" },
  { name: "unknown order", method: "GET", path: "/api/v1/jobs?order=sideways", status: 400, code: "BELAY_INVALID_INPUT", field: "order" },
  { name: "tag without key", method: "GET", path: "/api/v1/jobs?tag=%3Dacme", status: 400, code: "BELAY_INVALID_INPUT", field: "tag" },
  { name: "sensitive flag not a boolean", method: "GET", path: "/api/v1/jobs/j1?sensitive=maybe", status: 400, code: "BELAY_INVALID_INPUT", field: "sensitive" },
  { name: "audit cursor forged", method: "GET", path: "/api/v1/audit?after=zzz", status: 400, code: "BELAY_INVALID_INPUT", field: "after" },
  { name: "audit page too large", method: "GET", path: "/api/v1/audit?limit=1000", status: 422, code: "BELAY_PAGE_TOO_LARGE", field: "limit", limit: 200, actual: 1000 },
  { name: "audit target kind unknown", method: "GET", path: "/api/v1/audit?targetKind=planet", status: 400, code: "BELAY_INVALID_INPUT", field: "targetKind" },
  { name: "workflow cursor forged", method: "GET", path: "/api/v1/workflows?after=%25%25", status: 400, code: "BELAY_INVALID_INPUT", field: "after" },
  { name: "suggestion max 0", method: "GET", path: "/api/v1/tags/suggestions?max=0", status: 400, code: "BELAY_INVALID_INPUT", field: "max" },
  { name: "suggestion cursor forged", method: "GET", path: "/api/v1/tags/suggestions?after=abc", status: 400, code: "BELAY_INVALID_INPUT", field: "after" },
  { name: "facet over an unknown state", method: "GET", path: "/api/v1/tags/facets?state=done", status: 400, code: "BELAY_INVALID_INPUT", field: "state" },
  // unknown targets and state conflicts
  { name: "unknown job", method: "GET", path: "/api/v1/jobs/ghost", status: 404, code: "BELAY_NOT_FOUND", field: "id" },
  { name: "cancel an unknown job", method: "POST", path: "/api/v1/jobs/ghost/cancel", status: 404, code: "BELAY_NOT_FOUND", field: "id" },
  { name: "cancel a dead-lettered job", method: "POST", path: "/api/v1/jobs/dl/cancel", status: 409, code: "BELAY_NOT_CANCELLABLE", field: "id" },
  { name: "requeue a scheduled job", method: "POST", path: "/api/v1/jobs/j1/requeue", status: 409, code: "BELAY_NOT_REQUEUEABLE", field: "id" },
  { name: "requeue an unknown job", method: "POST", path: "/api/v1/jobs/ghost/requeue", status: 404, code: "BELAY_NOT_FOUND", field: "id" },
  { name: "cancel with an id over 128", method: "POST", path: `/api/v1/jobs/${long(129)}/cancel`, status: 422, code: "BELAY_ID_TOO_LONG", field: "id", limit: 128, actual: 129 },
  { name: "pause an unknown queue", method: "POST", path: "/api/v1/queues/ghost/pause", status: 404, code: "BELAY_NOT_FOUND", field: "queue" },
  { name: "limit an unknown queue", method: "PUT", path: "/api/v1/queues/ghost/concurrency-limit", body: { limit: 2 }, status: 404, code: "BELAY_NOT_FOUND", field: "queue" },
  { name: "limit 0", method: "PUT", path: "/api/v1/queues/mail/concurrency-limit", body: { limit: 0 }, status: 400, code: "BELAY_INVALID_INPUT", field: "limit" },
  { name: "limit a string", method: "PUT", path: "/api/v1/queues/mail/concurrency-limit", body: { limit: "3" }, status: 400, code: "BELAY_INVALID_INPUT", field: "limit" },
  { name: "limit missing", method: "PUT", path: "/api/v1/queues/mail/concurrency-limit", body: {}, status: 400, code: "BELAY_INVALID_INPUT", field: "limit" },
  { name: "trigger an unknown schedule", method: "POST", path: "/api/v1/schedules/ghost/trigger", status: 404, code: "BELAY_NOT_FOUND", field: "id" },
  { name: "remove an unknown schedule", method: "DELETE", path: "/api/v1/schedules/ghost", status: 404, code: "BELAY_NOT_FOUND", field: "id" },
  // PUT /schedules/:id
  ...scheduleCases(),
];

function scheduleCases(): Case[] {
  const base = { cron: "0 * * * *", jobName: "raw.job", queue: "raw" };
  const put = (name: string, body: unknown, status: number, code: string, field: string, extra: Partial<Case> = {}): Case => ({
    name,
    method: "PUT",
    path: "/api/v1/schedules/s2",
    body,
    status,
    code,
    field,
    ...extra,
  });
  return [
    put("cron not a cron", { ...base, cron: "every day" }, 400, "BELAY_INVALID_INPUT", "cron"),
    put("cron with 7 fields", { ...base, cron: "* * * * * * *" }, 400, "BELAY_INVALID_INPUT", "cron"),
    put("cron out of range", { ...base, cron: "61 * * * *" }, 400, "BELAY_INVALID_INPUT", "cron"),
    put("cron empty", { ...base, cron: "" }, 400, "BELAY_INVALID_INPUT", "cron"),
    put("cron missing", { jobName: "raw.job" }, 400, "BELAY_INVALID_INPUT", "cron"),
    put("unknown time zone", { ...base, timeZone: "Mars/Olympus_Mons" }, 400, "BELAY_INVALID_INPUT", "timeZone"),
    put("jobName missing", { cron: "0 * * * *" }, 400, "BELAY_INVALID_INPUT", "jobName"),
    put("catchUp unknown", { ...base, catchUp: "always" }, 400, "BELAY_INVALID_INPUT", "catchUp"),
    put("noOverlap a string", { ...base, noOverlap: "yes" }, 400, "BELAY_INVALID_INPUT", "noOverlap"),
    put("unknown field", { ...base, every: "hour" }, 400, "BELAY_INVALID_INPUT", "every"),
    put("payload over 64 KiB", { ...base, payload: long(70_000) }, 413, "BELAY_PAYLOAD_TOO_LARGE", "payload", { limit: 65_536, actual: 70_002 }),
    put("queue over 128", { ...base, queue: long(129) }, 422, "BELAY_QUEUE_NAME_TOO_LONG", "queue", { limit: 128, actual: 129 }),
    put("payload its schema rejects", { cron: "0 * * * *", jobName: "email.welcome", payload: { userId: 3 } }, 400, "BELAY_PAYLOAD_INVALID", "payload.userId"),
    {
      name: "schedule id over the minted-id room",
      method: "PUT",
      path: `/api/v1/schedules/${long(104)}`,
      body: base,
      status: 422,
      code: "BELAY_ID_TOO_LONG",
      field: "id",
      limit: 103,
      actual: 104,
    },
  ];
}

let h: Harness;

beforeAll(async () => {
  // The catalog knows email.welcome (with a schema) and raw.job (without one, queue "raw").
  h = await harness({ store: new MemoryStore({ bounds: { enqueueBatch: 50 } }), bodyLimitBytes: 262_144, jobs: [welcome, rawJob()] });
  const seed = await h.json("POST", "/api/v1/jobs", {
    token: ADMIN,
    body: { jobs: [{ id: "j1", jobName: "raw.job", queue: "mail", tags: ["urgent"] }, { id: "dl", jobName: "raw.job", queue: "dead" }] },
  });
  expect(seed.status).toBe(201);
  const now = Date.now() + 1_000;
  await h.store.claim({ workerId: "w", queues: ["dead"], max: 1, leaseMs: 60_000, now });
  await h.store.reportOutcomes({ reports: [{ jobId: "dl", workerId: "w", attempt: 1, outcome: { type: "failed", retryAt: null, failureDetail: "x" } }], now });
  expect((await h.json("PUT", "/api/v1/schedules/s1", { token: ADMIN, body: { cron: "0 * * * *", jobName: "raw.job" } })).status).toBe(201);
  expect((await h.json("POST", "/api/v1/queues/mail/pause", { token: ADMIN })).status).toBe(200);
});
afterAll(() => h.close());

function rawJob() {
  // A job type without a schema: any payload, queue "raw".
  return { ...welcome, name: "raw.job", queue: "raw", schema: undefined, tags: [] };
}

describe("malformed and out-of-bound requests get a 4xx naming the field and write nothing", () => {
  it.each(CASES.map((c) => [c.name, c] as const))("%s", async (_name, c) => {
    const before = await storeSnapshot(h.store);
    const res = await h.request(c.method, c.path, {
      token: ADMIN,
      ...(c.rawBody !== undefined ? { rawBody: c.rawBody } : c.body !== undefined ? { body: c.body } : {}),
    });
    const body = (await res.json()) as { error: Record<string, unknown> };
    expect(res.status, JSON.stringify(body)).toBe(c.status);
    expect(body.error.code).toBe(c.code);
    if (c.field !== undefined) expect(body.error.field).toBe(c.field);
    if (c.limit !== undefined) expect(body.error.limit).toBe(c.limit);
    if (c.actual !== undefined) expect(body.error.actual).toBe(c.actual);
    expect(typeof body.error.message).toBe("string");
    expect(await storeSnapshot(h.store)).toEqual(before);
  });

  it("the table covers every route that takes input", () => {
    const covered = new Set(CASES.map((c) => `${c.method} ${c.path.split("?")[0]!.replace(/\/(j1|dl|ghost|s2|mail|x{104,})(?=\/|$)/g, "/:x")}`));
    for (const route of [
      "POST /api/v1/jobs",
      "GET /api/v1/jobs",
      "POST /api/v1/workflows",
      "GET /api/v1/audit",
      "GET /api/v1/workflows",
      "GET /api/v1/tags/suggestions",
      "GET /api/v1/tags/facets",
      "PUT /api/v1/schedules/:x",
      "PUT /api/v1/queues/:x/concurrency-limit",
      "POST /api/v1/queues/:x/pause",
      "POST /api/v1/jobs/:x/cancel",
      "POST /api/v1/jobs/:x/requeue",
      "POST /api/v1/schedules/:x/trigger",
      "DELETE /api/v1/schedules/:x",
    ]) {
      expect(covered, route).toContain(route);
    }
  });
});
