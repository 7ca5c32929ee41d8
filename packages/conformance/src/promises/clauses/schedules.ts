import type { PromiseStore, ScheduleCreateRequest } from "@belay/contract";
import { expect } from "vitest";
import { machineDefectClause, promiseClause } from "../clause.js";
import { MINUTE, T0, TARGET, TARGET_TAGS, createPromise, execute, expectInvalid, expectUnchanged, ok, queued, refused, storedPromise, storedTask } from "../fixtures.js";
import type { PromiseSuiteContext } from "../suite-context.js";

// Schedules: created once by id; the caller plans occurrences (the store parses no cron) and
// fires due ones with compare-and-set on the timer, each firing creating the promise named by
// the id template (an existing one is left alone).

const FIRST = T0 + MINUTE;

function scheduleRequest(id: string, fields: Partial<ScheduleCreateRequest> = {}): ScheduleCreateRequest {
  return {
    kind: "schedule.create",
    id,
    cron: "* * * * *",
    promiseId: "{{.id}}.{{.timestamp}}",
    promiseTimeout: 10 * MINUTE,
    promiseParam: { data: "c2NoZWR1bGVk" },
    promiseTags: { ...TARGET_TAGS, app: "reports" },
    nextRunAt: FIRST,
    ...fields,
  };
}

async function fire(store: PromiseStore, id: string, expectedNextRunAt: number, nextRunAt: number, now: number) {
  const [result] = await store.fireSchedules({ firings: [{ id, expectedNextRunAt, nextRunAt }], now });
  return result!;
}

export function scheduleClauses(ctx: PromiseSuiteContext): void {
  promiseClause("schedule.create: stores the schedule with createdAt = now and the given first run, without lastRunAt", async () => {
    const store = await ctx.store();
    const { schedule } = await ok(store, scheduleRequest("s1"), T0 + 1);
    expect(schedule).toEqual({
      id: "s1",
      cron: "* * * * *",
      promiseId: "{{.id}}.{{.timestamp}}",
      promiseTimeout: 10 * MINUTE,
      promiseParam: { data: "c2NoZWR1bGVk" },
      promiseTags: { ...TARGET_TAGS, app: "reports" },
      createdAt: T0 + 1,
      nextRunAt: FIRST,
    });
    expect((await ok(store, { kind: "schedule.get", id: "s1" }, T0 + 2)).schedule).toEqual(schedule);
  });

  promiseClause("schedule.create: a repeat with an existing id answers the stored schedule unchanged and writes nothing", async () => {
    const store = await ctx.store();
    const { schedule } = await ok(store, scheduleRequest("s1"));
    await expectUnchanged(store, async () => {
      const repeat = await ok(store, scheduleRequest("s1", { cron: "0 * * * *", promiseTimeout: 1, nextRunAt: FIRST + MINUTE }), T0 + 5);
      expect(repeat.schedule).toEqual(schedule);
    });
  });

  promiseClause("schedule.get and schedule.delete: an unknown schedule answers 404; delete answers 200 {} once, then 404", async () => {
    const store = await ctx.store();
    await refused(store, { kind: "schedule.get", id: "s1" }, 404);
    await refused(store, { kind: "schedule.delete", id: "s1" }, 404);
    await ok(store, scheduleRequest("s1"));
    expect(await ok(store, { kind: "schedule.delete", id: "s1" }, T0 + 1)).toEqual({});
    await refused(store, { kind: "schedule.delete", id: "s1" }, 404, T0 + 2);
    await refused(store, { kind: "schedule.get", id: "s1" }, 404, T0 + 2);
    expect((await store.snapshot(T0 + 2)).schedules).toEqual([]);
  });

  promiseClause("schedules: nothing fires after delete — not due, and a planned firing is stale", async () => {
    const store = await ctx.store();
    await ok(store, scheduleRequest("s1"));
    await ok(store, { kind: "schedule.delete", id: "s1" });
    expect(await store.dueSchedules({ now: FIRST, max: 10 })).toEqual([]);
    expect(await fire(store, "s1", FIRST, FIRST + MINUTE, FIRST)).toEqual({ id: "s1", status: "stale" });
    expect((await store.snapshot(FIRST)).promises).toEqual([]);
  });

  promiseClause("dueSchedules: schedules whose next run is at or before now, earliest first, at most max", async () => {
    const store = await ctx.store();
    await ok(store, scheduleRequest("late", { nextRunAt: FIRST + 2 }));
    await ok(store, scheduleRequest("early", { nextRunAt: FIRST }));
    await ok(store, scheduleRequest("mid", { nextRunAt: FIRST + 1 }));
    await ok(store, scheduleRequest("future", { nextRunAt: FIRST + 3 }));
    expect((await store.dueSchedules({ now: FIRST - 1, max: 10 })).map((s) => s.id)).toEqual([]);
    expect((await store.dueSchedules({ now: FIRST + 2, max: 10 })).map((s) => s.id)).toEqual(["early", "mid", "late"]);
    expect((await store.dueSchedules({ now: FIRST + 2, max: 2 })).map((s) => s.id)).toEqual(["early", "mid"]);
  });

  promiseClause("fireSchedules: a firing creates the templated promise (deadline = occurrence + promiseTimeout, param, tags + lineage and resonate:schedule) with its task and execute, and moves the timer", async () => {
    const store = await ctx.store();
    await ok(store, scheduleRequest("s1"));
    const result = await fire(store, "s1", FIRST, FIRST + MINUTE, FIRST + 5);
    const promiseId = `s1.${FIRST}`;
    expect(result).toEqual({ id: "s1", status: "fired", promiseId });
    expect(await storedPromise(store, promiseId, FIRST + 5)).toEqual({
      id: promiseId,
      state: "pending",
      param: { data: "c2NoZWR1bGVk" },
      value: {},
      tags: {
        ...TARGET_TAGS,
        app: "reports",
        "resonate:origin": promiseId,
        "resonate:branch": promiseId,
        "resonate:parent": promiseId,
        "resonate:schedule": "s1",
      },
      timeoutAt: FIRST + 10 * MINUTE,
      createdAt: FIRST + 5,
    });
    expect(await storedTask(store, promiseId, FIRST + 5)).toEqual({ id: promiseId, state: "pending", version: 0, resumes: 0 });
    expect(await queued(store, FIRST + 5)).toEqual([execute(promiseId, 0, TARGET)]);
    expect((await ok(store, { kind: "schedule.get", id: "s1" }, FIRST + 5)).schedule).toMatchObject({ nextRunAt: FIRST + MINUTE, lastRunAt: FIRST });
    expect(await store.dueSchedules({ now: FIRST + 5, max: 10 })).toEqual([]);
  });

  promiseClause("fireSchedules: compare-and-set — a firing planned from an old timer, or repeated, is stale and writes nothing", async () => {
    const store = await ctx.store();
    await ok(store, scheduleRequest("s1"));
    expect((await fire(store, "s1", FIRST, FIRST + MINUTE, FIRST)).status).toBe("fired");
    await expectUnchanged(
      store,
      async () => {
        expect(await fire(store, "s1", FIRST, FIRST + MINUTE, FIRST + 1)).toEqual({ id: "s1", status: "stale" });
        expect(await fire(store, "s1", FIRST - MINUTE, FIRST + 2 * MINUTE, FIRST + 1)).toEqual({ id: "s1", status: "stale" });
      },
      FIRST + 1,
    );
  });

  promiseClause("fireSchedules: a firing before its timer is due is stale", async () => {
    const store = await ctx.store();
    await ok(store, scheduleRequest("s1"));
    expect(await fire(store, "s1", FIRST, FIRST + MINUTE, FIRST - 1)).toEqual({ id: "s1", status: "stale" });
    expect((await store.snapshot(FIRST)).promises).toEqual([]);
  });

  promiseClause("fireSchedules: an occurrence whose promise exists leaves it alone and still moves the timer", async () => {
    const store = await ctx.store();
    await ok(store, scheduleRequest("s1", { promiseId: "fixed" }));
    const existing = await createPromise(store, "fixed", { param: { data: "bWluZQ==" } });
    expect(await fire(store, "s1", FIRST, FIRST + MINUTE, FIRST)).toEqual({ id: "s1", status: "fired", promiseId: "fixed" });
    expect(await storedPromise(store, "fixed", FIRST)).toEqual(existing);
    expect((await ok(store, { kind: "schedule.get", id: "s1" }, FIRST)).schedule.nextRunAt).toBe(FIRST + MINUTE);
  });

  promiseClause("fireSchedules: a late firing whose promise's deadline has passed creates it born timed out, with a fulfilled task", async () => {
    const store = await ctx.store();
    await ok(store, scheduleRequest("s1", { promiseTimeout: MINUTE }));
    const { promiseId } = (await fire(store, "s1", FIRST, FIRST + MINUTE, FIRST + 2 * MINUTE)) as { promiseId: string };
    expect(await storedPromise(store, promiseId, FIRST + 2 * MINUTE)).toMatchObject({ state: "rejected_timedout", settledAt: FIRST + MINUTE });
    expect(await storedTask(store, promiseId, FIRST + 2 * MINUTE)).toMatchObject({ state: "fulfilled" });
  });

  promiseClause("fireSchedules: several firings in one call are answered per firing, in input order", async () => {
    const store = await ctx.store();
    await ok(store, scheduleRequest("a"));
    await ok(store, scheduleRequest("b", { nextRunAt: FIRST + 1 }));
    const results = await store.fireSchedules({
      firings: [
        { id: "b", expectedNextRunAt: FIRST + 1, nextRunAt: FIRST + MINUTE },
        { id: "ghost", expectedNextRunAt: FIRST, nextRunAt: FIRST + MINUTE },
        { id: "a", expectedNextRunAt: FIRST, nextRunAt: FIRST + MINUTE },
      ],
      now: FIRST + 1,
    });
    expect(results).toEqual([
      { id: "b", status: "fired", promiseId: `b.${FIRST + 1}` },
      { id: "ghost", status: "stale" },
      { id: "a", status: "fired", promiseId: `a.${FIRST}` },
    ]);
    expect(await store.fireSchedules({ firings: [], now: FIRST })).toEqual([]);
  });

  promiseClause("schedule.create: promiseTags must name a target, and malformed firings are refused naming the field", async () => {
    const store = await ctx.store();
    await expectInvalid(() => store.handle(scheduleRequest("s1", { promiseTags: { app: "x" } }), T0), "promiseTags.resonate:target");
    await ok(store, scheduleRequest("s1"));
    await expectInvalid(() => store.fireSchedules({ firings: [{ id: "s1", expectedNextRunAt: FIRST, nextRunAt: FIRST }], now: FIRST }), "firings[0].nextRunAt");
    await expectInvalid(() => store.fireSchedules({ firings: [{ id: "", expectedNextRunAt: FIRST, nextRunAt: FIRST + 1 }], now: FIRST }), "firings[0].id");
    await expectInvalid(() => store.fireSchedules({ firings: [{ id: "s1", expectedNextRunAt: -1, nextRunAt: FIRST + 1 }], now: FIRST }), "firings[0].expectedNextRunAt");
    await expectInvalid(() => store.dueSchedules({ now: FIRST, max: 0 }), "max");
    expect((await store.snapshot(FIRST)).promises).toEqual([]);
  });

  promiseClause(
    "fireSchedules: a firing's promise is the root of its own call graph — lineage tags resonate:origin, resonate:branch and resonate:parent name its id",
    async () => {
      const store = await ctx.store();
      await ok(store, scheduleRequest("s1"));
      const { promiseId } = (await fire(store, "s1", FIRST, FIRST + MINUTE, FIRST)) as { promiseId: string };
      expect((await storedPromise(store, promiseId, FIRST))?.tags).toMatchObject({ "resonate:origin": promiseId, "resonate:branch": promiseId, "resonate:parent": promiseId });
    },
  );

  promiseClause(
    "schedule.create: the largest promiseTimeout accepted still gives every firing's promise a deadline the contract accepts (a safe integer)",
    async () => {
      const store = await ctx.store();
      let accepted = true;
      try {
        await ok(store, scheduleRequest("s1", { promiseTimeout: Number.MAX_SAFE_INTEGER }));
      } catch (error) {
        expect(error).toMatchObject({ code: "BELAY_INVALID_INPUT", field: "promiseTimeout" });
        accepted = false;
      }
      if (!accepted) return;
      const { promiseId } = (await fire(store, "s1", FIRST, FIRST + MINUTE, FIRST)) as { promiseId: string };
      expect(Number.isSafeInteger((await storedPromise(store, promiseId, FIRST))?.timeoutAt)).toBe(true);
    },
  );
}
