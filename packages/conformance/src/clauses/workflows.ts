import type { EnqueueWorkflowResult, JobStore, NewJob, NewWorkflow } from "@belay/contract";
import { expect } from "vitest";
import { clause, clauseNeeding } from "../clause.js";
import { allJobIds, claimJobs, enqueueJobs, newJob, report, stateOf, T0 } from "../fixtures.js";
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
}
