import { describe, expect, it } from "vitest";
import { toClaimed, toRecord, toSummary } from "./sql/jobs.js";

// Decoding needs no server: a row as the driver returns it (keys as text, instants as numbers).
const row = {
  seq: 7, id: "job-1", job_name: "email.send", queue: "default", state: 2, due_at: 1_000, attempt: 1, releases: 0,
  lease_owner: "w1", lease_expires_at: 31_000, cancel_requested_by: null, enqueued_at: 900, terminal_at: null,
  terminal_cause: null, parent_ids: null, dependency_mode: 0, tags: null, trace_context: null, schedule_id: null,
  workflow_id: null, retry: null, payload: "{}",
};

describe("SQL Server row decoding", () => {
  it("gives a summary's keys in the order every store gives them", () => {
    expect(Object.keys(toSummary(row))).toEqual([
      "id", "seq", "jobName", "queue", "state", "dueAt", "attempt", "releases", "leaseOwner", "leaseExpiresAt",
      "cancelRequested", "enqueuedAt", "terminalAt", "terminalCause", "parentIds", "dependencyMode", "tags",
      "traceContext", "scheduleId", "workflowId", "retry",
    ]);
    expect(toRecord(row)).toMatchObject({ id: "job-1", state: "leased", leaseOwner: "w1", payload: "{}", cancelRequested: false });
  });

  it("gives a claimed job's keys in the order it gave them before the shared decoder (PostgreSQL's and SQLite's)", () => {
    expect(Object.keys(toClaimed(row))).toEqual([
      "id", "seq", "jobName", "queue", "payload", "attempt", "releases", "dueAt", "enqueuedAt", "leaseExpiresAt",
      "tags", "parentIds", "dependencyMode", "traceContext", "scheduleId", "workflowId", "retry",
    ]);
  });
});
