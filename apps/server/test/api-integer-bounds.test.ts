import { MAX_COUNT, MAX_INSTANT } from "@belay/contract";
import { beforeAll, describe, expect, it } from "vitest";
import { ADMIN, harness, harnessFor, storeSnapshot } from "./helpers.js";
import { describeOnTargets, storeTargets } from "./store-targets.js";

// Integers past what a database column holds (a concurrency limit of 2^31, a delay past the
// last instant) are refused with 400 on every store, and the OpenAPI document states the bounds.

interface Case {
  readonly name: string;
  readonly method: string;
  readonly path: string;
  readonly body?: unknown;
  readonly field: string;
}

const CASES: readonly Case[] = [
  { name: "concurrency limit 2^31", method: "PUT", path: "/api/v1/queues/mail/concurrency-limit", body: { limit: 2 ** 31 }, field: "limit" },
  { name: "concurrency limit 2^53", method: "PUT", path: "/api/v1/queues/mail/concurrency-limit", body: { limit: 2 ** 53 }, field: "limit" },
  { name: "concurrency limit 1e308", method: "PUT", path: "/api/v1/queues/mail/concurrency-limit", body: { limit: 1e308 }, field: "limit" },
  { name: "delay past the last instant", method: "POST", path: "/api/v1/jobs", body: { jobs: [{ jobName: "raw.job", delayMs: MAX_INSTANT }] }, field: "jobs[0].delayMs" },
  { name: "delay 2^53", method: "POST", path: "/api/v1/jobs", body: { jobs: [{ jobName: "raw.job", delayMs: 2 ** 53 }] }, field: "jobs[0].delayMs" },
  { name: "page limit 2^31", method: "GET", path: "/api/v1/jobs?limit=2147483648", field: "limit" },
  { name: "page limit with 20 digits", method: "GET", path: "/api/v1/audit?limit=99999999999999999999", field: "limit" },
  { name: "facet max 2^31", method: "GET", path: "/api/v1/tags/facets?max=2147483648", field: "max" },
  { name: "suggestion max 2^31", method: "GET", path: "/api/v1/tags/suggestions?max=2147483648", field: "max" },
  { name: "page limit in exponent notation", method: "GET", path: "/api/v1/workflows?limit=1e3", field: "limit" },
];

describeOnTargets(await storeTargets("api-integer-bounds.test.ts"), "integers past a column's range", (store) => {
  const h = harnessFor(store, async (h) => {
    expect((await h.json("POST", "/api/v1/jobs", { token: ADMIN, body: { jobs: [{ id: "j1", jobName: "raw.job", queue: "mail" }] } })).status).toBe(201);
  });

  it.each(CASES.map((c) => [c.name, c] as const))("%s gets 400 naming the field", async (_name, c) => {
    const before = await storeSnapshot(store());
    const res = await h().request(c.method, c.path, { token: ADMIN, ...(c.body === undefined ? {} : { body: c.body }) });
    const body = (await res.json()) as { error: { code: string; field: string | null } };
    expect(res.status, JSON.stringify(body)).toBe(400);
    expect(body.error).toMatchObject({ code: "BELAY_INVALID_INPUT", field: c.field });
    expect(await storeSnapshot(store())).toEqual(before);
  });

  it("the largest concurrency limit a column holds is accepted", async () => {
    expect((await h().json("PUT", "/api/v1/queues/mail/concurrency-limit", { token: ADMIN, body: { limit: MAX_COUNT } })).status).toBe(200);
    expect((await store().listQueueSettings()).find((q) => q.queue === "mail")?.concurrencyLimit).toBe(MAX_COUNT);
  });
});

describe("the OpenAPI document states the integer bounds", () => {
  let doc: any;
  beforeAll(async () => {
    const h = await harness();
    doc = (await h.json("GET", "/api/v1/openapi.json")).body;
    await h.close();
  });
  const schema = (name: string) => doc.components.schemas[name];

  it("a concurrency limit is 1 to 2^31 − 1", () => {
    expect(schema("ConcurrencyLimitRequest").properties.limit).toMatchObject({ type: "integer", minimum: 1, maximum: MAX_COUNT });
  });

  it("delayMs and an epoch-milliseconds runAt end at the last instant", () => {
    const job = schema("EnqueueJob").properties;
    expect(job.delayMs).toMatchObject({ type: "integer", minimum: 0, maximum: MAX_INSTANT });
    const members = job.runAt.anyOf ?? job.runAt.oneOf;
    expect(members).toEqual(expect.arrayContaining([expect.objectContaining({ type: "integer", minimum: 0, maximum: MAX_INSTANT })]));
  });

  it("page sizes and maxima in queries are 1 to 2^31 − 1", () => {
    for (const [path, name] of [
      ["/jobs", "limit"],
      ["/audit", "limit"],
      ["/workflows", "limit"],
      ["/tags/facets", "max"],
      ["/tags/suggestions", "max"],
    ] as const) {
      const parameter = doc.paths[path].get.parameters.find((p: { name: string }) => p.name === name);
      expect(parameter.schema, `${path} ${name}`).toMatchObject({ type: "integer", minimum: 1, maximum: MAX_COUNT });
    }
  });
});
