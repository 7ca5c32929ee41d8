import { expect } from "vitest";
import { machineDefectClause, promiseClause } from "../clause.js";
import {
  DEADLINE, LISTENER, MINUTE, T0, TARGET, TARGET_TAGS, createPromise, createRequest, createTargeted, expectUnchanged, getPromise,
  ok, queued, refused, storedPromise, storedTask, taskTimer, unblock,
} from "../fixtures.js";
import type { PromiseSuiteContext } from "../suite-context.js";

// promise.create and promise.get: what a new promise is, idempotency by id, born-expired
// promises, and the timed-out view of a pending promise past its deadline.

export function promiseClauses(ctx: PromiseSuiteContext): void {
  promiseClause("promise.create: a new promise without a target is pending with the request's fields, createdAt = now, and no task", async () => {
    const store = await ctx.store();
    const param = { headers: { "content-type": "application/json" }, data: "eyJhIjoxfQ==" };
    const record = await createPromise(store, "p1", { param, tags: { app: "billing" } }, T0 + 5);
    expect(record).toEqual({ id: "p1", state: "pending", param, value: {}, tags: { app: "billing" }, timeoutAt: DEADLINE, createdAt: T0 + 5 });
    await refused(store, { kind: "task.get", id: "p1" }, 404, T0 + 5);
    expect(await queued(store)).toEqual([]);
    expect((await store.snapshot(T0 + 5)).timers.promises).toEqual([{ id: "p1", at: DEADLINE }]);
  });

  promiseClause("promise.create: a targeted promise gets a pending task at version 0, a retry timer at now + retryTimeoutMs and one execute to its target", async () => {
    const store = await ctx.store();
    const { retryTimeoutMs } = store.capabilities.settings;
    await createTargeted(store, "p1");
    expect(await storedTask(store, "p1")).toEqual({ id: "p1", state: "pending", version: 0, resumes: 0 });
    expect(await taskTimer(store, "p1")).toBe(T0 + retryTimeoutMs);
    const snapshot = await store.snapshot(T0);
    expect(snapshot.outbox).toEqual([{ kind: "execute", id: "p1", address: TARGET, version: 0, availableAt: T0 }]);
  });

  promiseClause("promise.create: a repeat with an existing id answers the stored record unchanged; its other fields are ignored and nothing is written", async () => {
    const store = await ctx.store();
    const first = await createPromise(store, "p1", { param: { data: "Zmlyc3Q=" }, tags: { v: "1" } });
    await expectUnchanged(store, async () => {
      const repeat = await ok(
        store,
        createRequest("p1", { timeoutAt: DEADLINE + MINUTE, param: { data: "c2Vjb25k" }, tags: { v: "2", ...TARGET_TAGS } }),
        T0 + 10,
      );
      expect(repeat.promise).toEqual(first);
    });
    // The repeat's target made no task.
    await refused(store, { kind: "task.get", id: "p1" }, 404, T0 + 10);
  });

  promiseClause("promise.create: a repeat of a settled promise answers the settled record and creates nothing", async () => {
    const store = await ctx.store();
    await createPromise(store, "p1");
    await ok(store, { kind: "promise.settle", id: "p1", state: "rejected", value: { data: "ZXJy" } }, T0 + 1);
    await expectUnchanged(store, async () => {
      const repeat = await ok(store, createRequest("p1"), T0 + 2);
      expect(repeat.promise).toMatchObject({ state: "rejected", value: { data: "ZXJy" }, settledAt: T0 + 1 });
    });
  });

  promiseClause("promise.create: a promise born at or past its deadline is born timed out (createdAt = settledAt = timeoutAt); one millisecond before it is pending", async () => {
    const store = await ctx.store();
    const exact = await createPromise(store, "exact", { timeoutAt: T0 });
    expect(exact).toEqual({ id: "exact", state: "rejected_timedout", param: {}, value: {}, tags: {}, timeoutAt: T0, createdAt: T0, settledAt: T0 });
    const past = await createPromise(store, "past", { timeoutAt: T0 - MINUTE });
    expect(past).toMatchObject({ state: "rejected_timedout", createdAt: T0 - MINUTE, settledAt: T0 - MINUTE });
    const live = await createPromise(store, "live", { timeoutAt: T0 + 1 });
    expect(live.state).toBe("pending");
    expect(await storedPromise(store, "exact")).toMatchObject({ state: "rejected_timedout" });
    expect((await store.snapshot(T0)).timers.promises).toEqual([{ id: "live", at: T0 + 1 }]);
  });

  promiseClause("promise.create: a born-expired timer is born resolved", async () => {
    const store = await ctx.store();
    const record = await createPromise(store, "sleep", { timeoutAt: T0, tags: { "resonate:timer": "true" } });
    expect(record).toMatchObject({ state: "resolved", value: {}, settledAt: T0, createdAt: T0 });
  });

  promiseClause("promise.create: a born-expired targeted promise has a fulfilled task at version 0, no timer and no execute", async () => {
    const store = await ctx.store();
    await createTargeted(store, "late", { timeoutAt: T0 - 1 });
    expect(await storedTask(store, "late")).toEqual({ id: "late", state: "fulfilled", version: 0, resumes: 0 });
    expect(await taskTimer(store, "late")).toBeUndefined();
    expect(await queued(store)).toEqual([]);
  });

  promiseClause("promise.create: deadlines 0 and Number.MAX_SAFE_INTEGER are accepted and read back exactly", async () => {
    const store = await ctx.store();
    expect(await createPromise(store, "zero", { timeoutAt: 0 })).toMatchObject({ state: "rejected_timedout", timeoutAt: 0, settledAt: 0 });
    expect(await createPromise(store, "never", { timeoutAt: Number.MAX_SAFE_INTEGER })).toMatchObject({ state: "pending", timeoutAt: Number.MAX_SAFE_INTEGER });
    expect(await getPromise(store, "never", T0 + 1)).toMatchObject({ state: "pending", timeoutAt: Number.MAX_SAFE_INTEGER });
  });

  promiseClause("promise.create: param data and headers, and tags, round-trip exactly (empty data, non-ASCII text, unknown tags)", async () => {
    const store = await ctx.store();
    const param = { headers: { "x-ü": "☃ snow", empty: "" }, data: "" };
    const tags = { "resonate:scope": "global", "app:tenant": "äcme 🚀", empty: "" };
    const created = await createPromise(store, "p1", { param, tags });
    expect(created.param).toEqual(param);
    expect(created.tags).toEqual(tags);
    expect(await getPromise(store, "p1")).toEqual(created);
  });

  promiseClause("promise.get: an unknown id answers 404 with a message and writes nothing", async () => {
    const store = await ctx.store();
    await createPromise(store, "p1");
    await expectUnchanged(store, () => refused(store, { kind: "promise.get", id: "p2" }, 404));
  });

  promiseClause("promise.get: a pending promise omits settledAt; a settled one carries it", async () => {
    const store = await ctx.store();
    const pending = await getPromise(store, (await createPromise(store, "p1")).id);
    expect(Object.keys(pending).sort()).toEqual(["createdAt", "id", "param", "tags", "timeoutAt", "value", "state"].sort());
    expect("settledAt" in pending).toBe(false);
    await ok(store, { kind: "promise.settle", id: "p1", state: "resolved" }, T0 + 3);
    expect(await getPromise(store, "p1", T0 + 4)).toMatchObject({ state: "resolved", settledAt: T0 + 3 });
  });

  promiseClause("promise.get: a pending promise read at its deadline reads timed out (settledAt = deadline); one millisecond before, pending", async () => {
    const store = await ctx.store();
    await createPromise(store, "p1");
    expect(await getPromise(store, "p1", DEADLINE - 1)).toMatchObject({ state: "pending" });
    const view = await getPromise(store, "p1", DEADLINE);
    expect(view).toEqual({ id: "p1", state: "rejected_timedout", param: {}, value: {}, tags: {}, timeoutAt: DEADLINE, createdAt: T0, settledAt: DEADLINE });
    // Read later still: the settlement instant stays the deadline, never the read's instant.
    expect(await getPromise(store, "p1", DEADLINE + MINUTE)).toMatchObject({ state: "rejected_timedout", settledAt: DEADLINE });
  });

  promiseClause("promise.get: a timer promise read past its deadline reads resolved with an empty value", async () => {
    const store = await ctx.store();
    await createPromise(store, "sleep", { tags: { "resonate:timer": "true" } });
    expect(await getPromise(store, "sleep", DEADLINE + 5)).toMatchObject({ state: "resolved", value: {}, settledAt: DEADLINE });
  });

  promiseClause("promise.get: reading a promise past its deadline makes the timeout permanent, with its chain (task fulfilled, listeners unblocked)", async () => {
    const store = await ctx.store();
    await createTargeted(store, "p1");
    await ok(store, { kind: "promise.register_listener", awaited: "p1", address: LISTENER });
    expect(await storedPromise(store, "p1", DEADLINE)).toMatchObject({ state: "pending" });
    await getPromise(store, "p1", DEADLINE + 1);
    expect(await storedPromise(store, "p1", DEADLINE + 1)).toMatchObject({ state: "rejected_timedout", settledAt: DEADLINE });
    expect(await storedTask(store, "p1", DEADLINE + 1)).toMatchObject({ state: "fulfilled" });
    expect(await queued(store, DEADLINE + 1)).toEqual([unblock("p1")]);
    expect((await store.snapshot(DEADLINE + 1)).timers).toEqual({ promises: [], tasks: [] });
  });

  promiseClause("promise.get: a read never shows pending after an earlier read showed the promise settled by its deadline", async () => {
    const store = await ctx.store();
    await createPromise(store, "p1");
    expect((await getPromise(store, "p1", DEADLINE)).state).toBe("rejected_timedout");
    // A reader whose clock lags (an earlier now) still sees the settlement the first read made permanent.
    expect((await getPromise(store, "p1", DEADLINE - 1)).state).toBe("rejected_timedout");
  });

  promiseClause("ids: ids of the SDK's grammar (root, root:1, root:1.2) are distinct promises found by their exact id", async () => {
    const store = await ctx.store();
    for (const id of ["root", "root:1", "root:1.2", "root:12", "root.1", "root:1:2"]) await createPromise(store, id, { tags: { id } });
    for (const id of ["root", "root:1", "root:1.2", "root:12", "root.1", "root:1:2"]) expect((await getPromise(store, id)).tags).toEqual({ id });
    await refused(store, { kind: "promise.get", id: "root:" }, 404);
  });

  promiseClause(
    "records: a param or value with data or headers null is refused naming the field, or stored without them — never echoed as null",
    async () => {
      const store = await ctx.store();
      for (const [id, param] of [
        ["d", { data: null }],
        ["h", { headers: null }],
      ] as const) {
        let record: unknown;
        try {
          record = (await ok(store, { kind: "promise.create", id, timeoutAt: DEADLINE, param: param as never })).promise;
        } catch (error) {
          expect(error).toMatchObject({ code: "BELAY_INVALID_INPUT", field: id === "d" ? "param.data" : "param.headers" });
          continue;
        }
        expect(Object.values((record as { param: object }).param)).not.toContain(null);
      }
    },
  );
}
