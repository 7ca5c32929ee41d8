import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADMIN, type Harness, harness, storeSnapshot } from "./helpers.js";

// JSON nested thousands of levels deep is refused before it is parsed (422, the depth bound
// named), on every route that takes a body; a body over the size bound gets 413. Nothing written.

const deepArray = (depth: number) => `${"[".repeat(depth)}${"]".repeat(depth)}`;
const deepObject = (depth: number) => `${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`;

const ROUTES = [
  { method: "POST", path: "/api/v1/jobs", wrap: (v: string) => `{"jobs":[{"jobName":"raw.job","payload":${v}}]}` },
  { method: "POST", path: "/api/v1/workflows", wrap: (v: string) => `{"name":"w","jobs":[{"jobName":"raw.job","payload":${v}}]}` },
  { method: "PUT", path: "/api/v1/schedules/s2", wrap: (v: string) => `{"cron":"0 * * * *","jobName":"raw.job","payload":${v}}` },
  { method: "PUT", path: "/api/v1/queues/mail/concurrency-limit", wrap: (v: string) => `{"limit":${v}}` },
] as const;

let h: Harness;
let doc: { paths: Record<string, Record<string, { responses: Record<string, unknown> }>> };

beforeAll(async () => {
  h = await harness({ bodyLimitBytes: 1024 * 1024 });
  expect((await h.json("POST", "/api/v1/jobs", { token: ADMIN, body: { jobs: [{ id: "j1", jobName: "raw.job", queue: "mail" }] } })).status).toBe(201);
  doc = (await h.json("GET", "/api/v1/openapi.json")).body;
});
afterAll(() => h.close());

describe("deeply nested JSON is refused with the error shape before any work", () => {
  const table = ROUTES.flatMap((route) =>
    [
      ["arrays 5,000 deep", deepArray(5_000)],
      ["arrays 100,000 deep", deepArray(100_000)],
      ["objects 5,000 deep", deepObject(5_000)],
      ["arrays 5,000 deep, never closed", "[".repeat(5_000)],
    ].map(([name, value]) => [`${route.method} ${route.path}: ${name}`, route, value!] as const),
  );
  it.each(table)("%s", async (_name, route, value) => {
    const before = await storeSnapshot(h.store);
    const res = await h.request(route.method, route.path, { token: ADMIN, rawBody: route.wrap(value) });
    const body = (await res.json()) as { error: { code: string; field: string | null; message: string; bound?: string; limit?: number } };
    expect(res.status, JSON.stringify(body)).toBe(422);
    expect(body.error).toMatchObject({ code: "BELAY_BODY_TOO_DEEP", field: "body", bound: "jsonDepth", limit: 64 });
    expect(typeof body.error.message).toBe("string");
    expect(await storeSnapshot(h.store)).toEqual(before);
  });

  it("a payload nested within the bound is accepted", async () => {
    const res = await h.request("POST", "/api/v1/jobs", { token: ADMIN, rawBody: ROUTES[0].wrap(deepArray(60)) });
    expect(res.status).toBe(201);
  });

  it("brackets inside strings do not count as nesting", async () => {
    const res = await h.request("POST", "/api/v1/jobs", { token: ADMIN, rawBody: ROUTES[0].wrap(JSON.stringify("[{".repeat(5_000))) });
    expect(res.status).toBe(201);
  });

  it("a body over the size bound gets 413 naming the bound", async () => {
    const before = await storeSnapshot(h.store);
    const res = await h.request("POST", "/api/v1/jobs", { token: ADMIN, rawBody: ROUTES[0].wrap(JSON.stringify("x".repeat(1_100_000))) });
    const body = (await res.json()) as { error: Record<string, unknown> };
    expect(res.status).toBe(413);
    expect(body.error).toMatchObject({ code: "BELAY_BODY_TOO_LARGE", field: "body", bound: "bodyBytes", limit: 1024 * 1024 });
    expect(await storeSnapshot(h.store)).toEqual(before);
  });

  it.each(ROUTES.map((r) => [`${r.method} ${r.path}`] as const))("%s documents 413 and 422", (name) => {
    const [method, path] = name.split(" ") as [string, string];
    const template = path.replace("/api/v1", "").replace("/s2", "/{id}").replace("/mail/", "/{queue}/");
    expect(Object.keys(doc.paths[template]![method.toLowerCase()]!.responses)).toEqual(expect.arrayContaining(["413", "422"]));
  });
});
