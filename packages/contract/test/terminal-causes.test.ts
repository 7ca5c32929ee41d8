import { describe, expect, it } from "vitest";
import {
  JOB_STATES, TERMINAL_CAUSES, type TerminalCauseKind, jobStateNameSql, leaseExpiryDisposition, outcomeDisposition,
  terminalCauseSql, terminalCauseText,
} from "../src/index.js";

const RETRY = { maxAttempts: 3, delaysMs: [1_000, 5_000] };

describe("terminal causes", () => {
  it("fills every fact of a template into its text", () => {
    expect(terminalCauseText("failed", { attempt: 3 })).toBe("failed at attempt 3");
    expect(terminalCauseText("cancelledOnExpiry", { actor: "alice" })).toBe("cancelled by alice (lease expired)");
    expect(terminalCauseText("parentEnded", { parentId: "p1", parentState: "deadLettered" })).toBe("parent p1 deadLettered");
    for (const kind of Object.keys(TERMINAL_CAUSES) as TerminalCauseKind[]) {
      expect(terminalCauseText(kind, { attempt: 1, actor: "a", maxAttempts: 1, reason: "r", parentId: "p", parentState: "cancelled" } as never)).not.toMatch(/[{}]/);
    }
  });

  it("renders the same words as a SQL expression, quoting literals and binding facts", () => {
    expect(terminalCauseSql("succeeded", {})).toBe("'succeeded'");
    expect(terminalCauseSql("failed", { attempt: "j.attempt - j.releases" })).toBe("('failed at attempt ' || (j.attempt - j.releases))");
    expect(terminalCauseSql("cancelledOnExpiry", { actor: "j.by" })).toBe("('cancelled by ' || (j.by) || ' (lease expired)')");
    expect(() => terminalCauseSql("failed", {} as never)).toThrow(/attempt/);
  });

  it("names every state in SQL by its stored code", () => {
    const sql = jobStateNameSql("x");
    for (const state of JOB_STATES) expect(sql).toContain(`'${state}'`);
  });
});

describe("the lease-expiry rule", () => {
  it("cancels when a cancel was requested, whatever the attempts", () => {
    expect(leaseExpiryDisposition({ attempt: 9, releases: 0, cancelRequestedBy: "bob", retry: null }, RETRY, 100)).toEqual({
      state: "cancelled",
      terminalCause: "cancelled by bob (lease expired)",
    });
  });

  it("dead-letters at the ceiling of counted attempts (claims minus releases)", () => {
    expect(leaseExpiryDisposition({ attempt: 3, releases: 0, cancelRequestedBy: null, retry: null }, RETRY, 100)).toEqual({
      state: "deadLettered",
      terminalCause: "lease expired at attempt ceiling 3",
    });
    expect(leaseExpiryDisposition({ attempt: 3, releases: 1, cancelRequestedBy: null, retry: null }, RETRY, 100)).toEqual({ state: "scheduled", dueAt: 5_100 });
  });

  it("applies the job's own policy over the sweeper's", () => {
    const own = { maxAttempts: 1, delaysMs: [9] };
    expect(leaseExpiryDisposition({ attempt: 1, releases: 0, cancelRequestedBy: null, retry: own }, RETRY, 100).state).toBe("deadLettered");
    expect(leaseExpiryDisposition({ attempt: 1, releases: 0, cancelRequestedBy: null, retry: { maxAttempts: 5, delaysMs: [9] } }, RETRY, 100)).toEqual({
      state: "scheduled",
      dueAt: 109,
    });
  });

  it("reschedules below the ceiling after the delay of the counted attempt, the last delay repeating", () => {
    expect(leaseExpiryDisposition({ attempt: 1, releases: 0, cancelRequestedBy: null, retry: null }, RETRY, 100)).toEqual({ state: "scheduled", dueAt: 1_100 });
    expect(leaseExpiryDisposition({ attempt: 4, releases: 2, cancelRequestedBy: null, retry: null }, { maxAttempts: 10, delaysMs: [7] }, 0)).toEqual({
      state: "scheduled",
      dueAt: 7,
    });
  });
});

describe("the outcome rule", () => {
  const job = { attempt: 2, releases: 1, cancelRequestedBy: null };
  const asked = { ...job, cancelRequestedBy: "carol" };

  it("applies each outcome type", () => {
    expect(outcomeDisposition(job, { type: "succeeded" })).toEqual({ state: "succeeded", terminalCause: "succeeded" });
    expect(outcomeDisposition(job, { type: "failed", retryAt: null })).toEqual({ state: "deadLettered", terminalCause: "failed at attempt 1" });
    expect(outcomeDisposition(job, { type: "failed", retryAt: 50 })).toEqual({ state: "scheduled", dueAt: 50 });
    expect(outcomeDisposition(job, { type: "cancelled" })).toEqual({ state: "cancelled", terminalCause: "cancelled by handler" });
    expect(outcomeDisposition(job, { type: "unroutable", reason: "unknown job name x" })).toEqual({
      state: "quarantined",
      terminalCause: "unroutable: unknown job name x",
    });
  });

  it("turns a retry into a cancel when an operator asked, but lets a success or a dead letter stand", () => {
    expect(outcomeDisposition(asked, { type: "failed", retryAt: 50 })).toEqual({ state: "cancelled", terminalCause: "cancelled by carol" });
    expect(outcomeDisposition(asked, { type: "cancelled" })).toEqual({ state: "cancelled", terminalCause: "cancelled by carol" });
    expect(outcomeDisposition(asked, { type: "succeeded" }).state).toBe("succeeded");
    expect(outcomeDisposition(asked, { type: "failed", retryAt: null }).state).toBe("deadLettered");
  });
});
