import { type NewJob, TransactionNotSupportedError, type Tag } from "@belay/contract";
import { expect } from "vitest";
import { clause, clauseNeeding } from "../clause.js";
import { allJobIds, claimJobs, enqueueJobs, expectBelayError, label, leaseJob, newJob, report, stateOf, T0, tag } from "../fixtures.js";
import type { SuiteContext } from "../suite-context.js";

export function enqueueClauses(ctx: SuiteContext): void {
  clause("enqueue: a new job is created scheduled and readable with every field", async () => {
    const store = await ctx.store();
    const tags: Tag[] = [{ key: "", value: "urgent" }, { key: "tenant", value: "acme" }];
    const [result] = await store.enqueue({
      jobs: [newJob("j1", { jobName: "email.send", queue: "mail", payload: '{"to":"a@b.c"}', dueAt: T0 + 5_000, tags, traceContext: "00-abc-01" })],
      now: T0,
    });
    expect(result).toMatchObject({ id: "j1", status: "created", state: "scheduled" });
    expect(await store.getJob("j1")).toMatchObject({
      id: "j1",
      jobName: "email.send",
      queue: "mail",
      payload: '{"to":"a@b.c"}',
      state: "scheduled",
      dueAt: T0 + 5_000,
      attempt: 0,
      releases: 0,
      leaseOwner: null,
      leaseExpiresAt: null,
      cancelRequested: false,
      enqueuedAt: T0,
      terminalAt: null,
      terminalCause: null,
      parentIds: [],
      dependencyMode: "onSuccess",
      tags,
      traceContext: "00-abc-01",
      scheduleId: null,
      workflowId: null,
    });
  });

  clause("enqueue: a call with an actor audits each job it created (not its duplicates) with the jobs; one without audits nothing; an invalid actor writes nothing", async () => {
    const store = await ctx.store();
    await enqueueJobs(store, [newJob("plain")]);
    const results = await store.enqueue({ jobs: [newJob("a", { jobName: "email.send" }), newJob("plain"), newJob("b", { parentIds: ["a"] })], now: T0 + 1, actor: "alice" });
    expect(results.map((r) => r.status)).toEqual(["created", "duplicate", "created"]);
    expect((await store.listAuditRecords({ targetKind: "job" })).records.map(({ seq: _, ...r }) => r)).toEqual([
      { at: T0 + 1, actor: "alice", action: "enqueue", targetKind: "job", target: "a", detail: "email.send" },
      { at: T0 + 1, actor: "alice", action: "enqueue", targetKind: "job", target: "b", detail: newJob("b").jobName },
    ]);
    for (const actor of ["", 7]) {
      await expectBelayError(() => store.enqueue({ jobs: [newJob("c")], now: T0, actor: actor as string }), "BELAY_INVALID_INPUT", { field: "actor" });
    }
    expect(await store.getJob("c")).toBeNull();
    expect((await store.listAuditRecords({})).records).toHaveLength(2);
  });

  clause("enqueue: the payload round-trips byte for byte through getJob and claim", async () => {
    const store = await ctx.store();
    const payload = '{ "b": 1,  "a": "é\\u0000🎉", "n": 1.50 }';
    await enqueueJobs(store, [newJob("j1", { payload })]);
    expect((await store.getJob("j1"))!.payload).toBe(payload);
    const [claimed] = await claimJobs(store);
    expect(claimed!.payload).toBe(payload);
  });

  clause("enqueue: seq rises strictly in enqueue order", async () => {
    const store = await ctx.store();
    const results = await enqueueJobs(store, [newJob("a"), newJob("b"), newJob("c")]);
    const [more] = await enqueueJobs(store, [newJob("d")]);
    const seqs = [...results, more!].map((r) => (r.status === "created" ? r.seq : NaN));
    expect([...seqs].sort((x, y) => x - y)).toEqual(seqs);
    expect(new Set(seqs).size).toBe(4);
  });

  clause("enqueue: duplicate id returns the existing job unchanged", async () => {
    const store = await ctx.store();
    await enqueueJobs(store, [newJob("j1", { payload: '{"v":1}', queue: "q1" })]);
    const before = await store.getJob("j1");
    const [again] = await store.enqueue({ jobs: [newJob("j1", { payload: '{"v":2}', queue: "q2" })], now: T0 + 1 });
    expect(again).toEqual({ id: "j1", status: "duplicate", state: "scheduled" });
    expect(await store.getJob("j1")).toEqual(before);
    expect(await store.getJobHistory("j1")).toHaveLength(1);
  });

  clause("enqueue: duplicate of a job in another state reports that state", async () => {
    const store = await ctx.store();
    const job = await leaseJob(store, "j1");
    await report(store, job, { type: "succeeded" });
    const [again] = await store.enqueue({ jobs: [newJob("j1")], now: T0 });
    expect(again).toEqual({ id: "j1", status: "duplicate", state: "succeeded" });
  });

  clause("enqueue: a repeated id inside one call is a duplicate of the first", async () => {
    const store = await ctx.store();
    const results = await store.enqueue({ jobs: [newJob("j1", { payload: '{"first":true}' }), newJob("j1")], now: T0 });
    expect(results.map((r) => r.status)).toEqual(["created", "duplicate"]);
    expect((await store.getJob("j1"))!.payload).toBe('{"first":true}');
  });

  clause("enqueue: a call with one rejected job writes nothing", async () => {
    const store = await ctx.store();
    const results = await store.enqueue({
      jobs: [newJob("ok1"), newJob("bad", { payload: "x".repeat(70_000) }), newJob("ok2")],
      now: T0,
    });
    expect(results.map((r) => r.status)).toEqual(["notWritten", "rejected", "notWritten"]);
    expect(await allJobIds(store)).toEqual([]);
  });

  clause("enqueue: a payload over the bound is rejected naming limit and size, never truncated", async () => {
    const store = await ctx.store();
    const payload = JSON.stringify("é".repeat(40_000)); // 80,002 bytes of UTF-8
    const [result] = await store.enqueue({ jobs: [newJob("big", { payload })], now: T0 });
    expect(result).toMatchObject({
      status: "rejected",
      rejection: { code: "BELAY_PAYLOAD_TOO_LARGE", field: "payload", bound: "payloadBytes", limit: 65_536, actual: 80_002 },
    });
    expect(await store.getJob("big")).toBeNull();
  });

  clause("enqueue: a payload of exactly the bound in UTF-8 bytes is accepted", async () => {
    const store = await ctx.store({ bounds: { payloadBytes: 10 } });
    const exact = '"éééé"'; // 2 + 4 × 2 = 10 bytes
    const over = '"éééé "'; // 11 bytes
    expect((await store.enqueue({ jobs: [newJob("exact", { payload: exact })], now: T0 }))[0]!.status).toBe("created");
    expect((await store.enqueue({ jobs: [newJob("over", { payload: over })], now: T0 }))[0]).toMatchObject({
      status: "rejected",
      rejection: { code: "BELAY_PAYLOAD_TOO_LARGE", limit: 10, actual: 11 },
    });
  });

  clause("enqueue: every enforced bound rejects with its code, limit and size", async () => {
    const store = await ctx.store({
      bounds: { jobNameLength: 8, idLength: 8, queueNameLength: 7, parents: 1, tagsPerJob: 2, tagKeyLength: 3, tagValueLength: 4, traceContextLength: 6 },
    });
    await enqueueJobs(store, [newJob("p1"), newJob("p2")]);
    const cases: [NewJob, string, string, number, number][] = [
      [newJob("j1", { jobName: "toolong12" }), "BELAY_JOB_NAME_TOO_LONG", "jobName", 8, 9],
      [newJob("123456789"), "BELAY_ID_TOO_LONG", "id", 8, 9],
      [newJob("j2", { queue: "queue123" }), "BELAY_QUEUE_NAME_TOO_LONG", "queue", 7, 8],
      [newJob("j3", { parentIds: ["p1", "p2"] }), "BELAY_TOO_MANY_PARENTS", "parentIds", 1, 2],
      [newJob("j4", { tags: [{ key: "", value: "a" }, { key: "", value: "b" }, { key: "", value: "c" }] }), "BELAY_TOO_MANY_TAGS", "tags", 2, 3],
      [newJob("j5", { tags: [{ key: "long", value: "a" }] }), "BELAY_TAG_KEY_TOO_LONG", "tags[0].key", 3, 4],
      [newJob("j6", { tags: [{ key: "k", value: "value" }] }), "BELAY_TAG_TOO_LONG", "tags[0].value", 4, 5],
      [newJob("j7", { traceContext: "0123456" }), "BELAY_TRACE_CONTEXT_TOO_LONG", "traceContext", 6, 7],
    ];
    for (const [job, code, field, limit, actual] of cases) {
      const [result] = await store.enqueue({ jobs: [job], now: T0 });
      expect(result, code).toMatchObject({ status: "rejected", rejection: { code, field, limit, actual } });
    }
    expect(await allJobIds(store)).toEqual(["p1", "p2"]);
  });

  clause("enqueue: malformed fields are rejected naming the field", async () => {
    const store = await ctx.store();
    const bad = (fields: Record<string, unknown>) => ({ ...newJob("j"), ...fields }) as unknown as NewJob;
    const cases: [NewJob, string][] = [
      [bad({ id: "" }), "id"],
      [bad({ id: 42 }), "id"],
      [bad({ jobName: "" }), "jobName"],
      [bad({ queue: "" }), "queue"],
      [bad({ payload: { a: 1 } }), "payload"],
      [bad({ dueAt: 1.5 }), "dueAt"],
      [bad({ dueAt: Number.NaN }), "dueAt"],
      [bad({ dependencyMode: "sometimes" }), "dependencyMode"],
      [bad({ parentIds: ["j"] }), "parentIds[0]"],
      [bad({ tags: [{ key: "k", value: "" }] }), "tags[0].value"],
      [bad({ traceContext: 7 }), "traceContext"],
    ];
    for (const [job, field] of cases) {
      const [result] = await store.enqueue({ jobs: [job], now: T0 });
      expect(result, field).toMatchObject({ status: "rejected", rejection: { code: "BELAY_INVALID_INPUT", field } });
    }
    expect(await allJobIds(store)).toEqual([]);
  });

  clause("enqueue: a call over the batch bound is rejected whole", async () => {
    const store = await ctx.store({ bounds: { enqueueBatch: 2 } });
    const results = await store.enqueue({ jobs: [newJob("a"), newJob("b"), newJob("c")], now: T0 });
    for (const result of results) {
      expect(result).toMatchObject({ status: "rejected", rejection: { code: "BELAY_BATCH_TOO_LARGE", limit: 2, actual: 3 } });
    }
    expect(await allJobIds(store)).toEqual([]);
  });

  clause("enqueue: a malformed request throws InvalidInputError and writes nothing", async () => {
    const store = await ctx.store();
    await expectBelayError(() => store.enqueue({ jobs: "nope" as never, now: T0 }), "BELAY_INVALID_INPUT", { field: "jobs" });
    await expectBelayError(() => store.enqueue({ jobs: [newJob("j1")], now: "soon" as never }), "BELAY_INVALID_INPUT", { field: "now" });
    expect(await allJobIds(store)).toEqual([]);
  });

  clause("enqueue: an unknown parent is rejected and nothing is written", async () => {
    const store = await ctx.store();
    const results = await store.enqueue({ jobs: [newJob("a"), newJob("child", { parentIds: ["ghost"] })], now: T0 });
    expect(results[1]).toMatchObject({
      status: "rejected",
      rejection: { code: "BELAY_UNKNOWN_PARENT", field: "parentIds", parentId: "ghost" },
    });
    expect(await allJobIds(store)).toEqual([]);
  });

  clause("enqueue: a parent earlier in the same call is accepted; a later one is unknown", async () => {
    const store = await ctx.store();
    const ok = await store.enqueue({ jobs: [newJob("p"), newJob("c", { parentIds: ["p"] })], now: T0 });
    expect(ok.map((r) => r.status)).toEqual(["created", "created"]);
    expect(ok[1]).toMatchObject({ state: "awaitingParents" });
    const late = await store.enqueue({ jobs: [newJob("c2", { parentIds: ["p2"] }), newJob("p2")], now: T0 });
    expect(late[0]).toMatchObject({ status: "rejected", rejection: { code: "BELAY_UNKNOWN_PARENT", parentId: "p2" } });
  });

  clause("enqueue: a live parent makes the child await it; repeated parent ids collapse", async () => {
    const store = await ctx.store();
    await enqueueJobs(store, [newJob("p")]);
    const [result] = await store.enqueue({ jobs: [newJob("c", { parentIds: ["p", "p", "p"] })], now: T0 });
    expect(result).toMatchObject({ status: "created", state: "awaitingParents" });
    expect((await store.getJob("c"))!.parentIds).toEqual(["p"]);
    expect(await store.getDependencies("p")).toEqual({ parents: [], children: [{ jobId: "c", state: "awaitingParents" }] });
  });

  clause("enqueue: an already succeeded parent does not gate the child", async () => {
    const store = await ctx.store();
    const parent = await leaseJob(store, "p");
    await report(store, parent, { type: "succeeded" });
    const [result] = await store.enqueue({ jobs: [newJob("c", { parentIds: ["p"] })], now: T0 + 1 });
    expect(result).toMatchObject({ status: "created", state: "scheduled" });
  });

  clause("enqueue: an onSuccess child of an already failed parent is created cancelled, with the cause", async () => {
    const store = await ctx.store();
    const parent = await leaseJob(store, "p");
    await report(store, parent, { type: "failed", retryAt: null, failureDetail: "boom" });
    const [result] = await store.enqueue({ jobs: [newJob("c", { parentIds: ["p"] })], now: T0 + 1 });
    expect(result).toMatchObject({ status: "created", state: "cancelled" });
    const child = await store.getJob("c");
    expect(child).toMatchObject({ state: "cancelled", terminalAt: T0 + 1 });
    expect(child!.terminalCause).toContain("p");
  });

  clause("enqueue: an onAnyTerminal child of an already failed parent is scheduled", async () => {
    const store = await ctx.store();
    const parent = await leaseJob(store, "p");
    await report(store, parent, { type: "failed", retryAt: null });
    const [result] = await store.enqueue({ jobs: [newJob("c", { parentIds: ["p"], dependencyMode: "onAnyTerminal" })], now: T0 });
    expect(result).toMatchObject({ status: "created", state: "scheduled" });
  });

  clause("enqueue: only a cancelled-at-enqueue job carries a terminal time and cause", async () => {
    const store = await ctx.store();
    await enqueueJobs(store, [newJob("plain"), newJob("waiting", { parentIds: ["plain"] })], T0 + 7);
    for (const id of ["plain", "waiting"]) {
      expect(await store.getJob(id)).toMatchObject({ terminalAt: null, terminalCause: null, enqueuedAt: T0 + 7 });
    }
  });

  clause("enqueue: tags are de-duplicated per job and a label differs from a keyed tag", async () => {
    const store = await ctx.store();
    await enqueueJobs(store, [newJob("j1", { tags: [label("x"), label("x"), tag("x", "x"), tag("k", "1"), tag("k", "2")] })]);
    expect((await store.getJob("j1"))!.tags).toEqual([label("x"), tag("x", "x"), tag("k", "1"), tag("k", "2")]);
  });

  clause("enqueue: a job due in the future is not claimable before its due time", async () => {
    const store = await ctx.store();
    await enqueueJobs(store, [newJob("later", { dueAt: T0 + 60_000 })]);
    expect(await claimJobs(store, { now: T0 + 59_999 })).toEqual([]);
    expect((await claimJobs(store, { now: T0 + 60_000 })).map((j) => j.id)).toEqual(["later"]);
    expect(await stateOf(store, "later")).toBe("leased");
  });

  clauseNeeding(ctx, "transactions", "enqueue: in a transaction, the job exists only once the transaction commits", async () => {
    const store = await ctx.store();
    const tx = await ctx.hooks.beginTransaction!(store);
    const [result] = await store.enqueue({ jobs: [newJob("tx1")], now: T0, tx: tx.tx });
    expect(result).toMatchObject({ status: "created" });
    await tx.commit();
    expect(await stateOf(store, "tx1")).toBe("scheduled");
    expect((await claimJobs(store)).map((j) => j.id)).toEqual(["tx1"]);
  });

  clauseNeeding(ctx, "transactions", "enqueue: in a rolled-back transaction, the job never existed", async () => {
    const store = await ctx.store();
    const tx = await ctx.hooks.beginTransaction!(store);
    await store.enqueue({ jobs: [newJob("tx1"), newJob("tx2", { parentIds: ["tx1"] })], now: T0, tx: tx.tx });
    await tx.rollback();
    expect(await allJobIds(store)).toEqual([]);
    expect(await claimJobs(store)).toEqual([]);
    await enqueueJobs(store, [newJob("tx1")]);
  });

  clauseNeeding(ctx, "transactions", "enqueue: a finished transaction is refused loudly", async () => {
    const store = await ctx.store();
    const tx = await ctx.hooks.beginTransaction!(store);
    await tx.commit();
    await expectBelayError(() => store.enqueue({ jobs: [newJob("late")], now: T0, tx: tx.tx }), "BELAY_INVALID_TRANSACTION");
    expect(await store.getJob("late")).toBeNull();
  });

  clause("enqueue: a transaction the store cannot use is refused loudly (not supported, or invalid) and nothing is written", async () => {
    const store = await ctx.store();
    // Without the capability a `tx` is never ignored; with it, a handle that is not one of the
    // adapter's transactions is refused.
    const code = store.capabilities.transactionalEnqueue ? "BELAY_INVALID_TRANSACTION" : new TransactionNotSupportedError("x").code;
    await expectBelayError(() => store.enqueue({ jobs: [newJob("j1")], now: T0, tx: { not: "a transaction" } }), code);
    await expectBelayError(
      () => store.enqueueWorkflow({ workflow: { id: "w1", name: "w", jobs: [newJob("j1")] }, now: T0, tx: { not: "a transaction" } }),
      code,
    );
    expect(await store.getJob("j1")).toBeNull();
    expect(await store.getWorkflow("w1")).toBeNull();
  });
}
