import type { PromiseRecord, PromiseStore, TaskRecord } from "@belay/contract";
import { expect } from "vitest";
import { everyPage } from "../../cursor.js";
import { promiseClause } from "../clause.js";
import { DEADLINE, T0, TARGET_TAGS, acquire, createPromise, createTargeted, expectUnchanged, holdTask, ids, ok, settle } from "../fixtures.js";
import type { PromiseSuiteContext } from "../suite-context.js";

// The three searches: ordered by id, `cursor` = the last id of a full page (omitted on the last),
// filters applied to what a reader sees at `now` (the timed-out view), and no writes.

/** Every promise a search finds, following its cursor with pages of `limit`. */
async function allPromises(store: PromiseStore, filter: { state?: PromiseRecord["state"]; tags?: Record<string, string> }, limit: number, now = T0) {
  const pages = await everyPage(
    (cursor) => ok(store, { kind: "promise.search", ...filter, limit, ...(cursor === undefined ? {} : { cursor }) }, now),
    (page) => page.cursor,
  );
  for (const page of pages) expect(page.promises.length).toBeLessThanOrEqual(limit);
  return pages.flatMap((page) => ids(page.promises));
}

/** Every task a search finds (of `state`, if given), following its cursor with pages of `limit`. */
async function allTasks(store: PromiseStore, state: TaskRecord["state"] | undefined, limit: number, now = T0) {
  const pages = await everyPage(
    (cursor) => ok(store, { kind: "task.search", ...(state ? { state } : {}), limit, ...(cursor === undefined ? {} : { cursor }) }, now),
    (page) => page.cursor,
  );
  return pages.flatMap((page) => ids(page.tasks));
}

export function searchClauses(ctx: PromiseSuiteContext): void {
  /**
   * A clause: `create` makes 101 records, ids `${prefix}000` to `${prefix}100`; the page `search`
   * answers without a limit holds 100 of them, its cursor the 100th id.
   */
  const hundredPerPage = (
    title: string,
    prefix: string,
    create: (store: PromiseStore, id: string) => Promise<unknown>,
    search: (store: PromiseStore) => Promise<{ readonly records: readonly unknown[]; readonly cursor?: string | undefined }>,
  ) =>
    promiseClause(title, async () => {
      const store = await ctx.store();
      for (let i = 0; i < 101; i++) await create(store, `${prefix}${String(i).padStart(3, "0")}`);
      const page = await search(store);
      expect(page.records).toHaveLength(100);
      expect(page.cursor).toBe(`${prefix}099`);
    });

  promiseClause("promise.search: results are ordered by id; a full page carries cursor = its last id, the last page none; following it finds each promise once", async () => {
    const store = await ctx.store();
    for (const id of ["e", "b", "d", "a", "c"]) await createPromise(store, id);
    const first = await ok(store, { kind: "promise.search", limit: 2 });
    expect(ids(first.promises)).toEqual(["a", "b"]);
    expect(first.cursor).toBe("b");
    const last = await ok(store, { kind: "promise.search", limit: 10, cursor: "c" });
    expect(ids(last.promises)).toEqual(["d", "e"]);
    expect("cursor" in last).toBe(false);
    expect(await allPromises(store, {}, 2)).toEqual(["a", "b", "c", "d", "e"]);
  });

  hundredPerPage("promise.search: without a limit a page holds 100 promises", "p", createPromise, async (store) => {
    const { promises, cursor } = await ok(store, { kind: "promise.search" });
    return { records: promises, cursor };
  });

  promiseClause("promise.search: every tag given must match", async () => {
    const store = await ctx.store();
    await createPromise(store, "both", { tags: { app: "a", env: "prod" } });
    await createPromise(store, "app", { tags: { app: "a" } });
    await createPromise(store, "other", { tags: { app: "b", env: "prod" } });
    expect(ids((await ok(store, { kind: "promise.search", tags: { app: "a" } })).promises)).toEqual(["app", "both"]);
    expect(ids((await ok(store, { kind: "promise.search", tags: { app: "a", env: "prod" } })).promises)).toEqual(["both"]);
    expect((await ok(store, { kind: "promise.search", tags: { app: "c" } })).promises).toEqual([]);
  });

  promiseClause("promise.search: the state filter sees the timed-out view — a pending promise past its deadline counts as timed out (a timer as resolved), not pending", async () => {
    const store = await ctx.store();
    await createPromise(store, "live", { timeoutAt: DEADLINE });
    await createPromise(store, "expired", { timeoutAt: T0 + 10 });
    await createPromise(store, "timer", { timeoutAt: T0 + 10, tags: { "resonate:timer": "true" } });
    await createPromise(store, "done");
    await settle(store, "done", "resolved", undefined, T0 + 1);
    await createPromise(store, "failed");
    await settle(store, "failed", "rejected", undefined, T0 + 1);
    const now = T0 + 20;
    expect(await allPromises(store, { state: "pending" }, 1, now)).toEqual(["live"]);
    expect(await allPromises(store, { state: "rejected_timedout" }, 1, now)).toEqual(["expired"]);
    expect(await allPromises(store, { state: "resolved" }, 1, now)).toEqual(["done", "timer"]);
    expect(await allPromises(store, { state: "rejected" }, 1, now)).toEqual(["failed"]);
    const all = await ok(store, { kind: "promise.search" }, now);
    expect(all.promises.find((p) => p.id === "expired")).toMatchObject({ state: "rejected_timedout", settledAt: T0 + 10 });
  });

  promiseClause("promise.search: a search writes nothing, not even the timeouts it shows", async () => {
    const store = await ctx.store();
    await createTargeted(store, "expired", { timeoutAt: T0 + 10 });
    await expectUnchanged(store, () => ok(store, { kind: "promise.search", state: "rejected_timedout" }, T0 + 20), T0 + 20);
  });

  promiseClause("promise.search: an empty store answers no promises and no cursor", async () => {
    const store = await ctx.store();
    expect(await ok(store, { kind: "promise.search", limit: 1000 })).toEqual({ promises: [] });
  });

  promiseClause("task.search: tasks ordered by id with cursor paging; the state filter sees a task whose promise timed out as fulfilled", async () => {
    const store = await ctx.store();
    await createTargeted(store, "t-pending");
    await holdTask(store, "t-acquired");
    await createTargeted(store, "t-expired", { timeoutAt: T0 + 10 });
    await createPromise(store, "untargeted");
    const now = T0 + 20;
    expect(await allTasks(store, undefined, 2, now)).toEqual(["t-acquired", "t-expired", "t-pending"]);
    expect(await allTasks(store, "pending", 1, now)).toEqual(["t-pending"]);
    expect(await allTasks(store, "acquired", 1, now)).toEqual(["t-acquired"]);
    expect(await allTasks(store, "fulfilled", 1, now)).toEqual(["t-expired"]);
    const page = await ok(store, { kind: "task.search" }, now);
    expect(page.tasks.find((t) => t.id === "t-expired")).toEqual({ id: "t-expired", state: "fulfilled", version: 0, resumes: 0 });
    expect(page.tasks.find((t) => t.id === "t-acquired")).toMatchObject({ pid: "w1" });
  });

  hundredPerPage("task.search: without a limit a page holds 100 tasks", "t", createTargeted, async (store) => {
    const { tasks, cursor } = await ok(store, { kind: "task.search" });
    return { records: tasks, cursor };
  });

  promiseClause("schedule.search: ordered by id, 10 per page by default, cursor paging, and tags matched against the schedules' promise tags", async () => {
    const store = await ctx.store();
    for (let i = 0; i < 12; i++) {
      await ok(store, {
        kind: "schedule.create",
        id: `s${String(i).padStart(2, "0")}`,
        cron: "* * * * *",
        promiseId: "{{.id}}.{{.timestamp}}",
        promiseTimeout: 60_000,
        promiseTags: { ...TARGET_TAGS, parity: i % 2 === 0 ? "even" : "odd" },
        nextRunAt: T0 + 60_000,
      });
    }
    const first = await ok(store, { kind: "schedule.search" });
    expect(ids(first.schedules)).toEqual(["s00", "s01", "s02", "s03", "s04", "s05", "s06", "s07", "s08", "s09"]);
    expect(first.cursor).toBe("s09");
    const rest = await ok(store, { kind: "schedule.search", cursor: "s09" });
    expect(ids(rest.schedules)).toEqual(["s10", "s11"]);
    expect("cursor" in rest).toBe(false);
    expect(ids((await ok(store, { kind: "schedule.search", tags: { parity: "odd" }, limit: 100 })).schedules)).toEqual(["s01", "s03", "s05", "s07", "s09", "s11"]);
  });

  promiseClause("searches: a task acquired after a page was read is found by the next page as it is now", async () => {
    const store = await ctx.store();
    await createTargeted(store, "a");
    await createTargeted(store, "b");
    const first = await ok(store, { kind: "task.search", limit: 1 });
    expect(first.tasks).toEqual([{ id: "a", state: "pending", version: 0, resumes: 0 }]);
    await acquire(store, "b", { now: T0 + 1 });
    const second = await ok(store, { kind: "task.search", limit: 1, cursor: first.cursor! }, T0 + 1);
    expect(second.tasks).toMatchObject([{ id: "b", state: "acquired", version: 1 }]);
  });

  promiseClause("promise.search: a prefix (Belay's extension) keeps only ids starting with it, in id order, paged", async () => {
    const store = await ctx.store();
    for (const id of ["order:1", "order:2", "orders", "other:1", "order:3"]) await createPromise(store, id);
    const first = await ok(store, { kind: "promise.search", prefix: "order:", limit: 2 });
    expect(ids(first.promises)).toEqual(["order:1", "order:2"]);
    const rest = await ok(store, { kind: "promise.search", prefix: "order:", limit: 2, cursor: first.cursor! });
    expect(ids(rest.promises)).toEqual(["order:3"]);
    expect(ids((await ok(store, { kind: "promise.search", prefix: "%" })).promises)).toEqual([]);
  });

  promiseClause("describePromise: a promise with its task, callbacks both ways, listeners and waiting messages, touching nothing", async () => {
    const store = await ctx.store();
    await holdTask(store, "root");
    await createTargeted(store, "root:1");
    await ok(store, { kind: "task.suspend", id: "root", version: 1, actions: [{ kind: "promise.register_callback", awaited: "root:1", awaiter: "root" }] });
    await ok(store, { kind: "promise.register_listener", awaited: "root:1", address: "poll://uni@g/p1" });
    const before = await store.snapshot(T0);
    const child = await store.describePromise("root:1", T0);
    expect(child).toMatchObject({
      promise: { id: "root:1", state: "pending" },
      task: { id: "root:1", state: "pending", version: 0 },
      awaiters: ["root"],
      awaiting: [],
      listeners: ["poll://uni@g/p1"],
      messages: [{ kind: "execute", version: 0 }],
    });
    expect((await store.describePromise("root", T0))?.awaiting).toEqual(["root:1"]);
    expect(await store.describePromise("ghost", T0)).toBeNull();
    expect(await store.snapshot(T0)).toEqual(before);
  });
}
