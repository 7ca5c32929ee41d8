import { InvalidInputError, type PromiseRequest, type PromiseResponse, type QueryRow } from "@belay/contract";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { CommitGroup } from "../src/commit-group.js";
import { PostgresPromiseStore } from "../src/index.js";
import { BorrowedClient, adHoc } from "../src/session.js";
import { pgTarget, testDatabase } from "./pg-target.js";
import { CountingPool, lockWaiters } from "./promise-helpers.js";
import { until } from "./support/until.js";

// Group commit in PostgresPromiseStore (src/commit-group.ts): operations whose whole work is one
// statement, sent by concurrent callers, share a transaction and its commit. The store tests check
// what a caller must not be able to tell apart from a store that commits every operation alone
// (the answers, the rows, committed before answered) and that the sharing happened; the group
// tests drive a CommitGroup with plain UPDATEs through what goes wrong in a shared transaction (a
// lock held elsewhere, a connection lost). Waiting is made certain by row locks another
// connection holds, never by timing.

const target = await pgTarget("promise-commit-group.test.ts");
const url = target.url;
const T = 1_800_000_000_000;
const TARGET_TAGS = { "resonate:target": "poll://any@workers" };
const rootTags = (id: string) => ({ ...TARGET_TAGS, "resonate:origin": id, "resonate:branch": id, "resonate:parent": id });

const create = (id: string): PromiseRequest => ({ kind: "promise.create", id, timeoutAt: T + 3_600_000, tags: rootTags(id), param: { data: "cA==" } });
const acquire = (id: string, version: number, pid: string): PromiseRequest => ({ kind: "task.acquire", id, version, pid, ttl: 60_000 });
const fulfill = (id: string, version: number): PromiseRequest => ({
  kind: "task.fulfill", id, version, action: { kind: "promise.settle", id, state: "resolved", value: { data: "ZA==" } },
});

/**
 * The number of statements inside each BEGIN … COMMIT, per connection checkout (a `CountingPool`'s
 * statements of different connections interleave), the group's `SET LOCAL` not counted.
 */
function transactionSizes(counting: CountingPool): number[] {
  const sizes: number[] = [];
  const open = new Map<number, number>();
  counting.statements.forEach((s, i) => {
    const connection = counting.connections[i]!;
    if (s.startsWith("BEGIN")) open.set(connection, 0);
    else if (s.startsWith("COMMIT")) {
      if (open.has(connection)) sizes.push(open.get(connection)!);
      open.delete(connection);
    } else if (open.has(connection) && !s.startsWith("SET LOCAL")) open.set(connection, open.get(connection)! + 1);
  });
  return sizes;
}

/** Whether `promise` has settled (after every callback already due has run). */
async function isSettled(promise: Promise<unknown>): Promise<boolean> {
  let settled = false;
  void promise.then(
    () => (settled = true),
    () => (settled = true),
  );
  await new Promise((resolve) => setImmediate(resolve));
  return settled;
}

/** A connection holding row locks of `table` (`ids`), in a transaction, until `release`. */
async function holdRows(table: string, ids: readonly string[]) {
  const holder = new pg.Client({ connectionString: url! });
  await holder.connect();
  await holder.query("BEGIN");
  await holder.query(`SELECT 1 FROM ${table} WHERE id = ANY($1) FOR UPDATE`, [ids]);
  return {
    release: async () => {
      await holder.query("ROLLBACK");
      await holder.end();
    },
  };
}

describe.skipIf(url === undefined)(`postgres promise group commit (${target.reason})`, () => {
  // The pool pipelines, as a store's own pool does: group commit needs it.
  const { pool, schema: newSchema } = testDatabase(target, 20, { pipeline: true });
  const opened: PostgresPromiseStore[] = [];
  afterAll(async () => {
    for (const store of opened) await store.close();
  });

  /** A grouping store (its statements counted) and a plain one on another schema (the reference), plus a peer on the first. */
  async function stores(prefix: string, groupCommit: number) {
    const schema = newSchema(prefix);
    const plainSchema = newSchema(`${prefix}_plain`);
    const counting = new CountingPool(pool);
    const store = new PostgresPromiseStore({ pool: counting, schema, groupCommit });
    const plain = new PostgresPromiseStore({ pool, schema: plainSchema, groupCommit: 0 });
    const peer = new PostgresPromiseStore({ pool, schema, groupCommit: 0, rowCache: 0 });
    opened.push(store, plain, peer);
    await store.migrate();
    await plain.migrate();
    return { store, plain, peer, counting, schema };
  }

  /**
   * Fills every slot of `store`'s commit group: acquires of `ids` (created by `store`, so each is
   * one statement going out alone) wait for row locks another connection holds. `release` lets
   * them through; `answers` are theirs.
   */
  async function fillSlots(store: PostgresPromiseStore, schema: string, ids: readonly string[]) {
    for (const id of ids) await store.handle(create(id), T);
    const held = await holdRows(`"${schema}".promises`, ids);
    const answers = Promise.all(ids.map((id) => store.handle(acquire(id, 0, "blocked"), T + 1)));
    await lockWaiters(pool, ids.length);
    return { answers, release: held.release };
  }

  it("twenty concurrent callers: their operations share transactions, and every answer and row is what a store committing each alone gives", async () => {
    const { store, plain, peer, counting, schema } = await stores("many", 2);
    const ids = Array.from({ length: 20 }, (_, i) => `p${i}`);
    // Both slots busy, so the twenty creates wait, then go out together.
    const slots = await fillSlots(store, schema, ["h1", "h2"]);
    counting.reset();
    const creating = Promise.all(ids.map((id) => store.handle(create(id), T)));
    // Every waiting create but one (which keeps its connection for the shared transaction) gave its connection back.
    await until(() => counting.released >= ids.length - 1, "19 connections given back");
    await slots.release();
    expect((await slots.answers).map((a) => a.status)).toEqual([200, 200]);
    const answers: PromiseResponse[][] = [await creating];
    const sizes = transactionSizes(counting);
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(ids.length);
    expect(Math.max(...sizes)).toBeGreaterThan(1);
    const reference: PromiseResponse[][] = [await Promise.all(ids.map((id) => plain.handle(create(id), T)))];
    // The acquires and fulfills: concurrent, grouped as they come; each fulfill is read back by another connection once answered.
    answers.push(await Promise.all(ids.map((id) => store.handle(acquire(id, 0, `w-${id}`), T + 1))));
    reference.push(await Promise.all(ids.map((id) => plain.handle(acquire(id, 0, `w-${id}`), T + 1))));
    const seen: unknown[] = [];
    answers.push(
      await Promise.all(
        ids.map(async (id) => {
          const answer = await store.handle(fulfill(id, 1), T + 2);
          seen.push(await peer.handle({ kind: "promise.get", id }, T + 3));
          return answer;
        }),
      ),
    );
    reference.push(await Promise.all(ids.map((id) => plain.handle(fulfill(id, 1), T + 2))));
    expect(answers).toEqual(reference);
    for (const step of answers) for (const answer of step) expect(answer.status).toBe(200);
    expect(seen).toHaveLength(ids.length);
    for (const got of seen) expect(got).toMatchObject({ status: 200, data: { promise: { state: "resolved", value: { data: "ZA==" } } } });
    for (const id of ids) expect(await peer.handle({ kind: "task.get", id }, T + 3)).toMatchObject({ status: 200, data: { task: { state: "fulfilled" } } });
  });

  it("concurrent acquires of one task at one version, among others: exactly one wins, the others answer 409", async () => {
    const { store, peer, schema } = await stores("race", 1);
    for (const id of ["x", "a", "b", "c"]) await store.handle(create(id), T);
    // The slot busy: all six wait, and the three on "x" can never share a transaction.
    const slots = await fillSlots(store, schema, ["h"]);
    const answers = Promise.all([
      store.handle(acquire("a", 0, "w"), T + 1),
      store.handle(acquire("x", 0, "one"), T + 1),
      store.handle(acquire("b", 0, "w"), T + 1),
      store.handle(acquire("x", 0, "two"), T + 1),
      store.handle(acquire("c", 0, "w"), T + 1),
      store.handle(acquire("x", 0, "three"), T + 1),
    ]);
    await slots.release();
    const answered = await answers;
    const onX = [answered[1]!, answered[3]!, answered[5]!];
    expect(onX.map((a) => a.status).sort()).toEqual([200, 409, 409]);
    for (const i of [0, 2, 4]) expect(answered[i]!.status).toBe(200);
    const winner = ["one", "two", "three"][onX.findIndex((a) => a.status === 200)];
    expect(await peer.handle({ kind: "task.get", id: "x" }, T + 2)).toMatchObject({ status: 200, data: { task: { state: "acquired", version: 1, pid: winner } } });
  });

  it("a duplicate create inside a shared transaction: the transaction is undone, each statement runs alone, only the duplicate reads", async () => {
    const { store, plain, peer, counting, schema } = await stores("dup", 1);
    // Created by another process: this store presumes the id new, and its plain insert fails.
    expect((await peer.handle(create("taken"), T)).status).toBe(200);
    await plain.handle(create("taken"), T);
    const slots = await fillSlots(store, schema, ["h"]);
    counting.reset();
    const ids = ["n1", "n2", "n3", "taken", "n4", "n5", "n6", "n7", "n8"];
    const creating = Promise.all(ids.map((id) => store.handle(create(id), T + 1)));
    await until(() => counting.released >= ids.length - 1, "8 connections given back");
    await slots.release();
    await slots.answers;
    const answers = await creating;
    expect(answers).toEqual(await Promise.all(ids.map((id) => plain.handle(create(id), T + 1))));
    // The nine went out in one transaction, which failed; then each ran again alone.
    expect(transactionSizes(counting)).toEqual([9]);
    expect(counting.statements.filter((s) => s.startsWith("WITH")).length).toBeGreaterThanOrEqual(2 * ids.length);
    // The stored "taken" is the peer's, untouched; every other id exists.
    expect(await peer.handle({ kind: "promise.get", id: "taken" }, T + 2)).toMatchObject({ status: 200, data: { promise: { createdAt: T } } });
    for (const id of ids) expect((await peer.handle({ kind: "promise.get", id }, T + 2)).status).toBe(200);
  });

  it("groupCommit is checked: an integer from 0 to 64", () => {
    for (const groupCommit of [-1, 1.5, 65, Number.NaN]) {
      expect(() => new PostgresPromiseStore({ connectionString: url!, groupCommit })).toThrow(InvalidInputError);
      expect(() => new PostgresPromiseStore({ connectionString: url!, groupCommit })).toThrow(/groupCommit/);
    }
  });

  describe("a CommitGroup on plain rows", () => {
    /** A table of counters `ids` at 0, a group of one slot on the pool, and how to bump a counter through it. */
    async function counters(prefix: string, ids: readonly string[], lockTimeoutMs: number) {
      const schema = newSchema(prefix);
      await pool.query(`CREATE SCHEMA "${schema}"`);
      const table = `"${schema}".counters`;
      await pool.query(`CREATE TABLE ${table} (id text PRIMARY KEY, n int NOT NULL)`);
      await pool.query(`INSERT INTO ${table} SELECT unnest($1::text[]), 0`, [ids]);
      const group = new CommitGroup(pool, 1, 64, lockTimeoutMs);
      const bump = adHoc(`UPDATE ${table} SET n = n + 1 WHERE id = $1 RETURNING n`);
      /** How many bumps have reached the group. */
      const submitted = { count: 0 };
      /** Bumps `id` through the group, on a connection of the caller's own. */
      const run = async (id: string): Promise<QueryRow[]> => {
        const borrowed = await BorrowedClient.of(pool, "test");
        submitted.count++;
        let released = false;
        const release = () => {
          if (released) return;
          released = true;
          borrowed.release();
        };
        try {
          return await group.run(bump, [id], [id], { borrowed, release });
        } finally {
          release();
        }
      };
      const counts = async () => {
        const { rows } = await pool.query<{ id: string; n: number }>(`SELECT id, n FROM ${table} ORDER BY id`);
        return Object.fromEntries(rows.map((r) => [r.id, r.n]));
      };
      /** Bumps `ids` through the group, once every one of them waits there. */
      const waitingRuns = async (ids: readonly string[]) => {
        const before = submitted.count;
        const runs = ids.map((id) => run(id));
        await until(() => submitted.count >= before + ids.length, `${ids.length} bumps at the group`);
        return runs;
      };
      /**
       * a goes alone and waits for a lock; b, c and d wait behind it, then share one transaction,
       * in which c waits for a lock held elsewhere (`onC`). Returns once that transaction is sent.
       */
      const stuckAtC = async () => {
        const first = await holdRows(table, ["a"]);
        const blockedAlone = run("a");
        await lockWaiters(pool, 1);
        const onC = await holdRows(table, ["c"]);
        const [b, c, d] = (await waitingRuns(["b", "c", "d"])).map((bump) => bump.catch((error: unknown) => ({ error })));
        await first.release();
        expect(await blockedAlone).toEqual([{ n: 1 }]);
        return { b: b!, c: c!, d: d!, onC };
      };
      return { run, stuckAtC, counts };
    }

    it("a lock held elsewhere: the shared transaction gives up after its lock timeout, the others are answered, the blocked one when the lock goes", async () => {
      const { stuckAtC, counts } = await counters("timeout", ["a", "b", "c", "d"], 50);
      const { b, c, d, onC } = await stuckAtC();
      // Given up after 50 ms: b and d ran again alone and are answered; c waits alone for its lock.
      expect(await b).toEqual([{ n: 1 }]);
      expect(await d).toEqual([{ n: 1 }]);
      await lockWaiters(pool, 1);
      expect(await isSettled(c)).toBe(false);
      await onC.release();
      expect(await c).toEqual([{ n: 1 }]);
      // Each bumped once: nothing of the undone transaction stayed, nothing ran twice.
      expect(await counts()).toEqual({ a: 1, b: 1, c: 1, d: 1 });
    });

    it("a connection lost in a shared transaction: every statement it carried fails with the connection's error, and nothing of them is committed", async () => {
      const { run, stuckAtC, counts } = await counters("lost", ["a", "b", "c", "d"], 60_000);
      const { b, c, d, onC } = await stuckAtC();
      // The shared transaction has bumped b and waits at c: its backend is ended.
      await lockWaiters(pool, 1);
      const { rows } = await pool.query(
        "SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()",
      );
      expect(rows).toHaveLength(1);
      for (const outcome of await Promise.all([b, c, d])) expect(outcome).toMatchObject({ error: { code: "57P01" } });
      await onC.release();
      expect(await counts()).toEqual({ a: 1, b: 0, c: 0, d: 0 });
      // The lost connection did not go back to the pool: the group goes on.
      expect(await Promise.all(["b", "c", "d"].map((id) => run(id)))).toEqual([[{ n: 1 }], [{ n: 1 }], [{ n: 1 }]]);
    });
  });
});
