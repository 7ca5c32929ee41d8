import type { JobStore } from "@belay/contract";
import { expect, it } from "vitest";
import { clause } from "../clause.js";
import { expectBelayError } from "../fixtures.js";
import type { TransactionalEnqueueFixture, TransactionalSuiteContext } from "../run-transactional-enqueue-conformance.js";

/**
 * How long the suite waits for a hint after its commit before it calls the hint lost (PostgreSQL
 * delivers NOTIFY over a socket): generous, so that a loaded machine is not mistaken for a loss.
 */
const HINT_DEADLINE_MS = 30_000;
/** How long the suite watches for a hint that must not come yet. */
const QUIET_MS = 300;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Collects a store's wake-up hints. */
function listen(store: JobStore): { heard: string[]; stop: () => void; until: (queue: string) => Promise<boolean> } {
  const heard: string[] = [];
  const stop = store.subscribeHints!((queue) => heard.push(queue));
  const until = async (queue: string): Promise<boolean> => {
    const deadline = Date.now() + HINT_DEADLINE_MS;
    while (!heard.includes(queue)) {
      if (Date.now() > deadline) return false;
      await sleep(10);
    }
    return true;
  };
  return { heard, stop, until };
}

/** Commits one job due now on `queue` and waits for its hint: proves the store is listening. */
async function warmUp<Tx>(f: TransactionalEnqueueFixture<Tx>, hints: ReturnType<typeof listen>, queue: string): Promise<void> {
  const tx = await f.begin();
  await f.enqueue(tx, [{ id: `${queue}-job`, queue }]);
  await f.commit(tx);
  expect(await hints.until(queue), `a hint for ${queue} after its commit`).toBe(true);
}

/** A clause that needs a hint-giving store; skipped (with the reason in its title) otherwise. */
function hintClause<Tx>(
  ctx: TransactionalSuiteContext<Tx>,
  title: string,
  body: (f: TransactionalEnqueueFixture<Tx>, hints: ReturnType<typeof listen>) => Promise<void>,
): void {
  it(
    title,
    async (test) => {
      const f = await ctx.fixture();
      if (!f.store.capabilities.wakeUpHints || f.store.subscribeHints === undefined) {
        test.skip(`${title} [not proven: the store gives no wake-up hints]`);
        return;
      }
      const hints = listen(f.store);
      try {
        await body(f, hints);
      } finally {
        hints.stop();
      }
    },
    60_000,
  );
}

/** Every clause of transactional enqueue through a bridge. */
export function transactionalEnqueueClauses<Tx>(ctx: TransactionalSuiteContext<Tx>): void {
  clause("transactional enqueue: commit publishes the business row and the job together", async () => {
    const f = await ctx.fixture();
    const tx = await f.begin();
    await f.writeRow(tx, "order-1");
    const receipts = await f.enqueue(tx, [{ id: "confirm-1", queue: "mail" }]);
    expect(receipts).toEqual([{ id: "confirm-1", status: "created", state: "scheduled" }]);
    expect(await f.store.getJob("confirm-1"), "invisible before the commit").toBeNull();
    expect(await f.committedRows()).not.toContain("order-1");
    await f.commit(tx);
    expect(await f.committedRows()).toContain("order-1");
    expect(await f.store.getJob("confirm-1")).toMatchObject({ id: "confirm-1", queue: "mail", state: "scheduled" });
  });

  clause("transactional enqueue: rollback discards the business row and the job", async () => {
    const f = await ctx.fixture();
    const tx = await f.begin();
    await f.writeRow(tx, "order-1");
    await f.enqueue(tx, [{ id: "confirm-1", queue: "mail" }]);
    await f.rollback(tx);
    expect(await f.committedRows()).not.toContain("order-1");
    expect(await f.store.getJob("confirm-1")).toBeNull();
    expect((await f.store.listJobs()).jobs).toEqual([]);
  });

  clause("transactional enqueue: a savepoint rolled back discards only the jobs enqueued after it", async () => {
    const f = await ctx.fixture();
    const tx = await f.begin();
    await f.writeRow(tx, "order-1");
    await f.enqueue(tx, [{ id: "before", queue: "mail" }]);
    await f.savepoint(tx, "belay_test_sp");
    await f.writeRow(tx, "order-2");
    await f.enqueue(tx, [{ id: "inside", queue: "mail" }, { id: "inside-child", queue: "mail", parentIds: ["before"] }]);
    await f.rollbackToSavepoint(tx, "belay_test_sp");
    await f.enqueue(tx, [{ id: "after", queue: "mail" }]);
    await f.commit(tx);
    expect([...(await f.committedRows())].sort()).toEqual(["order-1"]);
    expect(await f.store.getJob("before")).toMatchObject({ state: "scheduled" });
    expect(await f.store.getJob("after")).toMatchObject({ state: "scheduled" });
    expect(await f.store.getJob("inside")).toBeNull();
    expect(await f.store.getJob("inside-child")).toBeNull();
    expect((await f.store.getDependencies("before"))?.children).toEqual([]);
  });

  clause("transactional enqueue: a failure before commit leaves nothing", async () => {
    const f = await ctx.fixture();
    const tx = await f.begin();
    await f.writeRow(tx, "order-1");
    await f.enqueue(tx, [{ id: "confirm-1", queue: "mail" }]);
    await expect(f.writeRow(tx, "order-1"), "a business write that fails").rejects.toBeDefined();
    await f.rollback(tx);
    expect(await f.committedRows()).toEqual([]);
    expect((await f.store.listJobs()).jobs).toEqual([]);
  });

  clause("transactional enqueue: a refused call writes nothing and leaves the transaction usable", async () => {
    const f = await ctx.fixture();
    const tx = await f.begin();
    await f.writeRow(tx, "order-1");
    await expectBelayError(
      () => f.enqueue(tx, [{ id: "fine", queue: "mail" }, { id: "orphan", queue: "mail", parentIds: ["nowhere"] }]),
      "BELAY_UNKNOWN_PARENT",
    );
    await f.enqueue(tx, [{ id: "kept", queue: "mail" }]);
    await f.commit(tx);
    expect(await f.committedRows()).toEqual(["order-1"]);
    expect(await f.store.getJob("kept")).toMatchObject({ state: "scheduled" });
    expect(await f.store.getJob("fine")).toBeNull();
    expect(await f.store.getJob("orphan")).toBeNull();
  });

  clause("transactional enqueue: a committed transaction is refused, and nothing is written", async () => {
    const f = await ctx.fixture();
    const tx = await f.begin();
    await f.enqueue(tx, [{ id: "in-time", queue: "mail" }]);
    await f.commit(tx);
    await expectBelayError(() => f.enqueue(tx, [{ id: "late", queue: "mail" }]), "BELAY_INVALID_TRANSACTION");
    await expectBelayError(
      () => f.enqueueWorkflow(tx, { id: "late-flow", name: "late", jobs: [{ id: "late-member", queue: "mail" }] }),
      "BELAY_INVALID_TRANSACTION",
    );
    expect(await f.store.getJob("late")).toBeNull();
    expect(await f.store.getWorkflow("late-flow")).toBeNull();
    expect(await f.store.getJob("in-time")).toMatchObject({ state: "scheduled" });
  });

  clause("transactional enqueue: a rolled-back transaction is refused, and nothing is written", async () => {
    const f = await ctx.fixture();
    const tx = await f.begin();
    await f.rollback(tx);
    await expectBelayError(() => f.enqueue(tx, [{ id: "late", queue: "mail" }]), "BELAY_INVALID_TRANSACTION");
    expect((await f.store.listJobs()).jobs).toEqual([]);
  });

  clause("transactional enqueue: a batch commits whole, its parent edges included", async () => {
    const f = await ctx.fixture();
    const tx = await f.begin();
    const receipts = await f.enqueue(tx, [
      { id: "parent", queue: "work" },
      { id: "child", queue: "work", parentIds: ["parent"] },
      { id: "other", queue: "mail" },
    ]);
    expect(receipts.map((r) => [r.id, r.status, r.state])).toEqual([
      ["parent", "created", "scheduled"],
      ["child", "created", "awaitingParents"],
      ["other", "created", "scheduled"],
    ]);
    expect((await f.store.listJobs()).jobs, "invisible before the commit").toEqual([]);
    await f.commit(tx);
    expect((await f.store.listJobs()).jobs.map((j) => j.id).sort()).toEqual(["child", "other", "parent"]);
    expect((await f.store.getDependencies("child"))?.parents.map((p) => p.jobId)).toEqual(["parent"]);
  });

  clause("transactional enqueue: a rolled-back batch leaves no job and no edge", async () => {
    const f = await ctx.fixture();
    const tx = await f.begin();
    await f.enqueue(tx, [{ id: "parent", queue: "work" }]);
    await f.enqueue(tx, [{ id: "child", queue: "work", parentIds: ["parent"] }, { id: "other", queue: "mail" }]);
    await f.rollback(tx);
    expect((await f.store.listJobs()).jobs).toEqual([]);
    expect(await f.store.getDependencies("parent")).toBeNull();
  });

  clause("transactional enqueue: a job may name a parent enqueued earlier in the same transaction", async () => {
    const f = await ctx.fixture();
    const tx = await f.begin();
    await f.enqueue(tx, [{ id: "first", queue: "work" }]);
    const [child] = await f.enqueue(tx, [{ id: "second", queue: "work", parentIds: ["first"] }]);
    expect(child).toMatchObject({ status: "created", state: "awaitingParents" });
    await f.commit(tx);
    expect((await f.store.getDependencies("second"))?.parents.map((p) => p.jobId)).toEqual(["first"]);
  });

  clause("transactional enqueue: a duplicate id returns the committed job unchanged", async () => {
    const f = await ctx.fixture();
    const first = await f.begin();
    await f.enqueue(first, [{ id: "once", queue: "mail" }]);
    await f.commit(first);
    const before = await f.store.getJob("once");
    const second = await f.begin();
    const receipts = await f.enqueue(second, [{ id: "once", queue: "elsewhere" }]);
    expect(receipts).toEqual([{ id: "once", status: "duplicate", state: "scheduled" }]);
    await f.commit(second);
    expect(await f.store.getJob("once")).toEqual(before);
  });

  clause("transactional enqueue: a workflow commits whole with the transaction", async () => {
    const f = await ctx.fixture();
    const tx = await f.begin();
    await f.writeRow(tx, "order-1");
    const result = await f.enqueueWorkflow(tx, {
      id: "fulfil-1",
      name: "fulfil",
      jobs: [
        { id: "pick", queue: "work" },
        { id: "pack", queue: "work", parentIds: ["pick"] },
        { id: "ship", queue: "work", parentIds: ["pack"] },
      ],
    });
    expect(result.status).toBe("created");
    expect(await f.store.getWorkflow("fulfil-1"), "invisible before the commit").toBeNull();
    await f.commit(tx);
    expect(await f.store.getWorkflow("fulfil-1")).toMatchObject({ id: "fulfil-1", jobCount: 3, status: "running" });
    expect(await f.store.getJob("ship")).toMatchObject({ state: "awaitingParents", workflowId: "fulfil-1" });
  });

  clause("transactional enqueue: a workflow in a rolled-back transaction never existed", async () => {
    const f = await ctx.fixture();
    const tx = await f.begin();
    await f.enqueueWorkflow(tx, { id: "fulfil-1", name: "fulfil", jobs: [{ id: "pick", queue: "work" }, { id: "pack", queue: "work", parentIds: ["pick"] }] });
    await f.rollback(tx);
    expect(await f.store.getWorkflow("fulfil-1")).toBeNull();
    expect((await f.store.listJobs()).jobs).toEqual([]);
    const again = await f.begin();
    expect((await f.enqueueWorkflow(again, { id: "fulfil-1", name: "fulfil", jobs: [{ id: "pick", queue: "work" }] })).status).toBe("created");
    await f.commit(again);
  });

  hintClause(ctx, "transactional enqueue: wake-up hints fire only after the commit — none before, at least one after", async (f, hints) => {
    await warmUp(f, hints, "warm-up");
    const tx = await f.begin();
    await f.writeRow(tx, "order-1");
    await f.enqueue(tx, [{ id: "confirm-1", queue: "hinted" }]);
    await sleep(QUIET_MS);
    expect(hints.heard, "no hint before the commit").not.toContain("hinted");
    await f.commit(tx);
    expect(await hints.until("hinted"), "a hint after the commit").toBe(true);
  });

  hintClause(ctx, "transactional enqueue: a rolled-back transaction sends no wake-up hint", async (f, hints) => {
    await warmUp(f, hints, "warm-up");
    const tx = await f.begin();
    await f.enqueue(tx, [{ id: "discarded-1", queue: "discarded" }]);
    await f.rollback(tx);
    // A later commit's hint arrives after any the rolled-back transaction could have sent.
    await warmUp(f, hints, "later");
    expect(hints.heard).not.toContain("discarded");
  });

  it(
    "transactional enqueue: a transaction on another database is refused, and nothing is written",
    async (test) => {
      const f = await ctx.fixture();
      if (f.beginElsewhere === undefined) {
        test.skip("[not proven: the fixture grants no beginElsewhere]");
        return;
      }
      const tx = await f.beginElsewhere();
      try {
        await expectBelayError(() => f.enqueue(tx, [{ id: "astray", queue: "mail" }]), "BELAY_INVALID_TRANSACTION");
        await expectBelayError(
          () => f.enqueueWorkflow(tx, { id: "astray-flow", name: "astray", jobs: [{ id: "astray-member", queue: "mail" }] }),
          "BELAY_INVALID_TRANSACTION",
        );
      } finally {
        await f.rollback(tx);
      }
      expect(await f.store.getJob("astray")).toBeNull();
      expect(await f.store.getWorkflow("astray-flow")).toBeNull();
    },
    60_000,
  );
}
