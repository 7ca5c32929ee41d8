import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADMIN, type Harness, harness, storeSnapshot } from "./helpers.js";

// A tag in text is "label" or "key=value" ("key=*" in a filter): "=v", "k=", "=" and "" are
// malformed, wherever tags are read from text (bodies and query filters), and are refused
// instead of being stored as something else (a "=v" used to become the label "v").

let h: Harness;
beforeAll(async () => {
  h = await harness();
  const seed = await h.json("POST", "/api/v1/jobs", { token: ADMIN, body: { jobs: [{ id: "j1", jobName: "raw.job", tags: ["v", "k=v"] }] } });
  expect(seed.status).toBe(201);
});
afterAll(() => h.close());

const MALFORMED = [
  ["=v", "[0]"],
  ["=", "[0]"],
  ["", "[0]"],
  ["k=", "[0].value"],
] as const;

describe("malformed tags in bodies are refused", () => {
  const routes = [
    ["POST /jobs", "POST", "/api/v1/jobs", (tag: string) => ({ jobs: [{ jobName: "raw.job", tags: ["ok", tag] }] }), "jobs[0].tags"],
    ["POST /workflows", "POST", "/api/v1/workflows", (tag: string) => ({ name: "w", jobs: [{ jobName: "raw.job", tags: [tag] }] }), "jobs[0].tags"],
    ["PUT /schedules/:id", "PUT", "/api/v1/schedules/s1", (tag: string) => ({ cron: "0 * * * *", jobName: "raw.job", tags: [tag] }), "tags"],
  ] as const;
  it.each(routes.flatMap(([route, method, path, body, field]) => MALFORMED.map(([tag, at]) => [`${route}: ${JSON.stringify(tag)}`, method, path, body(tag), field, tag, at] as const)))(
    "%s",
    async (_name, method, path, body, field, _tag, at) => {
      const before = await storeSnapshot(h.store);
      const res = await h.json(method, path, { token: ADMIN, body });
      expect(res.status, JSON.stringify(res.body)).toBe(400);
      expect(typeof res.body.error.message).toBe("string");
      // POST /jobs puts the malformed tag second.
      const index = path === "/api/v1/jobs" ? at.replace("[0]", "[1]") : at;
      expect(res.body.error).toMatchObject({ code: "BELAY_INVALID_INPUT", field: `${field}${index}` });
      expect(await storeSnapshot(h.store)).toEqual(before);
    },
  );

  it("a value may hold = and a label may be *", async () => {
    const res = await h.json("POST", "/api/v1/jobs", { token: ADMIN, body: { jobs: [{ id: "j2", jobName: "raw.job", tags: ["url=a=b", "*"] }] } });
    expect(res.status).toBe(201);
    expect((await h.store.getJob("j2"))?.tags).toEqual([
      { key: "url", value: "a=b" },
      { key: "", value: "*" },
    ]);
  });
});

describe("malformed tags in query filters are refused", () => {
  it.each([
    ["/api/v1/jobs?tag=%3Dv"],
    ["/api/v1/jobs?tag=k%3D"],
    ["/api/v1/jobs?tag=%3D"],
    ["/api/v1/jobs?tag="],
    ["/api/v1/jobs?tag=v,"],
    ["/api/v1/jobs?tag=v&tag="],
    ["/api/v1/tags/facets?tag=%3Dv"],
    ["/api/v1/tags/facets?tag="],
  ])("%s gets 400 naming tag", async (path) => {
    const res = await h.json("GET", path);
    expect(res.status, JSON.stringify(res.body)).toBe(400);
    expect(res.body.error).toMatchObject({ code: "BELAY_INVALID_INPUT", field: expect.stringMatching(/^tag/) });
  });

  it("well-formed filters still work", async () => {
    for (const [path, count] of [
      ["/api/v1/jobs?tag=v", 1],
      ["/api/v1/jobs?tag=k%3Dv", 1],
      ["/api/v1/jobs?tag=k%3D*", 1],
      ["/api/v1/jobs?tag=v,k%3Dv", 1],
    ] as const) {
      const res = await h.json("GET", path);
      expect(res.status, path).toBe(200);
      expect(res.body.jobs.length, path).toBe(count);
    }
  });
});
