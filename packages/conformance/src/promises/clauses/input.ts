import { MAX_DURATION_MS, MAX_INSTANT, type PromiseRequest, type PromiseStore } from "@belay/contract";
import { expect } from "vitest";
import { promiseClause } from "../clause.js";
import { DEADLINE, LISTENER, MINUTE, T0, TARGET_TAGS, TTL, createPromise, createRequest, expectInvalid, expectUnchanged, holdTask, ok } from "../fixtures.js";
import type { PromiseSuiteContext } from "../suite-context.js";

// Malformed requests: refused by the contract's checks (the protocol's 400) with
// InvalidInputError naming the field, identically on every store, before anything is written —
// never a driver error, never text stored changed. Bounds are checked at and one past the bound.

/** Text no store keeps as given: a NUL, a lone high surrogate, a lone low surrogate. */
const ODD_TEXT: readonly [string, string][] = [
  ["a NUL", "a\u0000b"],
  ["a lone high surrogate", "a\ud800"],
  ["a lone low surrogate", "\udc00a"],
];

/** Asserts every case is refused naming its field, and that none of them wrote anything. */
async function refusedAll(store: PromiseStore, cases: readonly [PromiseRequest, string | RegExp][], what: string, now = T0): Promise<void> {
  await expectUnchanged(
    store,
    async () => {
      for (const [request, field] of cases) await expectInvalid(() => store.handle(request, now), field, `${what}: ${request.kind}`);
    },
    now,
    what,
  );
}

const SCHEDULE = { kind: "schedule.create", id: "s1", cron: "* * * * *", promiseId: "{{.id}}.{{.timestamp}}", promiseTimeout: MINUTE, promiseTags: TARGET_TAGS, nextRunAt: T0 + MINUTE } as const;

export function promiseInputClauses(ctx: PromiseSuiteContext): void {
  promiseClause("input: text a store cannot hold faithfully (NUL, lone surrogates) is refused in every id, pid and cursor, naming the field", async () => {
    const store = await ctx.store();
    await holdTask(store, "root");
    for (const [what, text] of ODD_TEXT) {
      const settle = { kind: "promise.settle", id: "root:1", state: "resolved" } as const;
      const cases: [PromiseRequest, string][] = [
        [{ kind: "promise.get", id: text }, "id"],
        [createRequest(text), "id"],
        [{ ...settle, id: text }, "id"],
        [{ kind: "promise.register_callback", awaited: text, awaiter: "root" }, "awaited"],
        [{ kind: "promise.register_callback", awaited: "root:1", awaiter: text }, "awaiter"],
        [{ kind: "promise.register_listener", awaited: text, address: LISTENER }, "awaited"],
        [{ kind: "promise.search", cursor: text }, "cursor"],
        [{ kind: "task.get", id: text }, "id"],
        [{ kind: "task.create", pid: text, ttl: TTL, action: createRequest("t", { tags: TARGET_TAGS }) }, "pid"],
        [{ kind: "task.create", pid: "w1", ttl: TTL, action: createRequest(text, { tags: TARGET_TAGS }) }, "action.id"],
        [{ kind: "task.acquire", id: text, version: 0, pid: "w1", ttl: TTL }, "id"],
        [{ kind: "task.acquire", id: "root", version: 0, pid: text, ttl: TTL }, "pid"],
        [{ kind: "task.release", id: text, version: 1 }, "id"],
        [{ kind: "task.fulfill", id: text, version: 1, action: { ...settle, id: text } }, "id"],
        [{ kind: "task.suspend", id: "root", version: 1, actions: [{ kind: "promise.register_callback", awaited: text, awaiter: "root" }] }, "actions[0].awaited"],
        [{ kind: "task.fence", id: "root", version: 1, action: createRequest(text) }, "action.id"],
        [{ kind: "task.fence", id: "root", version: 1, action: { ...settle, id: text } }, "action.id"],
        [{ kind: "task.heartbeat", pid: text, tasks: [] }, "pid"],
        [{ kind: "task.heartbeat", pid: "w1", tasks: [{ id: text, version: 1 }] }, "tasks[0].id"],
        [{ kind: "task.halt", id: text }, "id"],
        [{ kind: "task.continue", id: text }, "id"],
        [{ kind: "task.search", cursor: text }, "cursor"],
        [{ kind: "schedule.get", id: text }, "id"],
        [{ kind: "schedule.delete", id: text }, "id"],
        [{ ...SCHEDULE, id: text }, "id"],
        [{ ...SCHEDULE, cron: text }, "cron"],
        [{ ...SCHEDULE, promiseId: text }, "promiseId"],
        [{ kind: "schedule.search", cursor: text }, "cursor"],
      ];
      await refusedAll(store, cases, what);
    }
  });

  promiseClause("input: NUL and lone surrogates in tags, params, values, headers and addresses are refused naming the field", async () => {
    const store = await ctx.store();
    await createPromise(store, "p1");
    for (const [what, text] of ODD_TEXT) {
      const cases: [PromiseRequest, string | RegExp][] = [
        [createRequest("p2", { tags: { [text]: "v" } }), /^tags\./],
        [createRequest("p2", { tags: { k: text } }), "tags.k"],
        [createRequest("p2", { param: { data: text } }), "param.data"],
        [createRequest("p2", { param: { headers: { h: text } } }), "param.headers.h"],
        [createRequest("p2", { param: { headers: { [text]: "v" } } }), /^param\.headers\./],
        [{ kind: "promise.settle", id: "p1", state: "resolved", value: { data: text } }, "value.data"],
        [{ kind: "promise.register_listener", awaited: "p1", address: `poll://uni@g/${text}` }, "address"],
        [{ kind: "promise.search", tags: { k: text } }, "tags.k"],
        [{ ...SCHEDULE, promiseParam: { data: text } }, "promiseParam.data"],
        [{ ...SCHEDULE, promiseTags: { ...TARGET_TAGS, k: text } }, "promiseTags.k"],
      ];
      await refusedAll(store, cases, what);
    }
  });

  promiseClause("input: two ids that differ only in a lone surrogate never collide — both are refused", async () => {
    const store = await ctx.store();
    await expectInvalid(() => store.handle(createRequest("id\ud800"), T0), "id");
    await expectInvalid(() => store.handle(createRequest("id\udbff"), T0), "id");
    expect((await store.snapshot(T0)).promises).toEqual([]);
  });

  promiseClause("input: numbers out of range — negative, fractional, NaN, infinite, unsafe or not numbers — are refused naming the field", async () => {
    const store = await ctx.store();
    await holdTask(store, "root");
    const bad: readonly unknown[] = [-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53, "5"];
    for (const value of bad) {
      const n = value as number;
      const cases: [PromiseRequest, string][] = [
        [createRequest("p", { timeoutAt: n }), "timeoutAt"],
        [{ kind: "task.acquire", id: "root", version: n, pid: "w1", ttl: TTL }, "version"],
        [{ kind: "task.release", id: "root", version: n }, "version"],
        [{ kind: "task.acquire", id: "root", version: 0, pid: "w1", ttl: n }, "ttl"],
        [{ kind: "task.create", pid: "w1", ttl: n, action: createRequest("t", { tags: TARGET_TAGS }) }, "ttl"],
        [{ kind: "task.create", pid: "w1", ttl: TTL, action: createRequest("t", { tags: TARGET_TAGS, timeoutAt: n }) }, "action.timeoutAt"],
        [{ kind: "task.heartbeat", pid: "w1", tasks: [{ id: "root", version: n }] }, "tasks[0].version"],
        [{ kind: "promise.search", limit: n }, "limit"],
        [{ kind: "task.search", limit: n }, "limit"],
        [{ kind: "schedule.search", limit: n }, "limit"],
        [{ ...SCHEDULE, promiseTimeout: n }, "promiseTimeout"],
        [{ ...SCHEDULE, nextRunAt: n }, "nextRunAt"],
      ];
      await refusedAll(store, cases, `value ${String(value)}`);
      await expectInvalid(() => store.handle({ kind: "promise.get", id: "root" }, n), "now", `now = ${String(value)}`);
    }
  });

  promiseClause("input: numeric bounds — ttl up to MAX_DURATION_MS, limits 1..1000, nextRunAt and now up to MAX_INSTANT; one past each is refused", async () => {
    const store = await ctx.store();
    await ok(store, createRequest("p1", { tags: TARGET_TAGS }));
    expect((await ok(store, { kind: "task.acquire", id: "p1", version: 0, pid: "w1", ttl: MAX_DURATION_MS })).task.ttl).toBe(MAX_DURATION_MS);
    await expectInvalid(() => store.handle({ kind: "task.acquire", id: "p1", version: 1, pid: "w1", ttl: MAX_DURATION_MS + 1 }, T0), "ttl");
    await expectInvalid(() => store.handle({ kind: "task.acquire", id: "p1", version: 1, pid: "w1", ttl: 0 }, T0), "ttl");
    for (const kind of ["promise.search", "task.search", "schedule.search"] as const) {
      await ok(store, { kind, limit: 1 });
      await ok(store, { kind, limit: 1000 });
      await expectInvalid(() => store.handle({ kind, limit: 0 }, T0), "limit");
      await expectInvalid(() => store.handle({ kind, limit: 1001 }, T0), "limit");
    }
    expect((await ok(store, { ...SCHEDULE, nextRunAt: MAX_INSTANT })).schedule.nextRunAt).toBe(MAX_INSTANT);
    await expectInvalid(() => store.handle({ ...SCHEDULE, id: "s2", nextRunAt: MAX_INSTANT + 1 }, T0), "nextRunAt");
    await ok(store, { kind: "promise.get", id: "p1" }, MAX_INSTANT);
    await expectInvalid(() => store.handle({ kind: "promise.get", id: "p1" }, MAX_INSTANT + 1), "now");
  });

  promiseClause("input: ids, tag keys and values, addresses and crons are accepted at their bound and refused one past it, naming the field", async () => {
    const store = await ctx.store();
    const { bounds } = store.capabilities;
    const pad = (prefix: string, length: number) => prefix + "x".repeat(length - prefix.length);
    await ok(store, createRequest(pad("p", bounds.idLength)));
    await expectInvalid(() => store.handle(createRequest(pad("q", bounds.idLength + 1)), T0), "id");
    await ok(store, createRequest("k", { tags: { [pad("k", bounds.tagKeyLength)]: "v" } }));
    await expectInvalid(() => store.handle(createRequest("k2", { tags: { [pad("k", bounds.tagKeyLength + 1)]: "v" } }), T0), /^tags\./);
    await ok(store, createRequest("v", { tags: { k: pad("v", bounds.tagValueLength) } }));
    await expectInvalid(() => store.handle(createRequest("v2", { tags: { k: pad("v", bounds.tagValueLength + 1) } }), T0), "tags.k");
    await ok(store, { kind: "promise.register_listener", awaited: "v", address: pad("poll://uni@g/", bounds.addressLength) });
    await expectInvalid(() => store.handle({ kind: "promise.register_listener", awaited: "v", address: pad("poll://uni@g/", bounds.addressLength + 1) }, T0), "address");
    await ok(store, { ...SCHEDULE, cron: pad("* * * * *", bounds.cronLength) });
    await expectInvalid(() => store.handle({ ...SCHEDULE, id: "s2", cron: pad("* * * * *", bounds.cronLength + 1) }, T0), "cron");
    const snapshot = await store.snapshot(T0);
    expect(snapshot.promises.map((p) => p.id.length).sort((a, b) => a - b)).toEqual([1, 1, bounds.idLength]);
  });

  promiseClause("input: tags per promise are accepted at the bound and refused one past it", async () => {
    const store = await ctx.store();
    const { tagsPerPromise } = store.capabilities.bounds;
    const tags = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`t${i}`, "v"]));
    expect(Object.keys((await ok(store, createRequest("at", { tags: tags(tagsPerPromise) }))).promise.tags)).toHaveLength(tagsPerPromise);
    await refusedAll(store, [[createRequest("over", { tags: tags(tagsPerPromise + 1) }), "tags"]], "tags over the bound");
  });

  promiseClause("input: a param or value is accepted at valueBytes UTF-8 bytes (headers counted, multi-byte text by its bytes) and refused one byte past", async () => {
    const store = await ctx.store();
    const { valueBytes } = store.capabilities.bounds;
    // "é" is one character but two UTF-8 bytes.
    const twoByte = "é".repeat(Math.floor(valueBytes / 2));
    const exact = valueBytes % 2 === 0 ? twoByte : twoByte + "x";
    await ok(store, createRequest("at", { param: { data: exact } }));
    await refusedAll(store, [
      [createRequest("over", { param: { data: exact + "x" } }), "param"],
      [createRequest("over", { param: { data: exact.slice(2), headers: { ab: "cde" } } }), "param"],
    ], "a param over the bound");
    await createPromise(store, "p1");
    await ok(store, { kind: "promise.settle", id: "p1", state: "resolved", value: { data: "x".repeat(valueBytes - 2), headers: { a: "b" } } });
    expect((await store.snapshot(T0)).promises.find((p) => p.id === "at")?.param.data).toBe(exact);
  });

  promiseClause("input: heartbeat tasks and suspend callbacks are accepted at their bound and refused one past it (bounds given at creation are in force)", async () => {
    const store = await ctx.store({ bounds: { heartbeatTasks: 3, suspendActions: 2 } });
    expect(store.capabilities.bounds).toMatchObject({ heartbeatTasks: 3, suspendActions: 2 });
    await holdTask(store, "root");
    for (const id of ["root:1", "root:2", "root:3"]) await createPromise(store, id);
    const tasks = (n: number) => Array.from({ length: n }, () => ({ id: "root", version: 1 }));
    await ok(store, { kind: "task.heartbeat", pid: "w1", tasks: tasks(3) });
    const callbacks = (n: number) => ["root:1", "root:2", "root:3"].slice(0, n).map((awaited) => ({ kind: "promise.register_callback" as const, awaited, awaiter: "root" }));
    await refusedAll(store, [
      [{ kind: "task.heartbeat", pid: "w1", tasks: tasks(4) }, "tasks"],
      [{ kind: "task.suspend", id: "root", version: 1, actions: callbacks(3) }, "actions"],
    ], "over the bound");
    expect((await store.handle({ kind: "task.suspend", id: "root", version: 1, actions: callbacks(2) }, T0)).status).toBe(200);
  });

  promiseClause("input: a smaller idLength given at creation is in force", async () => {
    const store = await ctx.store({ bounds: { idLength: 8 } });
    expect(store.capabilities.bounds.idLength).toBe(8);
    await ok(store, createRequest("12345678"));
    await expectInvalid(() => store.handle(createRequest("123456789"), T0), "id");
  });

  promiseClause("input: malformed shapes are refused naming the field — unknown kind, empty ids, bad states, tags and values of the wrong shape, bad addresses", async () => {
    const store = await ctx.store();
    await createPromise(store, "p1");
    const cases: [PromiseRequest, string | RegExp][] = [
      [{ kind: "promise.frobnicate", id: "p1" } as never, "kind"],
      [{ kind: "promise.get", id: "" }, "id"],
      [{ kind: "promise.get" } as never, "id"],
      [{ kind: "promise.settle", id: "p1", state: "rejected_timedout" } as never, "state"],
      [{ kind: "promise.settle", id: "p1", state: "pending" } as never, "state"],
      [{ kind: "promise.search", state: "done" } as never, "state"],
      [{ kind: "task.search", state: "running" } as never, "state"],
      [createRequest("p2", { tags: ["a"] as never }), "tags"],
      [createRequest("p2", { tags: { k: 1 } as never }), "tags.k"],
      [createRequest("p2", { tags: { "": "v" } }), /^tags\./],
      [createRequest("p2", { param: "text" as never }), "param"],
      [createRequest("p2", { param: { data: "x", extra: "y" } as never }), "param.extra"],
      [createRequest("p2", { param: { data: 5 } as never }), "param.data"],
      [createRequest("p2", { param: { headers: { h: 5 } } as never }), "param.headers.h"],
      [createRequest("p2", { tags: { "resonate:target": "not an address" } }), "tags.resonate:target"],
      [{ kind: "promise.register_listener", awaited: "p1", address: "nowhere" }, "address"],
      [{ kind: "promise.register_listener", awaited: "p1", address: "poll://has space" }, "address"],
      [{ kind: "task.heartbeat", pid: "w1", tasks: "all" } as never, "tasks"],
      [{ kind: "task.heartbeat", pid: "w1", tasks: [null] } as never, "tasks[0]"],
    ];
    await refusedAll(store, cases, "malformed");
    await expectInvalid(() => store.handle(null as never, T0), "request");
  });

  promiseClause("input: resonate:delay must be an instant before timeoutAt on a targeted promise, and task.create needs a target and takes no delay", async () => {
    const store = await ctx.store();
    const delay = (value: string, tags: Record<string, string> = TARGET_TAGS) => createRequest("d", { tags: { ...tags, "resonate:delay": value } });
    const rpc = (tags: Record<string, string>) => ({ kind: "task.create" as const, pid: "w1", ttl: TTL, action: createRequest("t", { tags }) });
    await refusedAll(store, [
      [delay("soon"), "tags.resonate:delay"],
      [delay("-5"), "tags.resonate:delay"],
      [delay(String(T0), {}), "tags.resonate:delay"],
      [delay(String(DEADLINE)), "tags.resonate:delay"],
      [rpc({}), "action.tags.resonate:target"],
      [rpc({ ...TARGET_TAGS, "resonate:delay": String(T0 + 1) }), "action.tags.resonate:delay"],
      [{ kind: "task.create", pid: "w1", ttl: TTL, action: { kind: "promise.settle", id: "t", state: "resolved" } } as never, "action.kind"],
      [{ kind: "task.fulfill", id: "t", version: 1, action: { kind: "promise.settle", id: "other", state: "resolved" } }, "action.id"],
      [{ kind: "task.fulfill", id: "t", version: 1, action: createRequest("t") } as never, "action.kind"],
    ], "delay and actions");
    await ok(store, delay(String(DEADLINE - 1)));
  });
}
