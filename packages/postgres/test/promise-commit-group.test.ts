import { InvalidInputError, type PromiseRequest, type PromiseResponse } from "@belay/contract";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { PostgresPromiseStore } from "../src/index.js";
import { pgTarget, testDatabase } from "./pg-target.js";
import { CountingPool, lockWaiters } from "./promise-helpers.js";

// Group commit in PostgresPromiseStore (src/commit-group.ts): operations whose whole work is one
// statement, sent by concurrent callers, share a transaction and its commit. Each test checks what
// a caller must not be able to tell apart from a store that commits every operation alone (the
// answers, the rows, nothing committed on a failure) and that the sharing happened at all.

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

/** Statements between a BEGIN and its COMMIT, per transaction, of one connection's sequence (`first words` as counted). */
function transactionSizes(statements: readonly string[]): number[] {
  const sizes: number[] = [];
  let open: number | null = null;
  for (const s of statements) {
    if (s.startsWith("BEGIN")) open = 0;
    else if (s.startsWith("COMMIT")) {
      if (open !== null) sizes.push(open);
      open = null;
    } else if (open !== null) open++;
  }
  return sizes;
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

  it("twenty concurrent callers: their operations share transactions, and every answer and row is what a store committing each alone gives", async () => {
    const { store, plain, peer, counting } = await stores("many", 2);
    const ids = Array.from({ length: 20 }, (_, i) => `p${i}`);
    const step = (s: PromiseStore2, build: (id: string) => PromiseRequest, now: number) => Promise.all(ids.map((id) => s.handle(build(id), now)));
    const answers: PromiseResponse[][] = [];
    const reference: PromiseResponse[][] = [];
    for (const [build, now] of [[create, T], [(id: string) => acquire(id, 0, `w-${id}`), T + 1], [(id: string) => fulfill(id, 1), T + 2]] as const) {
      answers.push(await step(store, build, now));
      reference.push(await step(plain, build, now));
    }
    expect(answers).toEqual(reference);
    for (const step of answers) for (const answer of step) expect(answer.status).toBe(200);
    // Shared: some transaction carried several callers' statements, so fewer commits than operations.
    const sizes = transactionSizes(counting.statements);
    expect(Math.max(...sizes)).toBeGreaterThan(1);
    // Committed before answered: another connection reads every promise settled and every task fulfilled.
    for (const id of ids) {
      expect(await peer.handle({ kind: "promise.get", id }, T + 3)).toMatchObject({ status: 200, data: { promise: { state: "resolved", value: { data: "ZA==" } } } });
      expect(await peer.handle({ kind: "task.get", id }, T + 3)).toMatchObject({ status: 200, data: { task: { state: "fulfilled" } } });
    }
  });

  it("concurrent acquires of one task at one version, among others: exactly one wins, the others answer 409", async () => {
    const { store, peer } = await stores("race", 4);
    for (const id of ["x", "a", "b", "c"]) await store.handle(create(id), T);
    const answers = await Promise.all([
      store.handle(acquire("a", 0, "w"), T + 1),
      store.handle(acquire("x", 0, "one"), T + 1),
      store.handle(acquire("b", 0, "w"), T + 1),
      store.handle(acquire("x", 0, "two"), T + 1),
      store.handle(acquire("c", 0, "w"), T + 1),
      store.handle(acquire("x", 0, "three"), T + 1),
    ]);
    const onX = [answers[1]!, answers[3]!, answers[5]!];
    expect(onX.map((a) => a.status).sort()).toEqual([200, 409, 409]);
    for (const i of [0, 2, 4]) expect(answers[i]!.status).toBe(200);
    const winner = ["one", "two", "three"][onX.findIndex((a) => a.status === 200)];
    expect(await peer.handle({ kind: "task.get", id: "x" }, T + 2)).toMatchObject({ status: 200, data: { task: { state: "acquired", version: 1, pid: winner } } });
  });

  it("a duplicate create inside a shared transaction: the transaction is undone, each statement runs alone, only the duplicate reads", async () => {
    // One transaction at a time: the first create goes alone, the nine behind it share the next.
    const { store, plain, peer, counting } = await stores("dup", 1);
    // Created by another process: this store presumes the id new, and its plain insert fails.
    expect((await peer.handle(create("taken"), T)).status).toBe(200);
    await plain.handle(create("taken"), T);
    counting.reset();
    const ids = ["first", "n1", "n2", "n3", "taken", "n4", "n5", "n6", "n7", "n8"];
    const answers = await Promise.all(ids.map((id) => store.handle(create(id), T + 1)));
    const reference = await Promise.all(ids.map((id) => plain.handle(create(id), T + 1)));
    expect(answers).toEqual(reference);
    // The shared transaction failed, and its statements ran again alone: more creates than callers.
    expect(transactionSizes(counting.statements)).toContain(9);
    expect(counting.statements.filter((s) => s.startsWith("ROLLBACK"))).toEqual([]);
    const creates = counting.statements.filter((s) => s.startsWith("WITH")).length;
    expect(creates).toBeGreaterThanOrEqual(ids.length + 9);
    // The stored "taken" is the peer's, untouched; every other id exists once.
    expect(await peer.handle({ kind: "promise.get", id: "taken" }, T + 2)).toMatchObject({ status: 200, data: { promise: { createdAt: T } } });
    for (const id of ids) expect((await peer.handle({ kind: "promise.get", id }, T + 2)).status).toBe(200);
  });

  it("a connection lost in a shared transaction: every caller it carried gets TransientStoreError, and nothing of theirs is committed", async () => {
    const { store, peer, schema } = await stores("lost", 1);
    const ids = ["q0", "q1", "q2", "q3", "q4"];
    for (const id of ids) await store.handle(create(id), T);
    // Another process holds q3's row: the shared transaction waits there, its first statements done.
    const holder = new pg.Client({ connectionString: url! });
    await holder.connect();
    try {
      await holder.query("BEGIN");
      await holder.query(`SELECT 1 FROM "${schema}".promises WHERE id = 'q3' FOR UPDATE`);
      // q0 goes alone (and commits); q1..q4 share the next transaction, which waits for q3's lock.
      const acquiring = ids.map((id) => store.handle(acquire(id, 0, "w"), T + 1).catch((error: unknown) => error));
      await expect(acquiring[0]).resolves.toMatchObject({ status: 200 });
      await lockWaiters(pool, 1);
      const { rows } = await pool.query(
        "SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()",
      );
      expect(rows.length).toBe(1);
      for (const outcome of await Promise.all(acquiring.slice(1))) expect(outcome).toMatchObject({ code: "BELAY_TRANSIENT_STORE" });
    } finally {
      await holder.query("ROLLBACK");
      await holder.end();
    }
    // q1 and q2 ran before the lock, in the transaction lost: undone with it.
    for (const id of ["q1", "q2", "q3", "q4"]) {
      expect(await peer.handle({ kind: "task.get", id }, T + 2)).toMatchObject({ status: 200, data: { task: { state: "pending", version: 0 } } });
    }
    expect(await peer.handle({ kind: "task.get", id: "q0" }, T + 2)).toMatchObject({ status: 200, data: { task: { state: "acquired", version: 1 } } });
    // The store goes on: a fresh connection, the same acquires succeed.
    for (const id of ["q1", "q2", "q3", "q4"]) expect((await store.handle(acquire(id, 0, "w"), T + 3)).status).toBe(200);
  });

  it("groupCommit is checked: an integer from 0 to 64", () => {
    for (const groupCommit of [-1, 1.5, 65, Number.NaN]) {
      expect(() => new PostgresPromiseStore({ connectionString: url!, groupCommit })).toThrow(InvalidInputError);
      expect(() => new PostgresPromiseStore({ connectionString: url!, groupCommit })).toThrow(/groupCommit/);
    }
  });
});

type PromiseStore2 = Pick<PostgresPromiseStore, "handle">;
