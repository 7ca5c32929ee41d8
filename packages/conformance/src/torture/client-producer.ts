import type { DependencyMode, EnqueueResult, NewJob, RetryDisposition, SeededRandom, Tag } from "@belay/contract";
import { type ClientContext, sleep } from "./client.js";
import type { JournalJob } from "./journal.js";
import { BARRIER_MS, POOL_SIZE, TAG_VOCABULARY, TORTURE_QUEUES } from "./plan.js";

// Producers: batch enqueues (tags with repeats, parents racing their completion, a repeated id
// inside one call, for-later due times, the jobs' own retry policies), batches made invalid on
// purpose (nothing of them may be written), workflows, and the duplicate-id pools every client
// fires at the same barrier instant.

/** 0–4 tags from the vocabulary, sometimes one twice (it must be stored once). */
export function randomTags(rng: SeededRandom): Tag[] {
  const tags = Array.from({ length: rng.int(0, 4) }, () => rng.pick(TAG_VOCABULARY));
  if (tags.length > 0 && rng.chance(0.3)) tags.push(tags[0]!);
  return tags;
}

function randomRetry(rng: SeededRandom): RetryDisposition | null {
  return rng.chance(0.5) ? null : { maxAttempts: rng.int(1, 4), delaysMs: [rng.int(0, 40)] };
}

/** A job and what the journal keeps of it. */
function makeJob(
  rng: SeededRandom,
  id: string,
  queue: string,
  payload: string,
  dueAt: number,
  parentIds: readonly string[] = [],
): { job: NewJob; journal: JournalJob } {
  const tags = randomTags(rng);
  const retry = randomRetry(rng);
  const mode: DependencyMode = rng.chance(0.3) ? "onAnyTerminal" : "onSuccess";
  const job: NewJob = { id, jobName: rng.chance(0.1) ? "torture.rare" : "torture.job", queue, payload, dueAt, parentIds, dependencyMode: mode, tags, retry };
  return { job, journal: { id, jobName: job.jobName, queue, payload, tags, parentIds, mode, retry } };
}

function plainQueue(rng: SeededRandom): string {
  return rng.weighted([
    [TORTURE_QUEUES.plain, 5],
    [TORTURE_QUEUES.fixed, 2],
    [TORTURE_QUEUES.raced, 2],
  ]);
}

function remember(ctx: ClientContext, results: readonly EnqueueResult[]): void {
  for (const result of results) {
    if (result.status === "created") ctx.createdByMe.add(result.id);
    if (result.status === "created" || result.status === "duplicate") ctx.known.add(result.id);
  }
}

async function enqueueBatch(ctx: ClientContext, rng: SeededRandom): Promise<void> {
  const now = Date.now();
  const made = Array.from({ length: rng.int(1, 20) }, () => {
    const parents = rng.chance(0.15) ? ctx.known.some(rng, rng.int(1, 3)) : [];
    const dueAt = rng.chance(0.2) ? now + rng.int(0, 1_500) : now;
    return makeJob(rng, ctx.ownId("j"), plainQueue(rng), `{"n":${rng.int(0, 999)}}`, dueAt, parents);
  });
  // The same id twice in one call: the second is a duplicate of the first, never an overwrite.
  if (rng.chance(0.05)) made.push(makeJob(rng, made[0]!.job.id, TORTURE_QUEUES.plain, '{"repeat":true}', now));
  // An id this client enqueued before: a duplicate, the stored job unchanged.
  const old = rng.chance(0.05) ? [...ctx.createdByMe].at(-1 - rng.int(0, 5)) : undefined;
  if (old !== undefined) made.push(makeJob(rng, old, TORTURE_QUEUES.plain, '{"again":true}', now));
  const answer = await ctx.call("producer", "enqueue", (at) => ctx.store.enqueue({ jobs: made.map((m) => m.job), now: at }));
  if (answer === null) return;
  ctx.record({ kind: "enqueue", lane: "producer", now: answer.now, ack: answer.ack, pool: null, jobs: made.map((m) => m.journal), results: answer.value, invalid: false });
  remember(ctx, answer.value);
}

/** A batch with one job over a bound or naming an unknown parent: every job is refused, none written. */
async function invalidBatch(ctx: ClientContext, rng: SeededRandom): Promise<void> {
  const now = Date.now();
  const made = Array.from({ length: rng.int(1, 6) }, () => makeJob(rng, ctx.ownId("x"), plainQueue(rng), "{}", now));
  const bad = makeJob(rng, ctx.ownId("x"), TORTURE_QUEUES.plain, "{}", now);
  const flaw = rng.pick(["payload", "parent", "tags", "name"] as const);
  const job: NewJob =
    flaw === "payload"
      ? { ...bad.job, payload: `"${"x".repeat(65_536)}"` }
      : flaw === "parent"
        ? { ...bad.job, parentIds: [ctx.ownId("nope")] }
        : flaw === "tags"
          ? { ...bad.job, tags: Array.from({ length: 33 }, (_, i) => ({ key: "many", value: String(i) })) }
          : { ...bad.job, jobName: "n".repeat(129) };
  made.splice(rng.int(0, made.length), 0, { job, journal: { ...bad.journal, payload: flaw } });
  const answer = await ctx.call("producer", "enqueue", (at) => ctx.store.enqueue({ jobs: made.map((m) => m.job), now: at }));
  if (answer === null) return;
  ctx.record({ kind: "enqueue", lane: "producer", now: answer.now, ack: answer.ack, pool: null, jobs: made.map((m) => m.journal), results: answer.value, invalid: true });
}

/** Members of a small workflow, in shuffled order: a chain, a diamond or a single job. */
function workflowMembers(rng: SeededRandom, workflowId: string, payload: string, now: number): { job: NewJob; journal: JournalJob }[] {
  const id = (letter: string) => `${workflowId}.${letter}`;
  const queue = () => (rng.chance(0.7) ? TORTURE_QUEUES.flow : TORTURE_QUEUES.plain);
  const shape = rng.pick(["chain", "diamond", "single"] as const);
  const edges: [string, string[]][] =
    shape === "chain"
      ? [["a", []], ["b", [id("a")]], ["c", [id("b")]]]
      : shape === "diamond"
        ? [["a", []], ["b", [id("a")]], ["c", [id("a")]], ["d", [id("b"), id("c")]]]
        : [["a", []]];
  return rng.shuffle(edges.map(([letter, parents]) => makeJob(rng, id(letter), queue(), payload, now, parents)));
}

async function enqueueWorkflow(ctx: ClientContext, rng: SeededRandom, workflowId: string, pool: number | null, lane: string): Promise<void> {
  const made = workflowMembers(rng, workflowId, `{"c":${ctx.index}}`, Date.now());
  const workflow = { id: workflowId, name: pool === null ? "torture.flow" : "torture.pool", jobs: made.map((m) => m.job) };
  const answer = await ctx.call(lane, "enqueueWorkflow", (at) => ctx.store.enqueueWorkflow({ workflow, now: at }));
  if (answer === null) return;
  const result = answer.value;
  ctx.record({ kind: "workflow", lane, now: answer.now, ack: answer.ack, pool, workflowId, jobs: made.map((m) => m.journal), result });
  if (result.status === "created") {
    ctx.workflows.push(workflowId);
    for (const member of result.jobs) ctx.createdByMe.add(member.id);
  }
  // A duplicate's members are the creator's, whose shape may differ: only `a` is in every shape.
  if (result.status === "created") ctx.known.add(...made.map((m) => m.job.id));
  else if (result.status === "duplicate") ctx.known.add(`${workflowId}.a`);
}

/** Batch enqueues, invalid batches and workflows until the deadline. */
export async function producerLane(ctx: ClientContext): Promise<void> {
  const rng = ctx.random(1);
  while (ctx.running()) {
    const action = rng.weighted([
      ["batch", 12],
      ["invalid", 1],
      ["workflow", 3],
    ] as const);
    if (action === "batch") await enqueueBatch(ctx, rng);
    else if (action === "invalid") await invalidBatch(ctx, rng);
    else await enqueueWorkflow(ctx, rng, ctx.ownId("wf"), null, "producer");
    await sleep(rng.int(5, 40));
  }
}

/**
 * The duplicate-id pools: at every barrier instant (the same wall-clock instant in every client)
 * each client enqueues the round's pool of ids in its own order with its own payloads — exactly
 * one creation per id — or, every fourth round, the same workflow id.
 */
export async function barrierLane(ctx: ClientContext): Promise<void> {
  const rng = ctx.random(2);
  const { startAt } = ctx.config;
  let lastPlain: number | null = null;
  for (let round = 0; ; round++) {
    const at = startAt + round * BARRIER_MS;
    if (at >= ctx.deadline) return;
    await sleep(at - Date.now());
    // A round this client reached late would not race the others: leave it to them.
    if (Date.now() > at + BARRIER_MS / 2) continue;
    if (round % 4 === 3) {
      await enqueueWorkflow(ctx, rng, `wfpool${round}`, round, "barrier");
      continue;
    }
    const now = Date.now();
    const ids = rng.shuffle(Array.from({ length: POOL_SIZE }, (_, m) => `pool${round}-${m}`));
    const made = ids.map((id) => {
      // A parent from an earlier pool (it exists: this client saw that round answered).
      const parents = lastPlain !== null && rng.chance(0.2) ? [`pool${lastPlain}-${rng.int(0, POOL_SIZE - 1)}`] : [];
      return makeJob(rng, id, plainQueue(rng), `{"c":${ctx.index},"round":${round}}`, now, parents);
    });
    if (rng.chance(0.5)) made.push(makeJob(rng, ctx.ownId("j"), plainQueue(rng), "{}", now));
    const answer = await ctx.call("barrier", "enqueue", (t) => ctx.store.enqueue({ jobs: made.map((m) => m.job), now: t }));
    if (answer === null) continue;
    ctx.record({ kind: "enqueue", lane: "barrier", now: answer.now, ack: answer.ack, pool: round, jobs: made.map((m) => m.journal), results: answer.value, invalid: false });
    remember(ctx, answer.value);
    lastPlain = round;
  }
}
