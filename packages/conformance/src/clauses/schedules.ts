import {
  type Instant, type JobStore, type MintDecision, type MintResult, type ScheduleDefinition, isBelayError, scheduledJobId,
} from "@belay/contract";
import { expect } from "vitest";
import { clause } from "../clause.js";
import { SECOND, T0, claimJobs, expectBelayError, report } from "../fixtures.js";
import type { SuiteContext } from "../suite-context.js";

/** The suite's cron: every ten seconds (6 fields, seconds first). The store never parses it. */
const EVERY_10S = "*/10 * * * * *";
const TICK = 10 * SECOND;
/** The n-th tick after T0. */
const tick = (n: number): Instant => T0 + n * TICK;

/** A schedule definition with defaults: every 10 s, UTC, `report.build` on queue `reports`. */
function def(id: string, fields: Partial<ScheduleDefinition> = {}): ScheduleDefinition {
  return {
    id,
    cron: EVERY_10S,
    timeZone: "UTC",
    jobName: "report.build",
    queue: "reports",
    payload: '{"kind":"daily"}',
    catchUp: "skip",
    noOverlap: false,
    ...fields,
  };
}

async function upsert(store: JobStore, schedule: ScheduleDefinition, now: Instant = T0) {
  return store.upsertSchedule({ schedule, now });
}

/** A decision that moves `scheduleId`'s cursor from `from` to `to`. */
function decision(
  scheduleId: string,
  from: Instant,
  to: Instant,
  mint: readonly Instant[] = [],
  skip: readonly Instant[] = [],
): MintDecision {
  return { scheduleId, expectedCursor: from, newCursor: to, mint, skip };
}

/** mintDue retried on retriable conflicts (which commit nothing), as the Core would. */
async function mintRetrying(store: JobStore, decisions: readonly MintDecision[], now: Instant): Promise<readonly MintResult[]> {
  for (let tries = 1; ; tries++) {
    try {
      return await store.mintDue({ decisions, now });
    } catch (error) {
      if (tries >= 20 || !isBelayError(error, "BELAY_TRANSIENT_STORE")) throw error;
    }
  }
}

/** Ids of every job a schedule minted or triggered, sorted. */
async function jobsOfSchedule(store: JobStore, scheduleId: string): Promise<string[]> {
  const ids: string[] = [];
  let after: string | undefined;
  do {
    const page = await store.listJobs(after === undefined ? { scheduleId } : { scheduleId, after });
    ids.push(...page.jobs.map((j) => j.id));
    after = page.nextCursor ?? undefined;
  } while (after !== undefined);
  return ids.sort();
}

async function allAudit(store: JobStore) {
  const page = await store.listAuditRecords({ limit: 200 });
  return page.records;
}

export function scheduleClauses(ctx: SuiteContext): void {
  clause("schedules: upsert creates a schedule with cursor = now, no skipped ticks, createdAt = updatedAt = now", async () => {
    const store = await ctx.store();
    expect(await upsert(store, def("nightly"), T0 + 7)).toEqual({ status: "created", cursor: T0 + 7 });
    expect(await store.getSchedule("nightly")).toEqual({
      id: "nightly",
      cron: EVERY_10S,
      timeZone: "UTC",
      jobName: "report.build",
      queue: "reports",
      payload: '{"kind":"daily"}',
      tags: [],
      catchUp: "skip",
      noOverlap: false,
      retry: null,
      cursor: T0 + 7,
      skippedTicks: [],
      hasLiveInstance: false,
      createdAt: T0 + 7,
      updatedAt: T0 + 7,
    });
    // No backfill: creating a schedule mints nothing.
    expect(await jobsOfSchedule(store, "nightly")).toEqual([]);
  });

  clause("schedules: a redefinition keeps cursor and skipped ticks, replaces every other field and moves updatedAt", async () => {
    const store = await ctx.store();
    await upsert(store, def("s"), T0);
    expect(await store.mintDue({ decisions: [decision("s", T0, tick(2), [tick(2)], [tick(1)])], now: tick(2) })).toMatchObject([
      { scheduleId: "s", status: "minted" },
    ]);
    const redefined = def("s", {
      cron: "0 3 * * *",
      timeZone: "Europe/Paris",
      jobName: "report.rebuild",
      queue: "slow",
      payload: '{"kind":"weekly"}',
      tags: [{ key: "team", value: "data" }],
      catchUp: "coalesce",
      noOverlap: true,
    });
    expect(await upsert(store, redefined, tick(5))).toEqual({ status: "updated", cursor: tick(2) });
    expect(await store.getSchedule("s")).toMatchObject({
      ...redefined,
      cursor: tick(2),
      skippedTicks: [tick(1)],
      createdAt: T0,
      updatedAt: tick(5),
    });
    expect(await store.listSchedules()).toHaveLength(1);
  });

  clause("schedules: listSchedules omits the payload, getSchedule carries it, and minted jobs get it verbatim", async () => {
    const store = await ctx.store();
    const payload = '{ "z": 1,  "a": "é🎉", "n": 1.50 }';
    await upsert(store, def("b", { payload }));
    await upsert(store, def("a"));
    const listed = await store.listSchedules();
    expect(listed.map((s) => s.id)).toEqual(["a", "b"]);
    for (const schedule of listed) expect(schedule).not.toHaveProperty("payload");
    expect((await store.getSchedule("b"))!.payload).toBe(payload);
    expect(await store.getSchedule("nope")).toBeNull();
    await store.mintDue({ decisions: [decision("b", T0, tick(1), [tick(1)])], now: tick(1) });
    expect((await store.getJob(scheduledJobId("b", tick(1))))!.payload).toBe(payload);
  });

  clause("schedules: time zone, tags, catch-up policy and no-overlap round-trip", async () => {
    const store = await ctx.store();
    const tags = [{ key: "", value: "nightly" }, { key: "team", value: "data" }, { key: "team", value: "ops" }];
    await upsert(store, def("x", { timeZone: "America/New_York", tags, catchUp: "coalesce", noOverlap: true }));
    await upsert(store, def("y", { timeZone: "Asia/Kolkata", catchUp: "skip", noOverlap: false }));
    const [x, y] = await store.listSchedules();
    expect(x).toMatchObject({ id: "x", timeZone: "America/New_York", tags, catchUp: "coalesce", noOverlap: true });
    expect(y).toMatchObject({ id: "y", timeZone: "Asia/Kolkata", tags: [], catchUp: "skip", noOverlap: false });
    expect(await store.getSchedule("x")).toMatchObject({ timeZone: "America/New_York", tags, catchUp: "coalesce", noOverlap: true });
  });

  clause("schedules: mintDue inserts one job per tick, id scheduledJobId, due at the tick, fields from the schedule; the cursor moves", async () => {
    const store = await ctx.store();
    const tags = [{ key: "", value: "cron" }, { key: "team", value: "data" }];
    await upsert(store, def("s", { tags, queue: "reports", jobName: "report.build", payload: '{"p":1}' }));
    const ticks = [tick(1), tick(2), tick(3)];
    const [result] = await store.mintDue({ decisions: [decision("s", T0, tick(3), ticks)], now: tick(3) + 5 });
    const ids = ticks.map((t) => scheduledJobId("s", t));
    expect(result).toMatchObject({ scheduleId: "s", status: "minted" });
    expect(result!.status === "minted" ? [...result!.jobIds].sort() : null).toEqual([...ids].sort());
    for (const [i, id] of ids.entries()) {
      expect(await store.getJob(id), id).toMatchObject({
        id,
        state: "scheduled",
        dueAt: ticks[i],
        jobName: "report.build",
        queue: "reports",
        payload: '{"p":1}',
        tags,
        scheduleId: "s",
        attempt: 0,
      });
    }
    expect(await jobsOfSchedule(store, "s")).toEqual([...ids].sort());
    expect(await store.getSchedule("s")).toMatchObject({ cursor: tick(3), skippedTicks: [] });
    // Minted jobs are ordinary jobs: claimable from their tick on.
    const claimed = await claimJobs(store, { queues: ["reports"], now: tick(3) });
    expect(claimed.map((j) => j.id).sort()).toEqual([...ids].sort());
    expect(claimed.every((j) => j.scheduleId === "s")).toBe(true);
  });

  clause("schedules: a decision whose expected cursor no longer matches is stale, returns the cursor and applies nothing", async () => {
    const store = await ctx.store();
    await upsert(store, def("s"), T0);
    await store.mintDue({ decisions: [decision("s", T0, tick(1), [tick(1)])], now: tick(1) });
    const before = await store.getSchedule("s");
    const [result] = await store.mintDue({
      decisions: [decision("s", T0, tick(4), [tick(2), tick(4)], [tick(3)])],
      now: tick(4),
    });
    expect(result).toEqual({ scheduleId: "s", status: "stale", cursor: tick(1) });
    expect(await store.getSchedule("s")).toEqual(before);
    expect(await jobsOfSchedule(store, "s")).toEqual([scheduledJobId("s", tick(1))]);
    expect(await store.getJob(scheduledJobId("s", tick(2)))).toBeNull();
  });

  clause("schedules: a stale decision and a fresh one in the same call are applied independently", async () => {
    const store = await ctx.store();
    await upsert(store, def("a"), T0);
    await upsert(store, def("b"), T0);
    await store.mintDue({ decisions: [decision("a", T0, tick(1), [tick(1)])], now: tick(1) });
    const results = await store.mintDue({
      decisions: [decision("a", T0, tick(2), [tick(2)], [tick(1)]), decision("b", T0, tick(2), [tick(2)], [tick(1)])],
      now: tick(2),
    });
    expect(results).toEqual([
      { scheduleId: "a", status: "stale", cursor: tick(1) },
      { scheduleId: "b", status: "minted", jobIds: [scheduledJobId("b", tick(2))] },
    ]);
    expect(await store.getSchedule("a")).toMatchObject({ cursor: tick(1), skippedTicks: [] });
    expect(await store.getSchedule("b")).toMatchObject({ cursor: tick(2), skippedTicks: [tick(1)] });
    expect(await jobsOfSchedule(store, "a")).toEqual([scheduledJobId("a", tick(1))]);
    expect(await jobsOfSchedule(store, "b")).toEqual([scheduledJobId("b", tick(2))]);
  });

  clause("schedules: two concurrent mints of the same decision mint each tick exactly once (one minted, one stale)", async () => {
    const store = await ctx.store();
    const peer = await ctx.peer(store);
    await upsert(store, def("s"), T0);
    const plan = [decision("s", T0, tick(3), [tick(1), tick(2), tick(3)])];
    const [a, b] = await Promise.all([mintRetrying(store, plan, tick(3)), mintRetrying(peer, plan, tick(3))]);
    const results = [a[0]!, b[0]!].sort((x, y) => x.status.localeCompare(y.status));
    const ids = [tick(1), tick(2), tick(3)].map((t) => scheduledJobId("s", t)).sort();
    expect(results.map((r) => r.status)).toEqual(["minted", "stale"]);
    expect(results[0]!.status === "minted" ? [...results[0]!.jobIds].sort() : null).toEqual(ids);
    expect(results[1]).toEqual({ scheduleId: "s", status: "stale", cursor: tick(3) });
    expect(await jobsOfSchedule(store, "s")).toEqual(ids);
    expect(await store.getSchedule("s")).toMatchObject({ cursor: tick(3) });
  });

  clause("schedules: a tick whose job already exists is not minted again and not listed", async () => {
    const store = await ctx.store();
    await upsert(store, def("s"), T0);
    const first = scheduledJobId("s", tick(1));
    expect(await store.mintDue({ decisions: [decision("s", T0, tick(1), [tick(1)])], now: tick(1) })).toEqual([
      { scheduleId: "s", status: "minted", jobIds: [first] },
    ]);
    // The first instance runs meanwhile; a late re-mint of its tick must not reset it.
    const [claimed] = await claimJobs(store, { queues: ["reports"], now: tick(1) });
    expect(claimed!.id).toBe(first);
    const before = { job: await store.getJob(first), history: await store.getJobHistory(first) };
    const results = await store.mintDue({ decisions: [decision("s", tick(1), tick(2), [tick(1), tick(2)])], now: tick(2) });
    expect(results).toEqual([{ scheduleId: "s", status: "minted", jobIds: [scheduledJobId("s", tick(2))] }]);
    expect({ job: await store.getJob(first), history: await store.getJobHistory(first) }).toEqual(before);
    expect(await jobsOfSchedule(store, "s")).toEqual([first, scheduledJobId("s", tick(2))].sort());
    expect(await store.getSchedule("s")).toMatchObject({ cursor: tick(2) });
  });

  clause("schedules: mintDue for a removed or unknown schedule is notFound and mints nothing", async () => {
    const store = await ctx.store();
    await upsert(store, def("gone"), T0);
    expect(await store.removeSchedule({ scheduleId: "gone" })).toEqual({ status: "removed" });
    const results = await store.mintDue({
      decisions: [decision("gone", T0, tick(1), [tick(1)]), decision("ghost", T0, tick(1), [tick(1)])],
      now: tick(1),
    });
    expect(results).toEqual([
      { scheduleId: "gone", status: "notFound" },
      { scheduleId: "ghost", status: "notFound" },
    ]);
    expect(await store.getJob(scheduledJobId("gone", tick(1)))).toBeNull();
    expect(await store.getJob(scheduledJobId("ghost", tick(1)))).toBeNull();
    expect(await store.listSchedules()).toEqual([]);
  });

  clause("schedules: skipped ticks accumulate across mints and only the newest skippedTicksKept are kept", async () => {
    const store = await ctx.store({ bounds: { skippedTicksKept: 3 } });
    await upsert(store, def("s"), T0);
    await store.mintDue({ decisions: [decision("s", T0, tick(3), [tick(3)], [tick(1), tick(2)])], now: tick(3) });
    expect(await store.getSchedule("s")).toMatchObject({ skippedTicks: [tick(1), tick(2)] });
    await store.mintDue({ decisions: [decision("s", tick(3), tick(6), [tick(6)], [tick(4), tick(5)])], now: tick(6) });
    expect(await store.getSchedule("s")).toMatchObject({ cursor: tick(6), skippedTicks: [tick(2), tick(4), tick(5)] });
    const [listed] = await store.listSchedules();
    expect(listed!.skippedTicks).toEqual([tick(2), tick(4), tick(5)]);
    // Skipped ticks are never minted.
    expect(await jobsOfSchedule(store, "s")).toEqual([scheduledJobId("s", tick(3)), scheduledJobId("s", tick(6))].sort());
  });

  clause("schedules: hasLiveInstance is true while a minted instance is not terminal and false once it succeeded", async () => {
    const store = await ctx.store();
    await upsert(store, def("s"), T0);
    expect((await store.getSchedule("s"))!.hasLiveInstance).toBe(false);
    await store.mintDue({ decisions: [decision("s", T0, tick(1), [tick(1)])], now: tick(1) });
    expect((await store.getSchedule("s"))!.hasLiveInstance).toBe(true);
    const [job] = await claimJobs(store, { queues: ["reports"], now: tick(1) });
    expect(job!.id).toBe(scheduledJobId("s", tick(1)));
    expect((await store.listSchedules())[0]!.hasLiveInstance).toBe(true);
    expect(await report(store, job!, { type: "succeeded" }, tick(1) + 1)).toMatchObject({ status: "applied", state: "succeeded" });
    expect((await store.getSchedule("s"))!.hasLiveInstance).toBe(false);
    expect((await store.listSchedules())[0]!.hasLiveInstance).toBe(false);
  });

  clause("schedules: triggerSchedule mints one instance due now with the given id, leaves the cursor alone and is audited", async () => {
    const store = await ctx.store();
    await upsert(store, def("s", { payload: '{ "manual": true }' }), T0);
    const now = T0 + 5 * SECOND;
    expect(await store.triggerSchedule({ scheduleId: "s", jobId: "manual-1", actor: "alice", now })).toEqual({
      status: "triggered",
      jobId: "manual-1",
    });
    expect(await store.getJob("manual-1")).toMatchObject({
      id: "manual-1",
      state: "scheduled",
      dueAt: now,
      jobName: "report.build",
      queue: "reports",
      payload: '{ "manual": true }',
      scheduleId: "s",
    });
    expect(await store.getSchedule("s")).toMatchObject({ cursor: T0, skippedTicks: [], hasLiveInstance: true });
    const audit = (await store.listAuditRecords({ target: "s", targetKind: "schedule" })).records;
    expect(audit).toHaveLength(1);
    expect(audit[0]).toMatchObject({ action: "triggerSchedule", targetKind: "schedule", target: "s", actor: "alice", at: now });
    // A repeat with the same job id mints nothing more.
    expect(await store.triggerSchedule({ scheduleId: "s", jobId: "manual-1", actor: "alice", now: now + 1 })).toEqual({
      status: "triggered",
      jobId: "manual-1",
    });
    expect(await jobsOfSchedule(store, "s")).toEqual(["manual-1"]);
    expect(await store.getJob("manual-1")).toMatchObject({ dueAt: now, state: "scheduled" });
    // The cursor still stands, so the regular tick is minted as planned.
    expect(await store.mintDue({ decisions: [decision("s", T0, tick(1), [tick(1)])], now: tick(1) })).toMatchObject([
      { status: "minted" },
    ]);
  });

  clause("schedules: an upsert with an actor is audited (created, then updated) with its effect; one without is not; an invalid actor writes nothing", async () => {
    const store = await ctx.store();
    expect(await store.upsertSchedule({ schedule: def("s"), now: T0, actor: "alice" })).toEqual({ status: "created", cursor: T0 });
    expect(await store.upsertSchedule({ schedule: def("s", { queue: "other" }), now: T0 + SECOND, actor: "bob" })).toEqual({ status: "updated", cursor: T0 });
    await upsert(store, def("s", { queue: "third" }), T0 + 2 * SECOND);
    await upsert(store, def("code-defined"), T0 + 2 * SECOND);
    const records = (await store.listAuditRecords({ targetKind: "schedule" })).records;
    expect(records.map(({ seq: _, ...r }) => r)).toEqual([
      { at: T0, actor: "alice", action: "upsertSchedule", targetKind: "schedule", target: "s", detail: "created" },
      { at: T0 + SECOND, actor: "bob", action: "upsertSchedule", targetKind: "schedule", target: "s", detail: "updated" },
    ]);
    for (const actor of ["", 7]) {
      await expectBelayError(
        () => store.upsertSchedule({ schedule: def("t"), now: T0, actor: actor as string }),
        "BELAY_INVALID_INPUT",
        { field: "actor" },
      );
    }
    expect(await store.getSchedule("t")).toBeNull();
    expect((await allAudit(store)).length).toBe(2);
  });

  clause("schedules: a decision planned before a trigger, minting for a no-overlap schedule, is stale while the triggered instance is live; a skip still applies", async () => {
    const store = await ctx.store();
    await upsert(store, def("s", { noOverlap: true, queue: "reports" }), T0);
    // The planner read the schedule with no live instance; a trigger lands before its mint.
    expect((await store.listSchedules())[0]).toMatchObject({ hasLiveInstance: false });
    await store.triggerSchedule({ scheduleId: "s", jobId: "manual-1", actor: "alice", now: T0 + 1 });
    expect(await store.mintDue({ decisions: [decision("s", T0, tick(1), [tick(1)])], now: tick(1) })).toEqual([
      { scheduleId: "s", status: "stale", cursor: T0 },
    ]);
    expect(await jobsOfSchedule(store, "s")).toEqual(["manual-1"]);
    expect(await store.getSchedule("s")).toMatchObject({ cursor: T0, skippedTicks: [], hasLiveInstance: true });
    // Read again, the planner skips the tick: a decision that mints nothing applies.
    expect(await store.mintDue({ decisions: [decision("s", T0, tick(1), [], [tick(1)])], now: tick(1) })).toEqual([
      { scheduleId: "s", status: "minted", jobIds: [] },
    ]);
    // Once the instance is terminal, the next tick is minted.
    const [claimed] = await claimJobs(store, { queues: ["reports"], now: tick(1) });
    expect(claimed?.id).toBe("manual-1");
    expect(await report(store, claimed!, { type: "succeeded", output: null }, tick(1))).toMatchObject({ status: "applied" });
    expect(await store.mintDue({ decisions: [decision("s", tick(1), tick(2), [tick(2)])], now: tick(2) })).toMatchObject([
      { status: "minted", jobIds: [scheduledJobId("s", tick(2))] },
    ]);
    // A schedule without no-overlap mints over a live instance as planned.
    await upsert(store, def("free", { noOverlap: false }), T0);
    await store.triggerSchedule({ scheduleId: "free", jobId: "manual-2", actor: "alice", now: T0 + 1 });
    expect(await store.mintDue({ decisions: [decision("free", T0, tick(1), [tick(1)])], now: tick(1) })).toMatchObject([{ status: "minted" }]);
  });

  clause("schedules: triggerSchedule on an unknown schedule is notFound, mints nothing and audits nothing", async () => {
    const store = await ctx.store();
    expect(await store.triggerSchedule({ scheduleId: "ghost", jobId: "manual-1", actor: "alice", now: T0 })).toEqual({
      status: "notFound",
    });
    expect(await store.getJob("manual-1")).toBeNull();
    expect(await allAudit(store)).toEqual([]);
  });

  clause("schedules: removeSchedule removes exactly that schedule, its minted jobs stay, a second remove is notFound", async () => {
    const store = await ctx.store();
    await upsert(store, def("a"), T0);
    await upsert(store, def("b"), T0);
    await store.mintDue({ decisions: [decision("a", T0, tick(1), [tick(1)])], now: tick(1) });
    const minted = await store.getJob(scheduledJobId("a", tick(1)));
    expect(await store.removeSchedule({ scheduleId: "a" })).toEqual({ status: "removed" });
    expect((await store.listSchedules()).map((s) => s.id)).toEqual(["b"]);
    expect(await store.getSchedule("a")).toBeNull();
    expect(await store.getSchedule("b")).not.toBeNull();
    expect(await store.getJob(scheduledJobId("a", tick(1)))).toEqual(minted);
    expect(await store.removeSchedule({ scheduleId: "a" })).toEqual({ status: "notFound" });
    expect(await store.removeSchedule({ scheduleId: "never" })).toEqual({ status: "notFound" });
    expect((await store.listSchedules()).map((s) => s.id)).toEqual(["b"]);
  });

  clause("schedules: an invalid definition throws naming the field and writes nothing", async () => {
    const store = await ctx.store({ bounds: { payloadBytes: 10, idLength: 40 } });
    const valid = def("s", { payload: "{}" });
    const bad = (fields: Record<string, unknown>) => ({ ...valid, ...fields }) as unknown as ScheduleDefinition;
    const cases: [ScheduleDefinition, string, Record<string, unknown>][] = [
      [bad({ payload: '"0123456789"' }), "BELAY_PAYLOAD_TOO_LARGE", { field: "schedule.payload", limit: 10, actual: 12 }],
      [bad({ id: "x".repeat(16) }), "BELAY_ID_TOO_LONG", { field: "schedule.id", limit: 15, actual: 16 }],
      [bad({ catchUp: "sometimes" }), "BELAY_INVALID_INPUT", { field: "schedule.catchUp" }],
      [bad({ cron: "" }), "BELAY_INVALID_INPUT", { field: "schedule.cron" }],
      [bad({ noOverlap: "yes" }), "BELAY_INVALID_INPUT", { field: "schedule.noOverlap" }],
    ];
    for (const [schedule, code, facts] of cases) {
      await expectBelayError(() => store.upsertSchedule({ schedule, now: T0 }), code, facts);
    }
    expect(await store.listSchedules()).toEqual([]);
    // An invalid redefinition leaves the stored schedule as it was.
    await upsert(store, valid, T0);
    const before = await store.getSchedule("s");
    for (const [schedule, code, facts] of cases.filter(([s]) => s.id === "s")) {
      await expectBelayError(() => store.upsertSchedule({ schedule, now: T0 + 1 }), code, facts);
    }
    expect(await store.getSchedule("s")).toEqual(before);
    expect((await store.listSchedules()).map((s) => s.id)).toEqual(["s"]);
  });

  clause("schedules: a schedule id of exactly idLength − 25 is accepted and its minted job ids fit idLength", async () => {
    const store = await ctx.store({ bounds: { idLength: 40 } });
    const id = "s".repeat(15);
    expect(await upsert(store, def(id), T0)).toMatchObject({ status: "created" });
    const jobId = scheduledJobId(id, tick(1));
    expect(jobId.length).toBe(40);
    expect(await store.mintDue({ decisions: [decision(id, T0, tick(1), [tick(1)])], now: tick(1) })).toEqual([
      { scheduleId: id, status: "minted", jobIds: [jobId] },
    ]);
    expect(await store.getJob(jobId)).toMatchObject({ scheduleId: id, dueAt: tick(1) });
  });

  clause("schedules: mintDue moving a cursor backwards throws InvalidInputError and applies no decision", async () => {
    const store = await ctx.store();
    await upsert(store, def("a"), T0);
    await upsert(store, def("b"), tick(2));
    await expectBelayError(
      () =>
        store.mintDue({
          decisions: [decision("a", T0, tick(1), [tick(1)]), decision("b", tick(2), tick(1))],
          now: tick(2),
        }),
      "BELAY_INVALID_INPUT",
      { field: "decisions[1].newCursor" },
    );
    expect(await store.getSchedule("a")).toMatchObject({ cursor: T0 });
    expect(await store.getSchedule("b")).toMatchObject({ cursor: tick(2) });
    expect(await jobsOfSchedule(store, "a")).toEqual([]);
  });
}
