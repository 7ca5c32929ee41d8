import type { Instant, JobStore, Outcome, PurgeTerminalRequest, RetentionClass } from "@belay/contract";
import { MAX_INSTANT } from "@belay/contract";
import { expect } from "vitest";
import { clause } from "../clause.js";
import { allJobIds, claimJobs, enqueueJobs, expectBelayError, leaseJob, newJob, report, stateOf, T0 } from "../fixtures.js";
import type { SuiteContext } from "../suite-context.js";

const SUCCEEDED: Outcome = { type: "succeeded" };
const DEAD: Outcome = { type: "failed", retryAt: null, failureDetail: "boom" };
const CANCELLED: Outcome = { type: "cancelled" };
const QUARANTINED: Outcome = { type: "unroutable", reason: "unknown job name" };

/** Far enough in the future that every terminal time of a clause lies before it. */
const LATER: Instant = T0 + 3_600_000;

/**
 * Enqueues one job per plan row (queue `ends`), claims them all at T0 and reports each outcome at
 * its instant (within the lease), so each job becomes terminal exactly then.
 */
async function endJobs(store: JobStore, plan: readonly (readonly [string, Outcome, Instant])[]): Promise<void> {
  await enqueueJobs(store, plan.map(([id]) => newJob(id, { queue: "ends" })));
  const claimed = await claimJobs(store, { queues: ["ends"] });
  const byId = new Map(claimed.map((j) => [j.id, j]));
  for (const [id, outcome, at] of plan) {
    const job = byId.get(id);
    expect(job, `claimed ${id}`).toBeDefined();
    expect(await report(store, job!, outcome, at), `outcome of ${id}`).toMatchObject({ status: "applied" });
    expect((await store.getJob(id))!.terminalAt, `terminal time of ${id}`).toBe(at);
  }
}

/** One job per terminal state, `s`, `c`, `d` and `q`, ending in that order a millisecond apart. */
const ONE_OF_EACH_END = [
  ["s", SUCCEEDED, T0 + 1],
  ["c", CANCELLED, T0 + 2],
  ["d", DEAD, T0 + 3],
  ["q", QUARANTINED, T0 + 4],
] as const;

/**
 * Three successes enqueued (and claimed) in one order and terminal in another, the oldest neither
 * first nor last: only the terminal clock orders a purge.
 */
const SHUFFLED_ENDS = [
  ["j1", SUCCEEDED, T0 + 3],
  ["j2", SUCCEEDED, T0 + 1],
  ["j3", SUCCEEDED, T0 + 2],
] as const;

async function purge(store: JobStore, retentionClass: RetentionClass, before: Instant, max = 100): Promise<number> {
  return (await store.purgeTerminal({ retentionClass, before, max })).purged;
}

export function retentionClauses(ctx: SuiteContext): void {
  clause("retention: purgeTerminal takes only jobs whose terminal time is strictly before `before`", async () => {
    const store = await ctx.store();
    await endJobs(store, SHUFFLED_ENDS);
    expect(await purge(store, "succeededOrCancelled", T0 + 1)).toBe(0);
    expect(await purge(store, "succeededOrCancelled", T0 + 2)).toBe(1);
    expect(await allJobIds(store)).toEqual(["j1", "j3"]);
    expect(await purge(store, "succeededOrCancelled", T0 + 3)).toBe(1);
    expect(await allJobIds(store)).toEqual(["j1"]);
    expect(await store.getJob("j3")).toBeNull();
  });

  clause("retention: succeededOrCancelled purges succeeded and cancelled jobs and nothing else", async () => {
    const store = await ctx.store();
    await endJobs(store, ONE_OF_EACH_END);
    await enqueueJobs(store, [newJob("op")]);
    expect(await store.cancelJob({ jobId: "op", actor: "alice", now: T0 + 5 })).toEqual({ status: "cancelled" });
    expect(await purge(store, "succeededOrCancelled", LATER)).toBe(3);
    expect(await allJobIds(store)).toEqual(["d", "q"]);
    expect(await stateOf(store, "d")).toBe("deadLettered");
    expect(await stateOf(store, "q")).toBe("quarantined");
  });

  clause("retention: deadLetteredOrQuarantined purges dead-lettered and quarantined jobs and nothing else", async () => {
    const store = await ctx.store();
    await endJobs(store, ONE_OF_EACH_END);
    expect(await purge(store, "deadLetteredOrQuarantined", LATER)).toBe(2);
    expect(await allJobIds(store)).toEqual(["s", "c"]);
    expect(await store.getJob("d")).toBeNull();
    expect(await store.getJob("q")).toBeNull();
  });

  clause("retention: live jobs (scheduled, awaiting parents, leased, retrying, requeued) are never purged", async () => {
    const store = await ctx.store();
    await enqueueJobs(store, [newJob("sched"), newJob("waiting", { parentIds: ["sched"] })]);
    await leaseJob(store, "leased", { queue: "lq" });
    const retrying = await leaseJob(store, "retrying", { queue: "rq" });
    expect(await report(store, retrying, { type: "failed", retryAt: T0 + 5_000 }, T0 + 1)).toMatchObject({ state: "scheduled" });
    const requeued = await leaseJob(store, "requeued", { queue: "qq" });
    expect(await report(store, requeued, DEAD, T0 + 1)).toMatchObject({ state: "deadLettered" });
    expect(await store.requeueJob({ jobId: "requeued", actor: "alice", now: T0 + 2 })).toEqual({ status: "requeued" });
    const everything = MAX_INSTANT;
    expect(await purge(store, "succeededOrCancelled", everything)).toBe(0);
    expect(await purge(store, "deadLetteredOrQuarantined", everything)).toBe(0);
    expect(await allJobIds(store)).toEqual(["sched", "waiting", "leased", "retrying", "requeued"]);
    expect(await stateOf(store, "waiting")).toBe("awaitingParents");
    expect(await stateOf(store, "leased")).toBe("leased");
    expect(await stateOf(store, "requeued")).toBe("scheduled");
  });

  clause("retention: a call purges at most max, oldest terminal first", async () => {
    const store = await ctx.store();
    await endJobs(store, SHUFFLED_ENDS);
    expect(await purge(store, "succeededOrCancelled", LATER, 1)).toBe(1);
    expect(await allJobIds(store)).toEqual(["j1", "j3"]);
    expect(await purge(store, "succeededOrCancelled", LATER, 1)).toBe(1);
    expect(await allJobIds(store)).toEqual(["j1"]);
  });

  clause("retention: max is clamped to purgeBatch; repeated calls drain the rest, the last purging fewer than max", async () => {
    const store = await ctx.store({ bounds: { purgeBatch: 2 } });
    await endJobs(store, [
      ["j1", SUCCEEDED, T0 + 2],
      ["j2", CANCELLED, T0 + 4],
      ["j3", SUCCEEDED, T0 + 1],
      ["j4", SUCCEEDED, T0 + 5],
      ["j5", CANCELLED, T0 + 3],
    ]);
    expect(await purge(store, "succeededOrCancelled", LATER, 100)).toBe(2);
    expect(await allJobIds(store)).toEqual(["j2", "j4", "j5"]);
    expect(await purge(store, "succeededOrCancelled", LATER, 100)).toBe(2);
    expect(await allJobIds(store)).toEqual(["j4"]);
    expect(await purge(store, "succeededOrCancelled", LATER, 2)).toBe(1);
    expect(await purge(store, "succeededOrCancelled", LATER, 2)).toBe(0);
    expect(await allJobIds(store)).toEqual([]);
  });

  clause("retention: a purged job's tags, transitions and output go with it", async () => {
    const store = await ctx.store();
    const job = await leaseJob(store, "gone", { tags: [{ key: "", value: "temp" }, { key: "tenant", value: "acme" }] });
    await report(store, job, { type: "succeeded", output: '{"r":1}' }, T0 + 1);
    expect(await store.getJobOutput("gone")).toBe('{"r":1}');
    expect((await store.getJobHistory("gone")).length).toBeGreaterThan(0);
    expect(await purge(store, "succeededOrCancelled", T0 + 2)).toBe(1);
    expect(await store.getJob("gone")).toBeNull();
    expect(await store.getJobOutput("gone")).toBeNull();
    expect(await store.getJobHistory("gone")).toEqual([]);
    expect(await store.getDependencies("gone")).toBeNull();
    expect((await store.listJobs({ tags: [{ label: "temp" }] })).jobs).toEqual([]);
    expect(await store.facetTags({ key: "tenant" })).toEqual([]);
    expect(await store.countJobs()).toEqual([]);
    // The id is free again: nothing of the old job is left to collide with.
    expect((await store.enqueue({ jobs: [newJob("gone")], now: T0 + 3 }))[0]).toMatchObject({ status: "created" });
    expect(await store.getJobHistory("gone")).toHaveLength(1);
  });

  clause("retention: a purged job's dependency edges go with it", async () => {
    const store = await ctx.store();
    await enqueueJobs(store, [newJob("parent"), newJob("child", { parentIds: ["parent"] }), newJob("sibling", { parentIds: ["parent"] })]);
    expect(await store.cancelJob({ jobId: "child", actor: "alice", now: T0 + 1 })).toEqual({ status: "cancelled" });
    expect(await purge(store, "succeededOrCancelled", T0 + 2)).toBe(1);
    expect(await store.getJob("child")).toBeNull();
    expect(await store.getDependencies("child")).toBeNull();
    expect(await store.getDependencies("parent")).toEqual({
      parents: [],
      children: [{ jobId: "sibling", state: "awaitingParents" }],
    });
  });

  clause("retention: a workflow member is not purged while any member of its workflow is live", async () => {
    const store = await ctx.store();
    await store.enqueueWorkflow({ workflow: { id: "wf", name: "wf", jobs: [newJob("a"), newJob("b")] }, now: T0 });
    await enqueueJobs(store, [newJob("plain")]);
    const claimed = await claimJobs(store);
    const byId = new Map(claimed.map((j) => [j.id, j]));
    await report(store, byId.get("a")!, SUCCEEDED, T0 + 10);
    await report(store, byId.get("plain")!, SUCCEEDED, T0 + 10);
    expect(await purge(store, "succeededOrCancelled", LATER)).toBe(1);
    expect(await allJobIds(store)).toEqual(["a", "b"]);
    expect(await store.getWorkflow("wf")).toMatchObject({ jobCount: 2, counts: { succeeded: 1, leased: 1 } });
    expect(await store.getJobHistory("a")).not.toEqual([]);
  });

  clause("retention: a drained workflow's members are purged by its drain instant, and the workflow goes with them", async () => {
    const store = await ctx.store();
    await store.enqueueWorkflow({ workflow: { id: "wf", name: "wf", jobs: [newJob("a"), newJob("b")] }, now: T0 });
    await store.enqueueWorkflow({ workflow: { id: "other", name: "wf", jobs: [newJob("x")] }, now: T0 });
    const claimed = await claimJobs(store);
    const byId = new Map(claimed.map((j) => [j.id, j]));
    await report(store, byId.get("a")!, SUCCEEDED, T0 + 10);
    await report(store, byId.get("b")!, SUCCEEDED, T0 + 30);
    // `a` ended before T0 + 30, but the workflow drained only at T0 + 30.
    expect(await purge(store, "succeededOrCancelled", T0 + 30)).toBe(0);
    expect(await store.getJob("a")).not.toBeNull();
    expect(await store.getWorkflow("wf")).not.toBeNull();
    expect(await purge(store, "succeededOrCancelled", T0 + 31)).toBe(2);
    expect(await store.getJob("a")).toBeNull();
    expect(await store.getJob("b")).toBeNull();
    expect(await store.getWorkflow("wf")).toBeNull();
    expect((await store.listWorkflows()).workflows.map((w) => w.id)).toEqual(["other"]);
    expect(await allJobIds(store)).toEqual(["x"]);
  });

  clause("retention: a workflow member's output is kept until its workflow drains, then goes with it", async () => {
    const store = await ctx.store();
    await store.enqueueWorkflow({ workflow: { id: "wf", name: "wf", jobs: [newJob("a"), newJob("b")] }, now: T0 });
    const claimed = new Map((await claimJobs(store)).map((j) => [j.id, j]));
    await report(store, claimed.get("a")!, { type: "succeeded", output: '{"rows":42}' }, T0 + 10);
    expect(await purge(store, "succeededOrCancelled", LATER)).toBe(0);
    expect(await store.getJobOutput("a"), "kept while b runs").toBe('{"rows":42}');
    await report(store, claimed.get("b")!, { type: "succeeded", output: '"b"' }, T0 + 30);
    expect(await purge(store, "succeededOrCancelled", T0 + 30)).toBe(0);
    expect(await store.getJobOutput("a"), "kept until the drain instant").toBe('{"rows":42}');
    expect(await store.getJobOutput("b")).toBe('"b"');
    expect(await purge(store, "succeededOrCancelled", T0 + 31)).toBe(2);
    expect(await store.getJobOutput("a")).toBeNull();
    expect(await store.getJobOutput("b")).toBeNull();
  });

  clause("retention: a workflow whose members span both classes disappears with its last member", async () => {
    const store = await ctx.store();
    await store.enqueueWorkflow({ workflow: { id: "wf", name: "wf", jobs: [newJob("dead"), newJob("ok")] }, now: T0 });
    const claimed = await claimJobs(store);
    const byId = new Map(claimed.map((j) => [j.id, j]));
    await report(store, byId.get("dead")!, DEAD, T0 + 10);
    await report(store, byId.get("ok")!, SUCCEEDED, T0 + 20);
    expect(await purge(store, "succeededOrCancelled", LATER)).toBe(1);
    expect(await store.getJob("ok")).toBeNull();
    expect(await store.getWorkflow("wf")).not.toBeNull();
    expect(await purge(store, "deadLetteredOrQuarantined", LATER)).toBe(1);
    expect(await store.getJob("dead")).toBeNull();
    expect(await store.getWorkflow("wf")).toBeNull();
    expect((await store.listWorkflows()).workflows).toEqual([]);
  });

  clause("retention: a malformed purge request throws InvalidInputError naming the field and purges nothing", async () => {
    const store = await ctx.store();
    await endJobs(store, [["s", SUCCEEDED, T0 + 1]]);
    const bad = (fields: Record<string, unknown>) =>
      ({ retentionClass: "succeededOrCancelled", before: LATER, max: 10, ...fields }) as unknown as PurgeTerminalRequest;
    const cases: [PurgeTerminalRequest, string][] = [
      [bad({ retentionClass: "everything" }), "retentionClass"],
      [bad({ max: 0 }), "max"],
      [bad({ max: 1.5 }), "max"],
      [bad({ before: 1.5 }), "before"],
      [bad({ before: "soon" }), "before"],
    ];
    for (const [request, field] of cases) {
      await expectBelayError(() => store.purgeTerminal(request), "BELAY_INVALID_INPUT", { field });
    }
    expect(await allJobIds(store)).toEqual(["s"]);
  });
}
