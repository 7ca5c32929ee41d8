import { InvalidInputError, type PromiseRequest, type StepHook } from "@belay/contract";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PostgresPromiseStore } from "../src/index.js";
import { dropSchema, pgTarget, randomSchema, testPool } from "./pg-target.js";
import { CountingPool, lockWaiters } from "./promise-helpers.js";

// The row cache of PostgresPromiseStore (src/promise-row-cache.ts): an operation whose rows the
// store remembers sends one statement that checks them; when another store (another server
// process) changed any of them, that statement writes nothing and the operation runs again with a
// load, answering exactly what a store that remembers nothing answers. Each test sets up what a
// cache gets wrong — a task another store acquired, a branch member another store created, rows
// another store settled, a reset — and compares the answer with a store whose cache is off.

const target = await pgTarget("promise-row-cache.test.ts");
const url = target.url;
const T = 1_800_000_000_000;
const TARGET_TAGS = { "resonate:target": "poll://any@workers" };
const rootTags = (id: string) => ({ ...TARGET_TAGS, "resonate:origin": id, "resonate:branch": id, "resonate:parent": id });

describe.skipIf(url === undefined)(`postgres promise row cache (${target.reason})`, () => {
  let pool: pg.Pool;
  let peerPool: pg.Pool;
  const schemas: string[] = [];
  const opened: PostgresPromiseStore[] = [];

  beforeAll(() => {
    pool = testPool(url!, 10);
    peerPool = testPool(url!, 10);
  });

  afterAll(async () => {
    for (const store of opened) await store.close();
    for (const schema of schemas) await dropSchema(pool, schema);
    await pool?.end();
    await peerPool?.end();
    await target.stop();
  });

  /**
   * A store that remembers rows (its statements counted), a peer that does too (another process),
   * and a plain store that remembers nothing (the reference answer), all on one fresh schema.
   */
  async function stores(prefix: string, rowCache = 4096) {
    const schema = randomSchema(prefix);
    schemas.push(schema);
    const counting = new CountingPool(pool);
    const store = new PostgresPromiseStore({ pool: counting, schema, rowCache });
    const peer = new PostgresPromiseStore({ pool: peerPool, schema });
    const plain = new PostgresPromiseStore({ pool: peerPool, schema, rowCache: 0 });
    opened.push(store, peer, plain);
    await store.migrate();
    /** The statements of `store` running `request`, by their first words. */
    const traced = async (request: PromiseRequest, now: number) => {
      counting.reset();
      const answer = await store.handle(request, now);
      return { answer, statements: counting.statements.map((s) => s.split(" ").slice(0, 2).join(" ")) };
    };
    return { store, peer, plain, traced, schema };
  }

  const create = (id: string, tags: Record<string, string> = rootTags(id), param: { data: string } = { data: "cA==" }): PromiseRequest => ({
    kind: "promise.create", id, timeoutAt: T + 3_600_000, tags, param,
  });
  const acquire = (id: string, version: number, pid: string): PromiseRequest => ({ kind: "task.acquire", id, version, pid, ttl: 60_000 });
  const fulfill = (id: string, version: number): PromiseRequest => ({
    kind: "task.fulfill", id, version, action: { kind: "promise.settle", id, state: "resolved", value: { data: "ZA==" } },
  });

  it("a task another store acquired: the remembered acquire's statement writes nothing, the rerun loads and answers 409 as a plain store does", async () => {
    const { store, peer, plain, traced } = await stores("taken");
    expect((await store.handle(create("x"), T)).status).toBe(200);
    expect(await peer.handle(acquire("x", 0, "other"), T + 1)).toMatchObject({ status: 200, data: { task: { version: 1 } } });

    const { answer, statements } = await traced(acquire("x", 0, "mine"), T + 2);
    expect(answer.status).toBe(409);
    expect(answer).toEqual(await plain.handle(acquire("x", 0, "mine"), T + 2));
    // The checked write (refused: the task moved on), then the load; nothing to write.
    expect(statements).toEqual(["WITH guarded_promises", "BEGIN ISOLATION", "SELECT 'p'", "COMMIT"]);
    // The peer's lease stands.
    expect(await plain.handle({ kind: "task.get", id: "x" }, T + 3)).toMatchObject({ status: 200, data: { task: { version: 1, pid: "other" } } });

    // What the store remembered of "x" is forgotten with the refused write: the fulfill at the
    // peer's version loads (its callbacks and listeners are not known again until read) and succeeds.
    const fulfilled = await traced(fulfill("x", 1), T + 4);
    expect(fulfilled.answer).toMatchObject({ status: 200, data: { promise: { state: "resolved" } } });
    expect(fulfilled.statements).toEqual(["BEGIN ISOLATION", "WITH aw", "WITH callbacks_deleted", "COMMIT"]);
  });

  it("a promise another store settled: the remembered fulfill does not settle it again; the answer and the row are the peer's", async () => {
    const { store, peer, plain, traced } = await stores("settled");
    await store.handle(create("y"), T);
    expect((await store.handle(acquire("y", 0, "w"), T + 1)).status).toBe(200);
    // Another process (holding a stale view of nothing) settles the promise from outside.
    expect(await peer.handle({ kind: "promise.settle", id: "y", state: "rejected", value: { data: "bm8=" } }, T + 2)).toMatchObject({ status: 200 });

    const { answer, statements } = await traced(fulfill("y", 1), T + 3);
    expect(statements[0]).toBe("WITH guarded_promises");
    expect(statements.length).toBeGreaterThan(1);
    expect(answer).toEqual(await plain.handle(fulfill("y", 1), T + 3));
    expect(await plain.handle({ kind: "promise.get", id: "y" }, T + 4)).toMatchObject({ status: 200, data: { promise: { state: "rejected", value: { data: "bm8=" } } } });
  });

  it("a branch member another store created: the remembered acquire's branch check fails and the preload has the member", async () => {
    const { store, peer, traced } = await stores("branch");
    await store.handle(create("root"), T);
    // The store presumed its new root the only member of its branch; a peer adds another.
    const child = { ...rootTags("root"), "resonate:scope": "local" };
    delete (child as Record<string, string>)["resonate:target"];
    expect((await peer.handle(create("root.1", child), T + 1)).status).toBe(200);

    const { answer, statements } = await traced(acquire("root", 0, "w"), T + 2);
    expect(answer).toMatchObject({ status: 200, data: { preload: [{ id: "root.1" }] } });
    expect(statements).toEqual(["WITH guarded_promises", "BEGIN ISOLATION", "SELECT 'p'", "WITH executes_deleted", "COMMIT"]);

    // Known now, with its member: a second root's own branch check passes, one statement.
    await store.handle(create("other"), T + 3);
    expect((await traced(acquire("other", 0, "w"), T + 4)).statements).toEqual(["WITH guarded_promises"]);
  });

  it("an operation decided on remembered rows that writes nothing still checks them: a stale 409 is never answered", async () => {
    const { store, peer, plain, traced } = await stores("nowrite");
    await store.handle(create("z"), T);
    // From the store's memory the task is pending at version 0: releasing it is a 409 that writes nothing, checked by one statement.
    const unchanged = await traced({ kind: "task.release", id: "z", version: 0 }, T + 1);
    expect(unchanged.answer.status).toBe(409);
    expect(unchanged.statements).toEqual(["WITH guarded_promises"]);
    // A peer acquires it; the same release must now be judged on the acquired task.
    await peer.handle(acquire("z", 0, "p"), T + 2);
    const release: PromiseRequest = { kind: "task.release", id: "z", version: 1 };
    const { answer, statements } = await traced(release, T + 3);
    expect(answer.status).toBe(200);
    expect(statements.slice(0, 2)).toEqual(["WITH guarded_promises", "BEGIN ISOLATION"]);
    expect(await plain.handle({ kind: "task.get", id: "z" }, T + 4)).toMatchObject({ status: 200, data: { task: { state: "pending" } } });
  });

  it("two stores that both remember a pending task acquire it at once: exactly one wins", async () => {
    const { store, peer, plain } = await stores("race");
    for (let i = 0; i < 20; i++) {
      const id = `r${i}`;
      await store.handle(create(id), T);
      // The peer learns the rows by reading them.
      expect((await peer.handle({ kind: "task.get", id }, T)).status).toBe(200);
      const answers = await Promise.all([store.handle(acquire(id, 0, "a"), T + 1), peer.handle(acquire(id, 0, "b"), T + 1)]);
      expect(answers.map((a) => a.status).sort()).toEqual([200, 409]);
      const winner = answers[0]!.status === 200 ? "a" : "b";
      expect(await plain.handle({ kind: "task.get", id }, T + 2)).toMatchObject({ data: { task: { version: 1, pid: winner } } });
    }
  });

  it("a reset by another store: every remembered row is gone, and the store answers 404 from the empty tables", async () => {
    const { store, peer, traced } = await stores("reset");
    await store.handle(create("gone"), T);
    await peer.reset();
    const { answer } = await traced(acquire("gone", 0, "w"), T + 1);
    expect(answer.status).toBe(404);
  });

  it("rows with more than 16 KiB of JSON are not remembered, and the least recently used promise is forgotten first", async () => {
    const { store, traced } = await stores("bounds", 2);
    await store.handle(create("big", rootTags("big"), { data: "x".repeat(20_000) }), T);
    expect((await traced(acquire("big", 0, "w"), T + 1)).statements).toHaveLength(4);
    for (const id of ["a", "b", "c"]) await store.handle(create(id), T);
    // "a" was pushed out by "c" (two remembered at most); "b" and "c" are known.
    expect((await traced(acquire("a", 0, "w"), T + 1)).statements).toHaveLength(4);
    expect((await traced(acquire("c", 0, "w"), T + 1)).statements).toEqual(["WITH guarded_promises"]);
  });

  it("only an operation's first load comes from the cache: a late heartbeat that times out one promise still has the other task checked", async () => {
    const { store, peer, plain } = await stores("second");
    await store.handle({ kind: "promise.create", id: "a", timeoutAt: T + 1_000, tags: rootTags("a") }, T);
    await store.handle(create("b"), T);
    await store.handle(acquire("a", 0, "w1"), T + 1);
    await store.handle(acquire("b", 0, "w1"), T + 1);
    // Through another process, "b" moves on to another worker.
    expect((await peer.handle({ kind: "task.release", id: "b", version: 1 }, T + 2)).status).toBe(200);
    expect(await peer.handle(acquire("b", 1, "w2"), T + 3)).toMatchObject({ status: 200, data: { task: { version: 2 } } });
    // w1's heartbeat comes after "a"'s deadline: "a" times out (its callbacks and listeners are a
    // second load), and "b" is no longer w1's to renew.
    expect((await store.handle({ kind: "task.heartbeat", pid: "w1", tasks: [{ id: "a", version: 1 }, { id: "b", version: 1 }] }, T + 2_000)).status).toBe(200);
    expect(await plain.handle({ kind: "task.get", id: "b" }, T + 2_001)).toMatchObject({ status: 200, data: { task: { state: "acquired", version: 2, pid: "w2" } } });
    expect(await plain.handle({ kind: "promise.get", id: "a" }, T + 2_001)).toMatchObject({ status: 200, data: { promise: { state: "rejected_timedout" } } });
  });

  it("a callback registered by another store while a remembered fulfill waits for the awaiter's lock is deleted with the rest", async () => {
    const { store, peer, plain } = await stores("awaiting");
    await store.handle(create("x"), T);
    await store.handle(acquire("x", 0, "w"), T + 1);
    await peer.handle({ kind: "promise.create", id: "q", timeoutAt: T + 3_600_000, tags: {} }, T + 1);
    // The peer registers x as an awaiter of q and parks before its commit, holding x's lock.
    let release!: () => void;
    let parked!: () => void;
    const isParked = new Promise<void>((resolve) => (parked = resolve));
    const released = new Promise<void>((resolve) => (release = resolve));
    const hook: StepHook = async (point) => {
      if (point.operation !== "promise.register_callback" || point.step !== "commit") return;
      parked();
      await released;
    };
    peer.setStepHook!(hook);
    const registering = peer.handle({ kind: "promise.register_callback", awaited: "q", awaiter: "x" }, T + 2);
    await isParked;
    // The store's fulfill of x, from what it remembers: one statement, which waits for x's lock.
    const fulfilling = store.handle(fulfill("x", 1), T + 3);
    await lockWaiters(pool, 1);
    release();
    expect((await registering).status).toBe(200);
    peer.setStepHook!(null);
    expect(await fulfilling).toMatchObject({ status: 200, data: { promise: { state: "resolved" } } });
    // x is done: it awaits nothing (the peer's callback went with the fulfill), and q has no awaiter left.
    expect((await plain.describePromise("x", T + 4))?.awaiting).toEqual([]);
    expect((await plain.describePromise("q", T + 4))?.awaiters).toEqual([]);
  });

  it("a promise created again after another store's reset is not mistaken for the one remembered", async () => {
    const { store, peer, traced } = await stores("again");
    await store.handle(create("p", rootTags("p"), { data: "b2xk" }), T);
    await peer.reset();
    expect((await peer.handle(create("p", rootTags("p"), { data: "bmV3" }), T)).status).toBe(200);
    const { answer, statements } = await traced(acquire("p", 0, "w"), T + 1);
    expect(answer).toMatchObject({ status: 200, data: { promise: { param: { data: "bmV3" } } } });
    expect(statements[0]).toBe("WITH guarded_promises");
    expect(statements.length, "the remembered row was refused and the acquire loaded").toBeGreaterThan(1);
  });

  it("a callback the promise awaits raises its revision but keeps what the store knows of it: the awaiter's fulfill is still one statement", async () => {
    const { store, plain, traced } = await stores("awaiter");
    await store.handle(create("x"), T);
    await store.handle(acquire("x", 0, "w"), T + 1);
    await store.handle({ kind: "promise.create", id: "q", timeoutAt: T + 3_600_000, tags: {} }, T + 1);
    const registered = await traced({ kind: "promise.register_callback", awaited: "q", awaiter: "x" }, T + 2);
    expect(registered.answer.status).toBe(200);
    expect(registered.statements).toEqual(["WITH guarded_promises"]);
    const fulfilled = await traced(fulfill("x", 1), T + 3);
    expect(fulfilled.answer).toMatchObject({ status: 200, data: { promise: { state: "resolved" } } });
    expect(fulfilled.statements).toEqual(["WITH guarded_promises"]);
    expect((await plain.describePromise("x", T + 4))?.awaiting).toEqual([]);
  });

  it("rowCache is checked: an integer from 0 to 1,000,000", () => {
    for (const rowCache of [-1, 1.5, 2_000_000, Number.NaN]) {
      expect(() => new PostgresPromiseStore({ connectionString: url!, rowCache })).toThrow(InvalidInputError);
      expect(() => new PostgresPromiseStore({ connectionString: url!, rowCache })).toThrow(/rowCache/);
    }
  });
});
