import type { ConformanceTransaction } from "../suite-context.js";
import type { JobStore, QueryExecutor } from "@belay/contract";
import { expect } from "vitest";
import { clauseNeeding } from "../clause.js";
import { allJobIds, claimJobs, enqueueJobs, expectBelayError, newJob, stateOf, T0 } from "../fixtures.js";
import type { SuiteContext } from "../suite-context.js";

// The `enqueueThrough` capability: enqueue inside a transaction that another driver holds open,
// the store's statements running on that transaction's connection through an executor.

async function begin(ctx: SuiteContext, store: JobStore): Promise<ConformanceTransaction & { executor: QueryExecutor }> {
  const tx = await ctx.hooks.beginTransaction!(store);
  if (tx.executor === undefined) {
    await tx.rollback();
    throw new Error(`${ctx.name} declares capabilities.enqueueThrough but its hooks.beginTransaction gives no executor`);
  }
  return tx as ConformanceTransaction & { executor: QueryExecutor };
}

/** Without the capability, the call is refused loudly and writes nothing. */
function refused(ctx: SuiteContext): () => Promise<void> {
  return async () => {
    const store = await ctx.store();
    const executor: QueryExecutor = { query: async () => [] };
    await expectBelayError(() => store.enqueueThrough!(executor, { jobs: [newJob("t1")], now: T0 }), "BELAY_TRANSACTION_NOT_SUPPORTED");
    await expectBelayError(
      () => store.enqueueWorkflowThrough!(executor, { workflow: { id: "wf", name: "wf", jobs: [newJob("m1")] }, now: T0 }),
      "BELAY_TRANSACTION_NOT_SUPPORTED",
    );
    expect(await allJobIds(store)).toEqual([]);
  };
}

export function throughClauses(ctx: SuiteContext): void {
  clauseNeeding(ctx, "enqueueThrough", "enqueueThrough: the jobs exist only once the caller's transaction commits", async () => {
    const store = await ctx.store();
    const tx = await begin(ctx, store);
    const { result, afterCommit } = await store.enqueueThrough!(tx.executor, { jobs: [newJob("t1"), newJob("t2", { parentIds: ["t1"] })], now: T0 });
    expect(result.map((r) => r.status)).toEqual(["created", "created"]);
    await tx.commit();
    afterCommit();
    expect(await stateOf(store, "t1")).toBe("scheduled");
    expect(await stateOf(store, "t2")).toBe("awaitingParents");
    expect((await claimJobs(store)).map((j) => j.id)).toEqual(["t1"]);
  }, refused(ctx));

  clauseNeeding(ctx, "enqueueThrough", "enqueueThrough: a rolled-back transaction leaves nothing behind", async () => {
    const store = await ctx.store();
    const tx = await begin(ctx, store);
    await store.enqueueThrough!(tx.executor, { jobs: [newJob("t1", { tags: [{ key: "k", value: "v" }] })], now: T0 });
    await store.enqueueWorkflowThrough!(tx.executor, { workflow: { id: "wf", name: "wf", jobs: [newJob("m1")] }, now: T0 });
    await tx.rollback();
    expect(await allJobIds(store)).toEqual([]);
    expect(await store.getWorkflow("wf")).toBeNull();
    await enqueueJobs(store, [newJob("t1")]);
  }, refused(ctx));

  clauseNeeding(ctx, "enqueueThrough", "enqueueThrough: a rejected call writes nothing and leaves the caller's transaction usable", async () => {
    const store = await ctx.store();
    const tx = await begin(ctx, store);
    const { result } = await store.enqueueThrough!(tx.executor, { jobs: [newJob("ok"), newJob("bad", { parentIds: ["missing"] })], now: T0 });
    expect(result.map((r) => r.status)).toEqual(["notWritten", "rejected"]);
    const second = await store.enqueueThrough!(tx.executor, { jobs: [newJob("after")], now: T0 });
    expect(second.result.map((r) => r.status)).toEqual(["created"]);
    await tx.commit();
    second.afterCommit();
    expect(await allJobIds(store)).toEqual(["after"]);
  }, refused(ctx));

  clauseNeeding(ctx, "enqueueThrough", "enqueueThrough: a duplicate id answers duplicate with the existing job, inside the transaction too", async () => {
    const store = await ctx.store();
    await enqueueJobs(store, [newJob("d1", { payload: '{"v":1}' })]);
    const tx = await begin(ctx, store);
    const { result } = await store.enqueueThrough!(tx.executor, { jobs: [newJob("d1", { payload: '{"v":2}' })], now: T0 });
    expect(result).toEqual([{ id: "d1", status: "duplicate", state: "scheduled" }]);
    await tx.commit();
    expect((await store.getJob("d1"))?.payload).toBe('{"v":1}');
  }, refused(ctx));

  clauseNeeding(ctx, "enqueueThrough", "enqueueThrough: an executor that is not inside an open transaction is refused and writes nothing", async () => {
    const store = await ctx.store();
    const tx = await begin(ctx, store);
    await tx.commit();
    // The transaction has finished: its connection no longer holds one.
    await expectBelayError(() => store.enqueueThrough!(tx.executor, { jobs: [newJob("late")], now: T0 }), "BELAY_INVALID_TRANSACTION");
    await expectBelayError(
      () => store.enqueueThrough!({ query: "not a function" } as unknown as QueryExecutor, { jobs: [newJob("late")], now: T0 }),
      "BELAY_INVALID_TRANSACTION",
    );
    expect(await store.getJob("late")).toBeNull();
  }, refused(ctx));

  clauseNeeding(ctx, "enqueueThrough", "enqueueThrough: a malformed request throws InvalidInputError naming the field and writes nothing", async () => {
    const store = await ctx.store();
    const tx = await begin(ctx, store);
    try {
      await expectBelayError(() => store.enqueueThrough!(tx.executor, { jobs: "nope" as never, now: T0 }), "BELAY_INVALID_INPUT", { field: "jobs" });
      await expectBelayError(() => store.enqueueThrough!(tx.executor, { jobs: [newJob("j")], now: "soon" as never }), "BELAY_INVALID_INPUT", {
        field: "now",
      });
      await expectBelayError(() => store.enqueueWorkflowThrough!(tx.executor, { workflow: null as never, now: T0 }), "BELAY_INVALID_INPUT", {
        field: "workflow",
      });
    } finally {
      await tx.rollback();
    }
    expect(await allJobIds(store)).toEqual([]);
  }, refused(ctx));
}
