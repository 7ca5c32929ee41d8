import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADMIN, type Harness, harness, storeSnapshot } from "./helpers.js";

// A body that is not JSON, on every route that takes one: 415 for a wrong or missing content
// type, 400 for text that does not parse, in the documented error shape, and nothing written.

const JSON_ROUTES = [
  { method: "POST", path: "/api/v1/jobs", doc: ["/jobs", "post"] },
  { method: "POST", path: "/api/v1/workflows", doc: ["/workflows", "post"] },
  { method: "PUT", path: "/api/v1/schedules/s1", doc: ["/schedules/{id}", "put"] },
  { method: "PUT", path: "/api/v1/queues/mail/concurrency-limit", doc: ["/queues/{queue}/concurrency-limit", "put"] },
] as const;

const VALID: Record<string, string> = {
  "/api/v1/jobs": JSON.stringify({ jobs: [{ jobName: "raw.job", queue: "mail" }] }),
  "/api/v1/workflows": JSON.stringify({ name: "w", jobs: [{ jobName: "raw.job" }] }),
  "/api/v1/schedules/s1": JSON.stringify({ cron: "0 * * * *", jobName: "raw.job" }),
  "/api/v1/queues/mail/concurrency-limit": JSON.stringify({ limit: 3 }),
};

function multipart(): { body: string; type: string } {
  const boundary = "----belay-test";
  return {
    body: `--${boundary}\r\nContent-Disposition: form-data; name="jobs"\r\n\r\n[]\r\n--${boundary}--\r\n`,
    type: `multipart/form-data; boundary=${boundary}`,
  };
}

interface BodyCase {
  readonly name: string;
  readonly status: 400 | 415;
  /** `null`: no content-type header at all. */
  readonly contentType: (path: string) => string | null;
  readonly body: (path: string) => BodyInit;
}

const CASES: readonly BodyCase[] = [
  // A Blob without a type makes a request without a content-type header.
  { name: "valid JSON without a content type", status: 415, contentType: () => null, body: (p) => new Blob([VALID[p]!]) },
  { name: "text/plain", status: 415, contentType: () => "text/plain", body: (p) => VALID[p]! },
  { name: "a form", status: 415, contentType: () => "application/x-www-form-urlencoded", body: () => "jobs=1&limit=2" },
  { name: "multipart", status: 415, contentType: () => multipart().type, body: () => multipart().body },
  { name: "XML", status: 415, contentType: () => "application/xml", body: () => "<jobs><job/></jobs>" },
  { name: "JSON in a charset other than UTF-8", status: 415, contentType: () => "application/json; charset=latin1", body: (p) => VALID[p]! },
  { name: "JSON that does not parse", status: 400, contentType: () => "application/json", body: () => "{nope" },
  { name: "an empty JSON body", status: 400, contentType: () => "application/json", body: () => "" },
  { name: "JSON followed by garbage", status: 400, contentType: () => "application/json", body: (p) => `${VALID[p]!}}` },
  { name: "bytes that are not UTF-8", status: 400, contentType: () => "application/json", body: () => new Uint8Array([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d]) },
];

let h: Harness;
let doc: { paths: Record<string, Record<string, { responses: Record<string, unknown> }>> };

beforeAll(async () => {
  h = await harness();
  expect((await h.json("POST", "/api/v1/jobs", { token: ADMIN, body: { jobs: [{ id: "j1", jobName: "raw.job", queue: "mail" }] } })).status).toBe(201);
  expect((await h.json("PUT", "/api/v1/schedules/s1", { token: ADMIN, body: { cron: "0 * * * *", jobName: "raw.job" } })).status).toBe(201);
  doc = (await h.json("GET", "/api/v1/openapi.json")).body;
});
afterAll(() => h.close());

describe("a body that is not JSON gets 415 or 400 with the error shape, and writes nothing", () => {
  const table = JSON_ROUTES.flatMap((route) => CASES.map((c) => [`${route.method} ${route.path}: ${c.name}`, route, c] as const));
  it.each(table)("%s", async (_name, route, c) => {
    const before = await storeSnapshot(h.store);
    const headers: Record<string, string> = { authorization: `Bearer ${ADMIN}` };
    const type = c.contentType(route.path);
    if (type !== null) headers["content-type"] = type;
    const res = await h.server.fetch(new Request(`http://belay.test${route.path}`, { method: route.method, headers, body: c.body(route.path) }));
    expect(res.headers.get("content-type")).toMatch(/^application\/json/);
    const body = (await res.json()) as { error: { code: string; field: string | null; message: string } };
    expect(res.status, JSON.stringify(body)).toBe(c.status);
    expect(body.error.code).toBe(c.status === 415 ? "BELAY_UNSUPPORTED_MEDIA_TYPE" : "BELAY_INVALID_INPUT");
    expect(body.error.field).toBe(c.status === 415 ? "content-type" : "body");
    expect(typeof body.error.message).toBe("string");
    expect(await storeSnapshot(h.store)).toEqual(before);
  });

  it.each(JSON_ROUTES.map((r) => [`${r.method} ${r.path}`, r] as const))("%s documents 400 and 415", (_name, route) => {
    const responses = doc.paths[route.doc[0]]![route.doc[1]]!.responses;
    expect(Object.keys(responses)).toEqual(expect.arrayContaining(["400", "415"]));
  });

  it("JSON with a +json media type and an explicit UTF-8 charset is read", async () => {
    const res = await h.request("PUT", "/api/v1/queues/mail/concurrency-limit", {
      token: ADMIN,
      rawBody: JSON.stringify({ limit: 4 }),
      headers: { "content-type": "application/merge-patch+json; charset=UTF-8" },
    });
    expect(res.status).toBe(200);
  });
});
