import { MAX_INSTANT } from "@belay/contract";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADMIN, type Harness, harness, storeSnapshot } from "./helpers.js";

// A time is epoch milliseconds in [0, MAX_INSTANT] or strict ISO 8601 text
// (YYYY-MM-DDTHH:mm:ss[.fraction](Z|±HH:mm)), checked field by field: no loose parsing.

const REFUSED: readonly (readonly [string, unknown])[] = [
  ["the string 1", "1"],
  ["a number as text", "1700000000000"],
  ["February 31st", "2030-02-31T00:00:00Z"],
  ["February 29th of a common year", "2029-02-29T00:00:00Z"],
  ["month 13", "2030-13-01T00:00:00Z"],
  ["day 0", "2030-01-00T00:00:00Z"],
  ["hour 24", "2030-01-01T24:00:00Z"],
  ["minute 60", "2030-01-01T00:60:00Z"],
  ["a leap second", "2030-06-30T23:59:60Z"],
  ["an offset of 24 hours", "2030-01-01T00:00:00+24:00"],
  ["an offset of 60 minutes", "2030-01-01T00:00:00+01:60"],
  ["a date without a time", "2030-01-01"],
  ["a time without an offset", "2030-01-01T00:00:00"],
  ["a lower-case t", "2030-01-01t00:00:00Z"],
  ["a space for the T", "2030-01-01 00:00:00Z"],
  ["a free-form date", "Tue, 01 Jan 2030 00:00:00 GMT"],
  ["words", "next tuesday"],
  ["a trailing NUL", "2030-01-01T00:00:00Z\u0000"],
  ["a trailing space", "2030-01-01T00:00:00Z "],
  ["a five-digit year", "+10000-01-01T00:00:00Z"],
  ["before 1970", "1969-12-31T23:59:59Z"],
  ["before 1970 by its offset", "1970-01-01T00:30:00+01:00"],
  ["after the last instant by its offset", "9999-12-31T23:59:59-01:00"],
  ["epoch milliseconds past the last instant", MAX_INSTANT + 1],
  ["epoch milliseconds far past the last instant", 1e16],
  ["negative epoch milliseconds", -1],
  ["fractional epoch milliseconds", 1.5],
  ["a boolean", true],
];

const ACCEPTED: readonly (readonly [string, unknown, number])[] = [
  ["UTC", "2030-02-28T12:34:56Z", Date.UTC(2030, 1, 28, 12, 34, 56)],
  ["milliseconds", "2030-02-28T12:34:56.789Z", Date.UTC(2030, 1, 28, 12, 34, 56, 789)],
  ["a positive offset", "2030-01-01T02:00:00+02:00", Date.UTC(2030, 0, 1)],
  ["a negative offset", "2029-12-31T19:30:00-04:30", Date.UTC(2030, 0, 1)],
  ["a leap day", "2028-02-29T00:00:00Z", Date.UTC(2028, 1, 29)],
  ["microseconds (truncated to milliseconds)", "2030-01-01T00:00:00.123456Z", Date.UTC(2030, 0, 1, 0, 0, 0, 123)],
  ["the last instant", "9999-12-31T23:59:59.999Z", MAX_INSTANT],
  ["the first instant", "1970-01-01T00:00:00Z", 0],
  ["epoch milliseconds", 1_900_000_000_000, 1_900_000_000_000],
  ["the last instant in epoch milliseconds", MAX_INSTANT, MAX_INSTANT],
];

let h: Harness;
beforeAll(async () => {
  h = await harness();
});
afterAll(() => h.close());

describe("runAt is strict", () => {
  const routes = [
    ["POST /jobs", "/api/v1/jobs", (runAt: unknown) => ({ jobs: [{ jobName: "raw.job", runAt }] }), "jobs[0].runAt"],
    ["POST /workflows", "/api/v1/workflows", (runAt: unknown) => ({ name: "w", jobs: [{ jobName: "raw.job" }, { jobName: "raw.job", runAt }] }), "jobs[1].runAt"],
  ] as const;

  it.each(routes.flatMap(([route, path, body, field]) => REFUSED.map(([name, runAt]) => [`${route}: ${name}`, path, body(runAt), field] as const)))(
    "%s is refused",
    async (_name, path, body, field) => {
      const before = await storeSnapshot(h.store);
      const res = await h.json("POST", path, { token: ADMIN, body });
      expect(res.status, JSON.stringify(res.body)).toBe(400);
      expect(res.body.error).toMatchObject({ code: "BELAY_INVALID_INPUT", field });
      expect(await storeSnapshot(h.store)).toEqual(before);
    },
  );

  it.each(ACCEPTED.map(([name, runAt, at]) => [name, runAt, at] as const))("%s is accepted exactly", async (_name, runAt, at) => {
    const res = await h.json("POST", "/api/v1/jobs", { token: ADMIN, body: { jobs: [{ jobName: "raw.job", runAt }] } });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const job = await h.store.getJob(res.body.jobs[0].id);
    expect(job?.dueAt).toBe(at);
  });

  it("the OpenAPI document states the text form and the range", async () => {
    const doc = (await h.json("GET", "/api/v1/openapi.json")).body;
    const runAt = doc.components.schemas.EnqueueJob.properties.runAt;
    const members = runAt.anyOf ?? runAt.oneOf;
    const text = members.find((m: { type: string }) => m.type === "string");
    expect(text).toMatchObject({ format: "date-time" });
    expect(new RegExp(text.pattern).test("2030-01-01T00:00:00Z")).toBe(true);
    expect(new RegExp(text.pattern).test("1")).toBe(false);
    expect(members.find((m: { type: string }) => m.type === "integer")).toMatchObject({ minimum: 0, maximum: MAX_INSTANT });
  });
});
