import type { EnqueueWorkflowResult, JobStore, NewJob, NewWorkflow } from "@belay/contract";
import { expect } from "vitest";
import { clause, clauseNeeding } from "../clause.js";
import { allJobIds, claimJobs, enqueueJobs, newJob, report, stateOf, T0 } from "../fixtures.js";
import { settlesWithin, whileParked } from "../interleaving.js";
import type { SuiteContext } from "../suite-context.js";

function workflow(id: string, jobs: readonly NewJob[], name = "test.workflow"): NewWorkflow {
  return { id, name, jobs };
}

/** Enqueues a workflow and asserts it was created. */
async function enqueueWorkflow(store: JobStore, wf: NewWorkflow, now = T0): Promise<EnqueueWorkflowResult> {
  const result = await store.enqueueWorkflow({ workflow: wf, now });
  expect(result, `workflow ${wf.id}`).toMatchObject({ status: "created" });
  return result;
}

/**
 * Enqueues `first` on a fresh store, parks it at its commit, and meanwhile enqueues `second` (at
 * `secondAt`) through a peer handle; answers the store and both results.
 */
async function whileCommitting(ctx: SuiteContext, first: NewWorkflow, second: NewWorkflow, secondAt = T0) {
  const store = await ctx.store();
  const peer = await ctx.peer(store);
  const [a, b] = await whileParked(
    ctx,
    store,
    (point) => point.operation === "enqueueWorkflow" && point.step === "commit",
    () => store.enqueueWorkflow({ workflow: first, now: T0 }),
    () => peer.enqueueWorkflow({ workflow: second, now: secondAt }),
  );
  return { store, first: a, second: b };
}

/** Every workflow id, following listWorkflows' cursor with `limit` (bounded, so a loop fails). */
async function allWorkflowIds(store: JobStore, limit?: number): Promise<string[][]> {
  const pages: string[][] = [];
  let after: string | undefined;
  for (let i = 0; i < 50; i++) {
    const page = await store.listWorkflows({
      ...(limit === undefined ? {} : { limit }),
      ...(after === undefined ? {} : { after }),
    });
    if (limit !== undefined) expect(page.workflows.length).toBeLessThanOrEqual(limit);
    if (page.workflows.length > 0) pages.push(page.workflows.map((w) => w.id));
    if (page.nextCursor === null) return pages;
    after = page.nextCursor;
  }
  throw new Error("the workflow cursor never reached the end");
}

/** Asserts a rejected workflow left no trace: no workflow, and only `existing` jobs in the store. */
async function expectNothingWritten(store: JobStore, workflowId: string, existing: readonly string[] = []): Promise<void> {
  expect(await store.getWorkflow(workflowId)).toBeNull();
  expect((await allWorkflowIds(store)).flat()).toEqual([]);
  expect(await allJobIds(store)).toEqual(existing);
}

export function workflowClauses(ctx: SuiteContext): void {
  clause("workflows: enqueueWorkflow inserts the whole graph, every member tagged with the workflow", async () => {
    const store = await ctx.store();
    const result = await store.enqueueWorkflow({
      workflow: workflow(
        "wf1",
        [newJob("extract"), newJob("transform", { parentIds: ["extract"] }), newJob("load", { parentIds: ["transform"] })],
        "etl",
      ),
      now: T0,
    });
    expect(result).toMatchObject({
      status: "created",
      jobs: [
        { id: "extract", status: "created", state: "scheduled" },
        { id: "transform", status: "created", state: "awaitingParents" },
        { id: "load", status: "created", state: "awaitingParents" },
      ],
    });
    for (const id of ["extract", "transform", "load"]) {
      expect(await store.getJob(id), id).toMatchObject({ workflowId: "wf1", enqueuedAt: T0 });
    }
    expect(await store.getWorkflow("wf1")).toEqual({
      id: "wf1",
      name: "etl",
      createdAt: T0,
      status: "running",
      jobCount: 3,
      counts: { scheduled: 1, awaitingParents: 2 },
    });
    expect((await store.listJobs({ workflowId: "wf1" })).jobs.map((j) => j.id)).toEqual(["extract", "transform", "load"]);
    expect(await store.getDependencies("transform")).toEqual({
      parents: [{ jobId: "extract", state: "scheduled", gating: true }],
      children: [{ jobId: "load", state: "awaitingParents" }],
    });
  });

  clause("workflows: a member naming a parent outside the workflow is rejected for containment; nothing is written", async () => {
    const store = await ctx.store();
    await enqueueJobs(store, [newJob("outside")]);
    const result = await store.enqueueWorkflow({
      workflow: workflow("wf1", [newJob("m1"), newJob("m2", { parentIds: ["m1", "outside"] })]),
      now: T0,
    });
    expect(result).toMatchObject({
      status: "rejected",
      jobId: "m2",
      rejection: { code: "BELAY_WORKFLOW_CONTAINMENT", field: "parentIds", parentId: "outside" },
    });
    await expectNothingWritten(store, "wf1", ["outside"]);
    expect(await store.getDependencies("outside")).toEqual({ parents: [], children: [] });

    const ghost = await store.enqueueWorkflow({ workflow: workflow("wf2", [newJob("g1", { parentIds: ["ghost"] })]), now: T0 });
    expect(ghost).toMatchObject({ status: "rejected", jobId: "g1", rejection: { parentId: "ghost" } });
    await expectNothingWritten(store, "wf2", ["outside"]);
  });

  clause("workflows: a repeated workflow id is a duplicate and changes nothing", async () => {
    const store = await ctx.store();
    const request = { workflow: workflow("wf1", [newJob("a"), newJob("b", { parentIds: ["a"] })], "first"), now: T0 };
    await enqueueWorkflow(store, request.workflow);
    const before = await store.getWorkflow("wf1");
    expect(await store.enqueueWorkflow({ ...request, now: T0 + 5 })).toEqual({ status: "duplicate", workflowId: "wf1" });
    expect(
      await store.enqueueWorkflow({ workflow: workflow("wf1", [newJob("x"), newJob("y")], "second"), now: T0 + 6 }),
    ).toEqual({ status: "duplicate", workflowId: "wf1" });
    expect(await store.getWorkflow("wf1")).toEqual(before);
    expect(await allJobIds(store)).toEqual(["a", "b"]);
    expect((await allWorkflowIds(store)).flat()).toEqual(["wf1"]);
  });

  clause("workflows: an empty workflow is rejected as invalid input", async () => {
    const store = await ctx.store();
    const result = await store.enqueueWorkflow({ workflow: workflow("wf1", []), now: T0 });
    expect(result).toMatchObject({ status: "rejected", jobId: null, rejection: { code: "BELAY_INVALID_INPUT" } });
    await expectNothingWritten(store, "wf1");
  });

  clause("workflows: a workflow over workflowJobs is rejected naming the bound; one at the bound is accepted", async () => {
    const store = await ctx.store({ bounds: { workflowJobs: 2 } });
    const result = await store.enqueueWorkflow({ workflow: workflow("big", [newJob("a"), newJob("b"), newJob("c")]), now: T0 });
    expect(result).toMatchObject({
      status: "rejected",
      jobId: null,
      rejection: { code: "BELAY_WORKFLOW_TOO_LARGE", bound: "workflowJobs", limit: 2, actual: 3 },
    });
    await expectNothingWritten(store, "big");
    await enqueueWorkflow(store, workflow("fits", [newJob("a"), newJob("b")]));
    expect(await store.getWorkflow("fits")).toMatchObject({ jobCount: 2 });
  });

  clause("workflows: member bounds are enforced at the same thresholds as plain enqueue", async () => {
    const store = await ctx.store({ bounds: { payloadBytes: 10, jobNameLength: 5, parents: 1 } });
    // Names kept short (workflow name "wf", job name "job") so only the bound under test is crossed.
    const job = (id: string, fields: Partial<NewJob> = {}) => newJob(id, { jobName: "job", ...fields });
    // At the bounds: accepted.
    await enqueueWorkflow(
      store,
      workflow("ok", [job("o1", { payload: '"éééé"', jobName: "abcde" }), job("o2", { parentIds: ["o1"] })], "wf"),
    );
    await enqueueJobs(store, [job("p1"), job("p2")]);
    const overs: [string, (id: string, parents: [string, string]) => NewJob, string, number, number][] = [
      ["payload", (id) => job(id, { payload: '"éééé "' }), "BELAY_PAYLOAD_TOO_LARGE", 10, 11],
      ["jobName", (id) => job(id, { jobName: "abcdef" }), "BELAY_JOB_NAME_TOO_LONG", 5, 6],
      ["parents", (id, parents) => job(id, { parentIds: parents }), "BELAY_TOO_MANY_PARENTS", 1, 2],
    ];
    for (const [what, make, code, limit, actual] of overs) {
      const [plain] = await store.enqueue({ jobs: [make(`plain-${what}`, ["p1", "p2"])], now: T0 });
      expect(plain, `plain ${what}`).toMatchObject({ status: "rejected", rejection: { code, limit, actual } });
      const result = await store.enqueueWorkflow({
        workflow: workflow(`wf-${what}`, [job("w1"), job("w2"), make("bad", ["w1", "w2"])], "wf"),
        now: T0,
      });
      expect(result, `workflow ${what}`).toMatchObject({ status: "rejected", jobId: "bad", rejection: { code, limit, actual } });
      expect(await store.getWorkflow(`wf-${what}`)).toBeNull();
    }
    expect(await allJobIds(store)).toEqual(["o1", "o2", "p1", "p2"]);
  });

  clause("workflows: a member whose id is already taken is rejected with BELAY_JOB_EXISTS; nothing is written", async () => {
    const store = await ctx.store();
    await enqueueJobs(store, [newJob("taken", { payload: '{"plain":true}' })]);
    const result = await store.enqueueWorkflow({ workflow: workflow("wf1", [newJob("fresh"), newJob("taken")]), now: T0 + 1 });
    expect(result).toMatchObject({ status: "rejected", jobId: "taken", rejection: { code: "BELAY_JOB_EXISTS" } });
    await expectNothingWritten(store, "wf1", ["taken"]);
    expect(await store.getJob("taken")).toMatchObject({ workflowId: null, payload: '{"plain":true}', state: "scheduled" });
  });

  clause("workflows: a member id repeated inside the workflow is rejected; nothing is written", async () => {
    const store = await ctx.store();
    const result = await store.enqueueWorkflow({
      workflow: workflow("wf1", [newJob("a"), newJob("b", { parentIds: ["a"] }), newJob("a", { payload: '{"again":1}' })]),
      now: T0,
    });
    expect(result).toMatchObject({ status: "rejected", jobId: "a" });
    expect(["BELAY_INVALID_INPUT", "BELAY_JOB_EXISTS"]).toContain((result as { rejection: { code: string } }).rejection.code);
    await expectNothingWritten(store, "wf1");
  });

  clause("workflows: members given child before parent are ordered so the graph is valid", async () => {
    const store = await ctx.store();
    const result = await store.enqueueWorkflow({
      workflow: workflow("wf1", [
        newJob("grandchild", { parentIds: ["child"] }),
        newJob("child", { parentIds: ["root"] }),
        newJob("root"),
      ]),
      now: T0,
    });
    expect(result).toMatchObject({
      status: "created",
      jobs: [
        { id: "grandchild", state: "awaitingParents" },
        { id: "child", state: "awaitingParents" },
        { id: "root", state: "scheduled" },
      ],
    });
    expect(await store.getDependencies("root")).toEqual({ parents: [], children: [{ jobId: "child", state: "awaitingParents" }] });
    expect(await store.getDependencies("grandchild")).toMatchObject({ parents: [{ jobId: "child", gating: true }] });
    // The graph works: only the root is claimable, and its success releases the child.
    const [root] = await claimJobs(store);
    expect(root!.id).toBe("root");
    expect(await claimJobs(store)).toEqual([]);
    await report(store, root!, { type: "succeeded" }, T0 + 1);
    expect(await stateOf(store, "child")).toBe("scheduled");
    expect(await stateOf(store, "grandchild")).toBe("awaitingParents");
  });

  clause("workflows: a cycle among members is rejected as invalid input; nothing is written", async () => {
    const store = await ctx.store();
    const result = await store.enqueueWorkflow({
      workflow: workflow("wf1", [
        newJob("root"),
        newJob("a", { parentIds: ["root", "c"] }),
        newJob("b", { parentIds: ["a"] }),
        newJob("c", { parentIds: ["b"] }),
      ]),
      now: T0,
    });
    expect(result).toMatchObject({ status: "rejected", rejection: { code: "BELAY_INVALID_INPUT" } });
    await expectNothingWritten(store, "wf1");
  });

  clause("workflows: results come back in the caller's input order", async () => {
    const store = await ctx.store();
    const ids = ["m", "b", "z", "a", "k"];
    const result = await store.enqueueWorkflow({
      workflow: workflow("wf1", [
        newJob("m", { parentIds: ["z", "a"] }),
        newJob("b"),
        newJob("z", { parentIds: ["b"] }),
        newJob("a"),
        newJob("k", { parentIds: ["m"] }),
      ]),
      now: T0,
    });
    expect(result.status).toBe("created");
    const jobs = result.status === "created" ? result.jobs : [];
    expect(jobs.map((j) => j.id)).toEqual(ids);
    expect(jobs.map((j) => j.state)).toEqual(["awaitingParents", "scheduled", "awaitingParents", "scheduled", "awaitingParents"]);
    for (const job of jobs) expect((await store.getJob(job.id))!.seq, job.id).toBe(job.seq);
  });

  clause("workflows: status is running while any member is live", async () => {
    const store = await ctx.store();
    await enqueueWorkflow(store, workflow("wf1", [newJob("p"), newJob("c", { parentIds: ["p"] })]));
    expect(await store.getWorkflow("wf1")).toMatchObject({ status: "running", counts: { scheduled: 1, awaitingParents: 1 } });
    const [p] = await claimJobs(store);
    expect(await store.getWorkflow("wf1")).toMatchObject({ status: "running", counts: { leased: 1, awaitingParents: 1 } });
    await report(store, p!, { type: "succeeded" }, T0 + 1);
    expect(await store.getWorkflow("wf1")).toEqual(
      expect.objectContaining({ status: "running", counts: { succeeded: 1, scheduled: 1 } }),
    );
  });

  clause("workflows: status is succeeded once every member succeeded", async () => {
    const store = await ctx.store();
    await enqueueWorkflow(store, workflow("wf1", [newJob("p"), newJob("c", { parentIds: ["p"] })]));
    const [p] = await claimJobs(store);
    await report(store, p!, { type: "succeeded" }, T0 + 1);
    const [c] = await claimJobs(store, { now: T0 + 2 });
    expect(c!.id).toBe("c");
    expect(c!.workflowId).toBe("wf1");
    await report(store, c!, { type: "succeeded" }, T0 + 3);
    expect(await store.getWorkflow("wf1")).toMatchObject({ status: "succeeded", jobCount: 2, counts: { succeeded: 2 } });
  });

  clause("workflows: a dead-lettered or quarantined member makes the status failed once nothing is live", async () => {
    const store = await ctx.store();
    await enqueueWorkflow(store, workflow("wf1", [newJob("a"), newJob("b"), newJob("c")]));
    const claimed = await claimJobs(store);
    const byId = new Map(claimed.map((j) => [j.id, j]));
    await report(store, byId.get("a")!, { type: "failed", retryAt: null, failureDetail: "boom" }, T0 + 1);
    expect(await store.getWorkflow("wf1")).toMatchObject({ status: "running", counts: { deadLettered: 1, leased: 2 } });
    await report(store, byId.get("b")!, { type: "cancelled" }, T0 + 2);
    expect(await store.getWorkflow("wf1")).toMatchObject({ status: "running" });
    await report(store, byId.get("c")!, { type: "succeeded" }, T0 + 3);
    expect(await store.getWorkflow("wf1")).toMatchObject({
      status: "failed",
      counts: { deadLettered: 1, cancelled: 1, succeeded: 1 },
    });

    await enqueueWorkflow(store, workflow("wf2", [newJob("q"), newJob("r")]), T0 + 10);
    const second = await claimJobs(store, { now: T0 + 10 });
    const byId2 = new Map(second.map((j) => [j.id, j]));
    await report(store, byId2.get("q")!, { type: "unroutable", reason: "unknown job name" }, T0 + 11);
    await report(store, byId2.get("r")!, { type: "succeeded" }, T0 + 12);
    expect(await store.getWorkflow("wf2")).toMatchObject({ status: "failed", counts: { quarantined: 1, succeeded: 1 } });
  });

  clause("workflows: cancelling the root cascades through the members and the status reads cancelled", async () => {
    const store = await ctx.store();
    await enqueueWorkflow(
      store,
      workflow("wf1", [newJob("root"), newJob("child", { parentIds: ["root"] }), newJob("grandchild", { parentIds: ["child"] })]),
    );
    expect(await store.cancelJob({ jobId: "root", actor: "alice", now: T0 + 1 })).toEqual({ status: "cancelled" });
    for (const id of ["root", "child", "grandchild"]) expect(await stateOf(store, id), id).toBe("cancelled");
    expect(await store.getWorkflow("wf1")).toMatchObject({ status: "cancelled", jobCount: 3, counts: { cancelled: 3 } });
  });

  clause("workflows: listWorkflows is oldest first and its cursor pages through all", async () => {
    const store = await ctx.store();
    await enqueueWorkflow(store, workflow("wf-c", [newJob("c1")]), T0);
    await enqueueWorkflow(store, workflow("wf-a", [newJob("a1")]), T0 + 1);
    await enqueueWorkflow(store, workflow("wf-b", [newJob("b1"), newJob("b2")]), T0 + 2);
    expect(await allWorkflowIds(store, 1)).toEqual([["wf-c"], ["wf-a"], ["wf-b"]]);
    const page = await store.listWorkflows();
    expect(page.workflows.map((w) => [w.id, w.createdAt, w.jobCount])).toEqual([
      ["wf-c", T0, 1],
      ["wf-a", T0 + 1, 1],
      ["wf-b", T0 + 2, 2],
    ]);
  });

  clauseNeeding(ctx, "transactions", "workflows: a workflow enqueued in a rolled-back transaction never existed", async () => {
    const store = await ctx.store();
    const tx = await ctx.hooks.beginTransaction!(store);
    const result = await store.enqueueWorkflow({
      workflow: workflow("wf1", [newJob("a"), newJob("b", { parentIds: ["a"] })]),
      now: T0,
      tx: tx.tx,
    });
    expect(result).toMatchObject({ status: "created" });
    await tx.rollback();
    await expectNothingWritten(store, "wf1");
    expect(await claimJobs(store)).toEqual([]);
    await enqueueWorkflow(store, workflow("wf1", [newJob("a"), newJob("b", { parentIds: ["a"] })]));
  });

  clauseNeeding(ctx, "transactions", "workflows: a workflow enqueued in a committed transaction exists whole", async () => {
    const store = await ctx.store();
    const tx = await ctx.hooks.beginTransaction!(store);
    const result = await store.enqueueWorkflow({
      workflow: workflow("wf1", [newJob("b", { parentIds: ["a"] }), newJob("a")]),
      now: T0,
      tx: tx.tx,
    });
    expect(result).toMatchObject({ status: "created" });
    await tx.commit();
    expect(await store.getWorkflow("wf1")).toMatchObject({ status: "running", jobCount: 2, counts: { scheduled: 1, awaitingParents: 1 } });
    expect(await allJobIds(store)).toHaveLength(2);
    expect(await store.getJob("b")).toMatchObject({ workflowId: "wf1", state: "awaitingParents", parentIds: ["a"] });
    expect((await claimJobs(store)).map((j) => j.id)).toEqual(["a"]);
  });

  clause("workflows: listWorkflows lists in enqueue order; a later workflow with an earlier createdAt still comes after", async () => {
    const store = await ctx.store();
    // createdAt is each call's `now`, here not in the order the calls were made.
    await enqueueWorkflow(store, workflow("wf-late", [newJob("l1")]), T0 + 10);
    await enqueueWorkflow(store, workflow("wf-early", [newJob("e1")]), T0);
    await enqueueWorkflow(store, workflow("wf-mid", [newJob("m1")]), T0 + 5);
    expect((await store.listWorkflows()).workflows.map((w) => [w.id, w.createdAt])).toEqual([
      ["wf-late", T0 + 10],
      ["wf-early", T0],
      ["wf-mid", T0 + 5],
    ]);
    expect(await allWorkflowIds(store, 2)).toEqual([["wf-late", "wf-early"], ["wf-mid"]]);
  });

  clause("workflows: listWorkflows carries each workflow's derived status and member counts, the same as getWorkflow", async () => {
    const store = await ctx.store();
    await enqueueWorkflow(store, workflow("running", [newJob("r1", { queue: "r" }), newJob("r2", { queue: "r", parentIds: ["r1"] })]));
    await enqueueWorkflow(store, workflow("succeeded", [newJob("s1", { queue: "s" })]));
    await enqueueWorkflow(store, workflow("failed", [newJob("f1", { queue: "f" }), newJob("f2", { queue: "f" })]));
    await enqueueWorkflow(store, workflow("cancelled", [newJob("c1", { queue: "c" }), newJob("c2", { queue: "c", parentIds: ["c1"] })]));
    const claimed = new Map((await claimJobs(store, { queues: ["s", "f"] })).map((j) => [j.id, j]));
    await report(store, claimed.get("s1")!, { type: "succeeded" }, T0 + 1);
    await report(store, claimed.get("f1")!, { type: "failed", retryAt: null }, T0 + 1);
    await report(store, claimed.get("f2")!, { type: "succeeded" }, T0 + 1);
    expect(await store.cancelJob({ jobId: "c1", actor: "alice", now: T0 + 2 })).toEqual({ status: "cancelled" });

    const listed = (await store.listWorkflows()).workflows;
    expect(listed.map((w) => [w.id, w.status, w.jobCount, w.counts])).toEqual([
      ["running", "running", 2, { scheduled: 1, awaitingParents: 1 }],
      ["succeeded", "succeeded", 1, { succeeded: 1 }],
      ["failed", "failed", 2, { deadLettered: 1, succeeded: 1 }],
      ["cancelled", "cancelled", 2, { cancelled: 2 }],
    ]);
    for (const record of listed) expect(record, record.id).toEqual(await store.getWorkflow(record.id));
    // Paged one by one, the records are the same.
    const paged = [];
    let after: string | undefined;
    for (let i = 0; i < 10; i++) {
      const page = await store.listWorkflows({ limit: 1, ...(after === undefined ? {} : { after }) });
      paged.push(...page.workflows);
      if (page.nextCursor === null) break;
      after = page.nextCursor;
    }
    expect(paged).toEqual(listed);
  });

  clause("workflows: member faults are reported in a fixed precedence: the workflow's own fields, a duplicate workflow id, then members in input order (fields, a repeated id, a taken id), then containment, then cycles", async () => {
    const store = await ctx.store({ bounds: { payloadBytes: 10 } });
    await enqueueJobs(store, [newJob("taken")]);
    await enqueueWorkflow(store, workflow("exists", [newJob("member")]));
    const big = '"0123456789"'; // 12 bytes: over the payload bound
    const cases: [string, NewWorkflow, Partial<Record<"status" | "jobId" | "code" | "field", unknown>>][] = [
      [
        "the workflow's own name before any member fault",
        { id: "wf-a", name: "", jobs: [newJob("taken"), newJob("a2", { payload: big })] },
        { status: "rejected", jobId: null, code: "BELAY_INVALID_INPUT", field: "workflow.name" },
      ],
      [
        "a duplicate workflow id before any member fault",
        workflow("exists", [newJob("taken"), newJob("b2", { payload: big })]),
        { status: "duplicate" },
      ],
      [
        "the first faulty member in input order: a taken id before a later member's bound",
        workflow("wf-c", [newJob("c1"), newJob("taken"), newJob("c3", { payload: big })]),
        { status: "rejected", jobId: "taken", code: "BELAY_JOB_EXISTS" },
      ],
      [
        "a member's own fields before its taken id",
        workflow("wf-d", [newJob("taken", { payload: big }), newJob("d2")]),
        { status: "rejected", jobId: "taken", code: "BELAY_PAYLOAD_TOO_LARGE" },
      ],
      [
        "a repeated member id before a later taken id",
        workflow("wf-e", [newJob("e1"), newJob("e1"), newJob("taken")]),
        { status: "rejected", jobId: "e1", code: "BELAY_INVALID_INPUT", field: "workflow.jobs[1].id" },
      ],
      [
        "a taken id, even late in the input, before an earlier member's containment fault",
        workflow("wf-f", [newJob("f1", { parentIds: ["outside"] }), newJob("f2"), newJob("taken")]),
        { status: "rejected", jobId: "taken", code: "BELAY_JOB_EXISTS" },
      ],
      [
        "containment before a cycle",
        workflow("wf-g", [newJob("g1", { parentIds: ["g2"] }), newJob("g2", { parentIds: ["g1"] }), newJob("g3", { parentIds: ["outside"] })]),
        { status: "rejected", jobId: "g3", code: "BELAY_WORKFLOW_CONTAINMENT" },
      ],
    ];
    for (const [what, wf, expected] of cases) {
      const result = await store.enqueueWorkflow({ workflow: wf, now: T0 + 1 });
      const { code, field, ...rest } = expected;
      expect(result, what).toMatchObject({
        ...rest,
        ...(code === undefined ? {} : { rejection: { code, ...(field === undefined ? {} : { field }) } }),
      });
    }
    expect(await allJobIds(store)).toEqual(["taken", "member"]);
    expect((await allWorkflowIds(store)).flat()).toEqual(["exists"]);
  });

  clause("workflows: concurrent enqueues of one workflow id create it once; every other call reads duplicate and none throws", async () => {
    const store = await ctx.store();
    const peer = await ctx.peer(store);
    const ids = ["wf0", "wf1", "wf2", "wf3"];
    const calls = ids.flatMap((id) =>
      [store, peer, store, peer].map((handle, k) =>
        handle.enqueueWorkflow({
          workflow: workflow(id, [newJob(`${id}-a`, { payload: `{"k":${k}}` }), newJob(`${id}-b`, { parentIds: [`${id}-a`] })], `name-${k}`),
          now: T0 + k,
        }),
      ),
    );
    const results = await Promise.all(calls);
    for (const [i, id] of ids.entries()) {
      const mine = results.slice(i * 4, i * 4 + 4);
      const created = mine.filter((r) => r.status === "created");
      expect(created, `${id} is created once`).toHaveLength(1);
      for (const r of mine) if (r.status !== "created") expect(r, id).toEqual({ status: "duplicate", workflowId: id });
      const winner = mine.indexOf(created[0]!);
      expect(await store.getWorkflow(id)).toMatchObject({ name: `name-${winner}`, createdAt: T0 + winner, jobCount: 2 });
      expect(await store.getJob(`${id}-a`)).toMatchObject({ payload: `{"k":${winner}}`, workflowId: id });
      expect(await store.getJobHistory(`${id}-a`), "one first transition").toHaveLength(1);
    }
    expect((await allJobIds(store)).sort()).toEqual(ids.flatMap((id) => [`${id}-a`, `${id}-b`]).sort());
  });

  clause("workflows: concurrent workflows sharing a member id: one is created, the other is rejected with BELAY_JOB_EXISTS naming the member, and none throws", async () => {
    const store = await ctx.store();
    const peer = await ctx.peer(store);
    const rounds = [0, 1, 2, 3];
    const calls = rounds.flatMap((r) => [
      store.enqueueWorkflow({ workflow: workflow(`x${r}`, [newJob(`shared${r}`), newJob(`x${r}-own`, { parentIds: [`shared${r}`] })]), now: T0 }),
      peer.enqueueWorkflow({ workflow: workflow(`y${r}`, [newJob(`y${r}-own`), newJob(`shared${r}`, { parentIds: [`y${r}-own`] })]), now: T0 }),
    ]);
    const results = await Promise.all(calls);
    for (const r of rounds) {
      const [x, y] = [results[2 * r]!, results[2 * r + 1]!];
      const pair = [x, y].map((w) => w.status).sort();
      expect(pair, `round ${r}`).toEqual(["created", "rejected"]);
      const [winner, loser] = x.status === "created" ? [`x${r}`, `y${r}`] : [`y${r}`, `x${r}`];
      const rejected = x.status === "created" ? y : x;
      expect(rejected).toMatchObject({ status: "rejected", jobId: `shared${r}`, rejection: { code: "BELAY_JOB_EXISTS" } });
      expect(await store.getWorkflow(loser), `${loser} left no trace`).toBeNull();
      expect(await store.getJob(`${loser}-own`)).toBeNull();
      expect(await store.getWorkflow(winner)).toMatchObject({ jobCount: 2 });
      expect(await store.getJob(`shared${r}`)).toMatchObject({ workflowId: winner });
    }
  });

  clauseNeeding(ctx, "stepHook", "workflows: a workflow id another handle's enqueue holds uncommitted reads duplicate once that commits, and nothing throws", async () => {
    const { store, first, second } = await whileCommitting(
      ctx,
      workflow("wf", [newJob("a"), newJob("b", { parentIds: ["a"] })], "first"),
      workflow("wf", [newJob("x"), newJob("y")], "second"),
      T0 + 1,
    );
    expect(first).toMatchObject({ status: "created" });
    expect(second).toEqual({ status: "duplicate", workflowId: "wf" });
    expect(await store.getWorkflow("wf")).toMatchObject({ name: "first", jobCount: 2 });
    expect(await allJobIds(store)).toEqual(["a", "b"]);
  });

  clauseNeeding(ctx, "stepHook", "workflows: a member id another workflow's enqueue holds uncommitted is rejected with BELAY_JOB_EXISTS once that commits, and nothing throws", async () => {
    const { store, first, second } = await whileCommitting(
      ctx,
      workflow("wf-x", [newJob("shared"), newJob("x", { parentIds: ["shared"] })]),
      workflow("wf-y", [newJob("y"), newJob("shared", { parentIds: ["y"] })]),
    );
    expect(first).toMatchObject({ status: "created" });
    expect(second).toMatchObject({ status: "rejected", jobId: "shared", rejection: { code: "BELAY_JOB_EXISTS" } });
    expect(await store.getWorkflow("wf-y")).toBeNull();
    expect(await store.getJob("y")).toBeNull();
    expect(await store.getJob("shared")).toMatchObject({ workflowId: "wf-x" });
    expect(await allJobIds(store)).toEqual(["shared", "x"]);
  });

  clauseNeeding(ctx, "transactions", "workflows: a workflow enqueued in an open transaction is invisible to every read until commit", async () => {
    const store = await ctx.store();
    const peer = await ctx.peer(store);
    await enqueueWorkflow(store, workflow("before", [newJob("b1")]));
    const tx = await ctx.hooks.beginTransaction!(store);
    let finished = false;
    try {
      const result = await store.enqueueWorkflow({
        workflow: workflow("inTx", [newJob("t1", { tags: [{ key: "", value: "hidden" }] }), newJob("t2", { parentIds: ["t1"] })]),
        now: T0,
        tx: tx.tx,
      });
      expect(result).toMatchObject({ status: "created" });
      for (const handle of [store, peer]) {
        // Never wait unboundedly while the transaction is open; the finally below ends it.
        const reads = Promise.all([
          handle.getWorkflow("inTx"),
          handle.listWorkflows(),
          handle.getJob("t1"),
          handle.listJobs({ workflowId: "inTx" }),
          handle.getDependencies("t1"),
          handle.suggestTags({ prefix: "hid" }),
        ]);
        expect(await settlesWithin(reads, 30_000), "reads do not block on an open caller transaction").toBe(true);
        const [wf, page, job, members, edges, suggestions] = await reads;
        expect(wf).toBeNull();
        expect(page.workflows.map((w) => w.id)).toEqual(["before"]);
        expect(job).toBeNull();
        expect(members.jobs).toEqual([]);
        expect(edges).toBeNull();
        expect(suggestions.suggestions).toEqual([]);
      }
      await tx.commit();
      finished = true;
    } finally {
      if (!finished) await tx.rollback().catch(() => undefined);
    }
    expect((await store.listWorkflows()).workflows.map((w) => w.id)).toEqual(["before", "inTx"]);
    expect(await peer.getWorkflow("inTx")).toMatchObject({ jobCount: 2, status: "running" });
    expect((await claimJobs(store)).map((j) => j.id).sort()).toEqual(["b1", "t1"]);
  });
}
