import type { ClaimedJob, MintDecision, NewJob, OutcomeReport, SeededRandom, Tag } from "@belay/contract";
import { type ClientContext, sleep } from "./client.js";
import type { JournalJob, JournalReport } from "./journal.js";
import {
  ALL_TORTURE_QUEUES, PROBE_JOBS, PROBE_LIMIT, RACED_LIMITS, SHARED_SCHEDULES, TORTURE_QUEUES, TORTURE_RETRY, ownSchedule,
  probeQueue, tortureSchedule,
} from "./plan.js";

// Operators and maintenance: pause/resume and limit races on `raced`, probes of the client's own
// queue (a limit, a pause, late and real reports, each with a certain answer), cancels of any job
// this client knows, requeues of its own dead-lettered and quarantined jobs, schedule triggers,
// expiry sweeps (some on a clock running ahead), schedule minting racing on the cursor (some
// stale on purpose), the removal of a schedule others still mint, and reads under load.

/** Pauses, resumes or limits `queue`; answers whether the store acknowledged it. */
async function queueAction(ctx: ClientContext, queue: string, action: "pauseQueue" | "resumeQueue" | "setConcurrencyLimit", limit: number | null): Promise<boolean> {
  const { store, actor } = ctx;
  const answer = await ctx.call("operator", action, (now) =>
    action === "setConcurrencyLimit"
      ? store.setConcurrencyLimit({ queue, limit, actor, now })
      : action === "pauseQueue"
        ? store.pauseQueue({ queue, actor, now })
        : store.resumeQueue({ queue, actor, now }),
  );
  if (answer === null) return false;
  ctx.record({ kind: "queue", lane: "operator", now: answer.now, ack: answer.ack, actor, action, queue, limit });
  return true;
}

/** Resolves once the wall clock has moved past the millisecond it reads now. */
async function nextMillisecond(): Promise<void> {
  for (const now = Date.now(); Date.now() <= now; ) await sleep(1);
}

/** The tag a probe's success adds. */
const PROBE_TAG: Tag = { key: "probe", value: "done" };

/**
 * Claims `queue` once under a worker id of its own and ends each job it got the way a probe
 * does: a report at its lease's expiry instant (a dead lease: it must be refused), then a
 * success with an output and an added tag. Answers how many jobs it got.
 */
async function probeClaim(ctx: ClientContext, queue: string): Promise<number> {
  const workerId = ctx.ownId("probe");
  const claimed = await ctx.claim("operator", { workerId, queues: [queue], max: PROBE_JOBS + 2, leaseMs: 30_000 });
  if (claimed === null) return 0;
  const jobs = claimed.value;
  const report = async (rows: readonly JournalReport[], clock?: () => number) => {
    const reports = rows.map((r): OutcomeReport => ({
      jobId: r.jobId,
      workerId,
      attempt: r.attempt,
      outcome: r.output === null ? { type: "succeeded" } : { type: "succeeded", output: r.output },
      addTags: r.addTags,
    }));
    const answer = await ctx.call("operator", "reportOutcomes", (now) => ctx.store.reportOutcomes({ reports, now }), clock);
    if (answer !== null) ctx.record({ kind: "report", lane: "operator", now: answer.now, ack: answer.ack, reports: rows, results: answer.value });
  };
  const row = (job: ClaimedJob, output: string | null, addTags: readonly Tag[], late: boolean): JournalReport => ({
    jobId: job.id,
    workerId,
    attempt: job.attempt,
    type: "succeeded",
    retryAt: null,
    output,
    outputBytes: output === null ? 0 : output.length,
    failureDetail: null,
    addTags,
    expect: late ? "stale" : null,
    why: late ? "leaseDead" : null,
  });
  for (const job of jobs) {
    await report([row(job, '{"late":true}', [], true)], () => job.leaseExpiresAt);
    await report([row(job, `{"probe":"${job.id}"}`, [PROBE_TAG], false)]);
  }
  return jobs.length;
}

/**
 * A probe on this client's own queue, which no other client touches, so every answer it gets is
 * certain: (the first time) the queue limited to {@link PROBE_LIMIT}; {@link PROBE_JOBS} jobs
 * enqueued due at once; the queue paused and claimed — the claim must take nothing, and the audit
 * finds it wholly between an acknowledged pause and the only resume that could follow; the queue
 * resumed; then claims until it is empty, each taking at most the limit, each job reported once
 * at its lease's expiry instant (refused) and then succeeded with an output and a tag. It gives
 * every check the sabotages aim at (see `sabotage.ts`) something to see in every run.
 */
async function probe(ctx: ClientContext, first: boolean): Promise<void> {
  const queue = probeQueue(ctx.index);
  if (first && !(await queueAction(ctx, queue, "setConcurrencyLimit", PROBE_LIMIT))) return;
  const made = Array.from({ length: PROBE_JOBS }, () => {
    const id = ctx.ownId("p");
    const journal: JournalJob = { id, jobName: "torture.probe", queue, payload: "{}", tags: [], parentIds: [], mode: "onSuccess", retry: null };
    return journal;
  });
  const jobs = (now: number): NewJob[] =>
    made.map((j) => ({ id: j.id, jobName: j.jobName, queue, payload: j.payload, dueAt: now, parentIds: [], dependencyMode: "onSuccess", tags: [], retry: null }));
  const enqueued = await ctx.call("operator", "enqueue", (now) => ctx.store.enqueue({ jobs: jobs(now), now }));
  if (enqueued === null) return;
  ctx.record({ kind: "enqueue", lane: "operator", now: enqueued.now, ack: enqueued.ack, pool: null, jobs: made, results: enqueued.value, invalid: false });
  for (const result of enqueued.value) if (result.status === "created") ctx.createdByMe.add(result.id);
  if (await queueAction(ctx, queue, "pauseQueue", null)) {
    // The claim starts strictly after the pause's answer, and the resume strictly after the
    // claim's (the audit orders calls only when their instants differ).
    await nextMillisecond();
    await probeClaim(ctx, queue);
    await nextMillisecond();
  }
  await queueAction(ctx, queue, "resumeQueue", null);
  for (let round = 0; round < PROBE_JOBS + 1 && (await probeClaim(ctx, queue)) > 0; round++);
}

async function cancel(ctx: ClientContext, rng: SeededRandom): Promise<void> {
  const jobId = ctx.known.pick(rng);
  if (jobId === null) return;
  const answer = await ctx.call("operator", "cancelJob", (now) => ctx.store.cancelJob({ jobId, actor: ctx.actor, now }));
  if (answer !== null) ctx.record({ kind: "cancel", lane: "operator", now: answer.now, ack: answer.ack, actor: ctx.actor, jobId, status: answer.value.status });
}

async function requeue(ctx: ClientContext, requeued: Set<string>): Promise<void> {
  const page = await ctx.call("operator", "listJobs", () => ctx.store.listJobs({ states: ["deadLettered", "quarantined"], order: "newestFirst", limit: 50 }));
  const candidate = page?.value.jobs.find((j) => ctx.createdByMe.has(j.id) && !requeued.has(j.id));
  if (candidate === undefined) return;
  requeued.add(candidate.id);
  const answer = await ctx.call("operator", "requeueJob", (now) => ctx.store.requeueJob({ jobId: candidate.id, actor: ctx.actor, now }));
  if (answer !== null) {
    ctx.record({ kind: "requeue", lane: "operator", now: answer.now, ack: answer.ack, actor: ctx.actor, jobId: candidate.id, status: answer.value.status });
  }
}

async function trigger(ctx: ClientContext, rng: SeededRandom, lastTrigger: string | null): Promise<string> {
  const scheduleId = rng.chance(0.7) ? rng.pick(SHARED_SCHEDULES) : ownSchedule(ctx.index);
  // Sometimes the previous id again: a repeat is a no-op `triggered`.
  const jobId = lastTrigger !== null && rng.chance(0.2) ? lastTrigger : ctx.ownId("t");
  const answer = await ctx.call("operator", "triggerSchedule", (now) => ctx.store.triggerSchedule({ scheduleId, jobId, actor: ctx.actor, now }));
  if (answer !== null) {
    ctx.record({ kind: "trigger", lane: "operator", now: answer.now, ack: answer.ack, actor: ctx.actor, scheduleId, jobId, status: answer.value.status });
    if (answer.value.status === "triggered") ctx.known.add(jobId);
  }
  return jobId;
}

/** Reads under load; the ones with a certain answer are checked on the spot. */
async function read(ctx: ClientContext, rng: SeededRandom): Promise<void> {
  const { store } = ctx;
  const mine = [...ctx.createdByMe];
  const id = mine.length > 0 ? rng.pick(mine) : null;
  const what = rng.pick(["getJob", "countJobs", "listJobs", "facetTags", "suggestTags", "getDependencies", "getWorkflow", "listAuditRecords", "listQueueSettings"] as const);
  if (what === "getJob" && id !== null) {
    const answer = await ctx.call("operator", "getJob", () => store.getJob(id));
    if (answer !== null && answer.value === null) ctx.anomaly("operator", "getJob", `job ${id}, acknowledged as created, reads as absent`);
  } else if (what === "getWorkflow" && ctx.workflows.length > 0) {
    const workflowId = rng.pick(ctx.workflows);
    const answer = await ctx.call("operator", "getWorkflow", () => store.getWorkflow(workflowId));
    if (answer !== null && answer.value === null) ctx.anomaly("operator", "getWorkflow", `workflow ${workflowId}, acknowledged as created, reads as absent`);
  } else if (what === "getDependencies" && id !== null) {
    const answer = await ctx.call("operator", "getDependencies", () => store.getDependencies(id));
    if (answer !== null && answer.value === null) ctx.anomaly("operator", "getDependencies", `job ${id}, acknowledged as created, has no edges record`);
  } else if (what === "countJobs") await ctx.call("operator", what, () => store.countJobs());
  else if (what === "listJobs") await ctx.call("operator", what, () => store.listJobs({ tags: [{ key: "tenant" }], states: ["scheduled", "leased"], limit: 20 }));
  else if (what === "facetTags") await ctx.call("operator", what, () => store.facetTags({ key: "tenant", scope: { queues: [TORTURE_QUEUES.plain] } }));
  else if (what === "suggestTags") await ctx.call("operator", what, () => store.suggestTags({ prefix: rng.pick(["ur", "ten", "s", ""]) }));
  else if (what === "listAuditRecords") await ctx.call("operator", what, () => store.listAuditRecords({ order: "newestFirst", limit: 5 }));
  else if (what === "listQueueSettings") await ctx.call("operator", what, () => store.listQueueSettings());
}

export async function operatorLane(ctx: ClientContext): Promise<void> {
  const rng = ctx.random(3);
  const requeued = new Set<string>();
  let lastTrigger: string | null = null;
  // Every client probes its own queue first thing, even one that started too late to race.
  for (let first = true; first || ctx.running(); first = false) {
    const action = first
      ? "probe"
      : rng.weighted([
          ["pause", 3],
          ["probe", 1],
          ["limit", 3],
          ["cancel", 5],
          ["requeue", 3],
          ["trigger", 2],
          ["read", 4],
        ] as const);
    const raced = TORTURE_QUEUES.raced;
    if (action === "pause") {
      await queueAction(ctx, raced, "pauseQueue", null);
      await sleep(rng.int(10, 150));
      await queueAction(ctx, raced, "resumeQueue", null);
    } else if (action === "probe") await probe(ctx, first);
    else if (action === "limit") await queueAction(ctx, raced, "setConcurrencyLimit", rng.pick(RACED_LIMITS));
    else if (action === "cancel") await cancel(ctx, rng);
    else if (action === "requeue") await requeue(ctx, requeued);
    else if (action === "trigger") lastTrigger = await trigger(ctx, rng, lastTrigger);
    else await read(ctx, rng);
    await sleep(rng.int(10, 60));
  }
}

/**
 * One mint of `scheduleId` planned like the Core would: the ticks (whole seconds) since the
 * cursor, the newest three minted and older ones skipped (catch-up `skip`), plus the tick at the
 * cursor itself, which an earlier decision minted already and must not be minted twice. With
 * `stale`, the expected cursor is one off on purpose.
 */
async function mint(ctx: ClientContext, rng: SeededRandom, scheduleId: string): Promise<void> {
  const read = await ctx.call("maintenance", "getSchedule", () => ctx.store.getSchedule(scheduleId));
  if (read === null || read.value === null) return;
  const cursor = read.value.cursor;
  // Sometimes up to a whole second: the next decision then starts at a tick already minted.
  const wall = Date.now();
  const newCursor = rng.chance(0.3) ? Math.floor(wall / 1_000) * 1_000 : wall;
  if (newCursor <= cursor) return;
  const ticks: number[] = [];
  for (let t = Math.ceil(cursor / 1_000) * 1_000; t <= newCursor; t += 1_000) if (t > cursor) ticks.push(t);
  const minted = ticks.slice(-3);
  const skip = ticks.slice(0, -3);
  if (cursor % 1_000 === 0) minted.unshift(cursor);
  const stale = rng.chance(0.1);
  const decision: MintDecision = { scheduleId, expectedCursor: stale ? cursor - 1 : cursor, newCursor, mint: minted, skip };
  const answer = await ctx.call("maintenance", "mintDue", (now) => ctx.store.mintDue({ decisions: [decision], now }));
  if (answer === null) return;
  ctx.record({ kind: "mint", lane: "maintenance", now: answer.now, ack: answer.ack, decisions: [decision], stale: [stale], results: answer.value });
  for (const result of answer.value) if (result.status === "minted") ctx.known.add(...result.jobIds);
}

export async function maintenanceLane(ctx: ClientContext): Promise<void> {
  const rng = ctx.random(4);
  const { store } = ctx;
  const own = ownSchedule(ctx.index);
  const neighbour = ownSchedule((ctx.index + 1) % ctx.config.clients);
  const created = await ctx.call("maintenance", "upsertSchedule", (now) => store.upsertSchedule({ schedule: tortureSchedule(own), now }));
  if (created !== null) ctx.record({ kind: "upsertSchedule", lane: "maintenance", now: created.now, ack: created.ack, scheduleId: own, result: created.value });
  const removeAt = ctx.config.startAt + ctx.config.durationMs * (0.4 + rng.next() * 0.4);
  let removed = false;
  while (ctx.running()) {
    if (!removed && Date.now() >= removeAt) {
      removed = true;
      const answer = await ctx.call("maintenance", "removeSchedule", () => store.removeSchedule({ scheduleId: own }));
      if (answer !== null) ctx.record({ kind: "removeSchedule", lane: "maintenance", now: answer.now, ack: answer.ack, scheduleId: own, status: answer.value.status });
    }
    const action = rng.weighted([
      ["expire", 5],
      ["mintShared", 4],
      ["mintOwn", 2],
      ["upsert", 1],
    ] as const);
    if (action === "expire") {
      const ahead = rng.chance(0.15) ? rng.int(100, 800) : 0;
      const max = rng.int(1, 20);
      const queues = rng.chance(0.5) ? null : rng.shuffle(ALL_TORTURE_QUEUES).slice(0, rng.int(1, 3));
      const answer = await ctx.call("maintenance", "expireLeases", (now) =>
        store.expireLeases(queues === null ? { now, max, retry: TORTURE_RETRY } : { now, max, queues, retry: TORTURE_RETRY }),
        () => Date.now() + ahead,
      );
      if (answer !== null) ctx.record({ kind: "expire", lane: "maintenance", now: answer.now, ack: answer.ack, queues, max, results: answer.value.expired });
    } else if (action === "mintShared") await mint(ctx, rng, rng.pick(SHARED_SCHEDULES));
    else if (action === "mintOwn") await mint(ctx, rng, rng.chance(0.5) ? own : neighbour);
    else {
      const scheduleId = rng.pick(SHARED_SCHEDULES);
      const answer = await ctx.call("maintenance", "upsertSchedule", (now) => store.upsertSchedule({ schedule: tortureSchedule(scheduleId), now }));
      if (answer !== null) ctx.record({ kind: "upsertSchedule", lane: "maintenance", now: answer.now, ack: answer.ack, scheduleId, result: answer.value });
    }
    await sleep(rng.int(20, 80));
  }
}
