import { type EnqueueRequest, type EnqueueResult, type NewJob, TransientStoreError } from "@belay/contract";
import type pg from "pg";
import { describe, expect, it } from "vitest";
import { EnqueueCoalescer } from "../src/enqueue-coalescer.js";
import { type PostgresPool, PostgresStore } from "../src/index.js";
import { dropSchema, pgTarget, randomSchema, testDatabase } from "./pg-target.js";

// Group commit of concurrent enqueues: the coalescer on its own (a fake statement), then the
// store on a real PostgreSQL, where concurrent callers must get exactly their own results.

const job = (id: string, extra: Partial<NewJob> = {}): NewJob => ({ id, jobName: "j", queue: "q", payload: "{}", dueAt: 0, ...extra });

/** The next turn of the event loop: when a freed slot starts its next statement. */
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Turns of the event loop until `condition` holds (a few at most: nothing here waits for I/O). */
async function turnsUntil(condition: () => boolean): Promise<void> {
  for (let turn = 0; turn < 20 && !condition(); turn++) await nextTurn();
  expect(condition()).toBe(true);
}

describe("EnqueueCoalescer", () => {
  /** A fake statement that records each request and resolves when told to. */
  function rig(maxInFlight: number, maxJobs = 100) {
    const statements: { request: EnqueueRequest; finish: (error?: Error) => void }[] = [];
    const coalescer = new EnqueueCoalescer(
      (request) =>
        new Promise<readonly EnqueueResult[]>((resolve, reject) =>
          statements.push({
            request,
            finish: (error) =>
              error ? reject(error) : resolve(request.jobs.map((j) => ({ id: j.id, status: "created", state: "scheduled", seq: 1 }))),
          }),
        ),
      maxInFlight,
      maxJobs,
    );
    return { coalescer, statements };
  }

  it("runs a call at once while a slot is free, and shares the next statement among the calls that waited", async () => {
    const { coalescer, statements } = rig(1);
    const first = coalescer.enqueue({ jobs: [job("a")], now: 1 });
    expect(statements.map((s) => s.request.jobs.map((j) => j.id))).toEqual([["a"]]);
    const second = coalescer.enqueue({ jobs: [job("b"), job("c")], now: 2 });
    const third = coalescer.enqueue({ jobs: [job("d")], now: 5 });
    expect(statements).toHaveLength(1); // both wait for the slot
    statements[0]!.finish();
    expect((await first).map((r) => r.id)).toEqual(["a"]);
    await nextTurn();
    expect(statements).toHaveLength(2);
    expect(statements[1]!.request).toMatchObject({ now: 5 }); // the latest caller's now
    expect(statements[1]!.request.jobs.map((j) => j.id)).toEqual(["b", "c", "d"]);
    statements[1]!.finish();
    expect((await second).map((r) => r.id)).toEqual(["b", "c"]);
    expect((await third).map((r) => r.id)).toEqual(["d"]);
  });

  it("callers answered by a statement that enqueue again at once share the freed slot's next statement", async () => {
    const { coalescer, statements } = rig(2);
    // Two producer loops per slot: each enqueues again as soon as its call is answered.
    const produced: string[] = [];
    const loop = async (name: string, rounds: number) => {
      for (let i = 0; i < rounds; i++) {
        const [result] = await coalescer.enqueue({ jobs: [job(`${name}${i}`)], now: 1 });
        produced.push(result!.id);
      }
    };
    const loops = ["p", "q", "r", "s"].map((name) => loop(name, 2));
    // p0 and q0 run at once (two free slots); r0 and s0 wait and share the next statement.
    expect(statements.map((s) => s.request.jobs.map((j) => j.id))).toEqual([["p0"], ["q0"]]);
    statements[0]!.finish();
    await turnsUntil(() => statements.length === 3);
    expect(statements[2]!.request.jobs.map((j) => j.id)).toEqual(["r0", "s0", "p1"]);
    statements[1]!.finish();
    await turnsUntil(() => statements.length === 4);
    expect(statements[3]!.request.jobs.map((j) => j.id)).toEqual(["q1"]);
    statements[2]!.finish();
    await turnsUntil(() => statements.length === 5);
    expect(statements[4]!.request.jobs.map((j) => j.id)).toEqual(["r1", "s1"]);
    statements[3]!.finish();
    statements[4]!.finish();
    await Promise.all(loops);
    expect(produced.sort()).toEqual(["p0", "p1", "q0", "q1", "r0", "r1", "s0", "s1"]);
    await coalescer.idle();
  });

  it("never puts more than maxJobs jobs in one statement", async () => {
    const { coalescer, statements } = rig(1, 3);
    const calls = [coalescer.enqueue({ jobs: [job("a")], now: 1 })];
    for (const id of ["b", "c", "d", "e"]) calls.push(coalescer.enqueue({ jobs: [job(id)], now: 1 }));
    statements[0]!.finish();
    await calls[0];
    await nextTurn();
    expect(statements[1]!.request.jobs.map((j) => j.id)).toEqual(["b", "c", "d"]);
    statements[1]!.finish();
    await calls[3];
    await nextTurn();
    expect(statements[2]!.request.jobs.map((j) => j.id)).toEqual(["e"]);
    statements[2]!.finish();
    expect((await calls[4]!).map((r) => r.id)).toEqual(["e"]);
  });

  it("a shared statement failing for bad data is run again call by call: only the call at fault fails", async () => {
    const statements: string[][] = [];
    const coalescer = new EnqueueCoalescer(
      async (request) => {
        statements.push(request.jobs.map((j) => j.id));
        if (request.jobs.some((j) => j.id === "bad")) throw new Error('invalid byte sequence for encoding "UTF8": 0x00');
        return request.jobs.map((j) => ({ id: j.id, status: "created" as const, state: "scheduled" as const, seq: 1 }));
      },
      1,
      100,
    );
    const calls = [coalescer.enqueue({ jobs: [job("a")], now: 1 }), coalescer.enqueue({ jobs: [job("b")], now: 1 })];
    calls.push(coalescer.enqueue({ jobs: [job("bad")], now: 1 }), coalescer.enqueue({ jobs: [job("c")], now: 1 }));
    const settled = await Promise.allSettled(calls);
    expect(settled.map((r) => r.status)).toEqual(["fulfilled", "fulfilled", "rejected", "fulfilled"]);
    expect(statements).toEqual([["a"], ["b", "bad", "c"], ["b"], ["bad"], ["c"]]);
  });

  it("a transient fault fails every call of the statement (each may retry); idle() waits for all calls", async () => {
    const { coalescer, statements } = rig(1);
    const first = coalescer.enqueue({ jobs: [job("a")], now: 1 });
    const second = coalescer.enqueue({ jobs: [job("b")], now: 1 });
    const third = coalescer.enqueue({ jobs: [job("c")], now: 1 });
    let idle = false;
    const done = coalescer.idle().then(() => (idle = true));
    statements[0]!.finish();
    await first;
    await nextTurn();
    expect(idle).toBe(false);
    statements[1]!.finish(new TransientStoreError("connection lost"));
    await expect(second).rejects.toBeInstanceOf(TransientStoreError);
    await expect(third).rejects.toBeInstanceOf(TransientStoreError);
    await done;
    expect(statements).toHaveLength(2);
  });

  it("a statement failing again call by call fails only those calls, and the next calls still run", async () => {
    const { coalescer, statements } = rig(1);
    const first = coalescer.enqueue({ jobs: [job("a")], now: 1 });
    const second = coalescer.enqueue({ jobs: [job("b")], now: 1 });
    const third = coalescer.enqueue({ jobs: [job("c")], now: 1 });
    statements[0]!.finish();
    await first;
    await nextTurn();
    statements[1]!.finish(new Error("value refused"));
    // Run again call by call: b alone, then c alone.
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(statements[2]!.request.jobs.map((j) => j.id)).toEqual(["b"]);
    statements[2]!.finish(new Error("value refused"));
    await expect(second).rejects.toThrow("value refused");
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(statements[3]!.request.jobs.map((j) => j.id)).toEqual(["c"]);
    statements[3]!.finish();
    expect((await third).map((r) => r.id)).toEqual(["c"]);
    const fourth = coalescer.enqueue({ jobs: [job("d")], now: 1 });
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(statements).toHaveLength(5);
    statements[4]!.finish();
    expect((await fourth).map((r) => r.id)).toEqual(["d"]);
  });
});

/**
 * `pool` as the store sees it, counting the connections the store checks out: one per operation,
 * each a single autocommit statement or one transaction — one commit either way.
 */
function countingPool(pool: pg.Pool): { pool: PostgresPool; operations: () => number } {
  let operations = 0;
  return {
    pool: {
      connect: () => {
        operations++;
        return pool.connect();
      },
      end: async () => {},
    },
    operations: () => operations,
  };
}

const target = await pgTarget("enqueue-coalescer.test.ts");
const url = target.url;

describe.skipIf(url === undefined)(`postgres: concurrent enqueues share commits (${target.reason})`, () => {
  const { pool, schema: newSchema } = testDatabase(target);
  const schema = newSchema("coalesce");

  it("200 concurrent callers each get their own results in fewer commits; an invalid call or a parent runs alone", async () => {
    const counting = countingPool(pool);
    const store = new PostgresStore({ pool: counting.pool, schema, hints: false });
    await store.migrate();
    await store.enqueue({ jobs: [job("parent")], now: 1 });
    const before = counting.operations();
    const calls = Array.from({ length: 200 }, (_, i) => {
      if (i === 7) return store.enqueue({ jobs: [job("bad", { queue: "" })], now: 1 }); // invalid: alone, rejected
      if (i === 9) return store.enqueue({ jobs: [job("child", { parentIds: ["parent"] })], now: 1 }); // parents: alone
      if (i % 50 === 11) return store.enqueue({ jobs: [job("dup"), job(`pair-${i}`)], now: 1 }); // "dup" four times
      return store.enqueue({ jobs: [job(`one-${i}`)], now: 1 });
    });
    const results = await Promise.all(calls);
    const operations = counting.operations() - before;

    expect(results[7]).toEqual([expect.objectContaining({ id: "bad", status: "rejected" })]);
    expect(results[9]).toEqual([expect.objectContaining({ id: "child", status: "created", state: "awaitingParents" })]);
    const dupStatuses = [11, 61, 111, 161].map((i) => results[i]!.map((r) => `${r.id}:${r.status}`));
    expect(dupStatuses.flat().filter((s) => s === "dup:created")).toHaveLength(1);
    expect(dupStatuses.flat().filter((s) => s === "dup:duplicate")).toHaveLength(3);
    for (const i of [11, 61, 111, 161]) expect(results[i]![1]).toMatchObject({ id: `pair-${i}`, status: "created" });
    for (const [i, r] of results.entries()) {
      if ([7, 9, 11, 61, 111, 161].includes(i)) continue;
      expect(r).toEqual([expect.objectContaining({ id: `one-${i}`, status: "created", state: "scheduled" })]);
    }
    const { rows } = await pool.query(`SELECT count(*)::int AS n FROM "${schema}".jobs`);
    expect(rows[0].n).toBe(1 + 1 + 1 + 4 + 194); // parent, child, dup, pairs, singles
    // Every call is queued before the first statement returns, and two statements run at most at
    // once: the 196 shareable calls need a handful of statements, the two lone calls one each.
    // Counted on this store's own connections, so nothing else on the server can change it.
    console.info(`[coalescer] 200 calls, ${operations} store operations`);
    expect(operations, "store operations (commits) for 200 calls").toBeLessThan(20);
    await store.close();
  });

  it("a job the database refuses fails only its own call; close() lets accepted calls finish", async () => {
    // A refusal only the database can make: every job passes the contract's checks, and a
    // constraint of this test's own schema refuses one of them inside the shared statement.
    const refusing = randomSchema("coalesce_refuse");
    const store = new PostgresStore({ connectionString: url!, schema: refusing, hints: false, enqueueConcurrency: 1 });
    try {
      await store.migrate();
      await pool.query(`ALTER TABLE "${refusing}".jobs ADD CONSTRAINT refuses_doomed CHECK (job_name <> 'doomed')`);
      const calls = [
        store.enqueue({ jobs: [job("ref-a")], now: 1 }),
        store.enqueue({ jobs: [job("ref-b")], now: 1 }),
        store.enqueue({ jobs: [job("ref-bad", { jobName: "doomed" })], now: 1 }),
        store.enqueue({ jobs: [job("ref-c")], now: 1 }),
      ];
      const closing = store.close(); // while three calls still wait for the shared statement
      const settled = await Promise.allSettled(calls);
      await closing;
      expect(settled.map((r) => r.status)).toEqual(["fulfilled", "fulfilled", "rejected", "fulfilled"]);
      const refusal = (settled[2] as PromiseRejectedResult).reason as Error;
      expect(refusal.message, "the database's own refusal").toContain("refuses_doomed");
      const { rows } = await pool.query(`SELECT id FROM "${refusing}".jobs ORDER BY id`);
      expect(rows.map((r) => r.id)).toEqual(["ref-a", "ref-b", "ref-c"]);
    } finally {
      await store.close();
      await dropSchema(pool, refusing);
    }
  });
});
