import {
  type EnqueueRequest, type EnqueueResult, type EnqueueThroughRequest, type EnqueuedThrough, type InitialJobState, type Instant,
  type NormalizedNewJob, type QueryExecutor, type TransitionCause, DEPENDENCY_MODE_CODES, JOB_STATE_CODES,
  TRANSITION_CAUSE_CODES, boundRejection, jobStateFromCode, planEnqueue, refusedEnqueue, terminalCauseText, validateNewJob,
} from "@belay/contract";
import { DueQueues, type StoreContext } from "../context.js";
import type { CheckedJob } from "../enqueue-coalescer.js";
import { type CheckedExecutor, type Session, type SqlCache, clientExecutor } from "../session.js";
import { encodeIds, encodeRetry, encodeTags, stateOf, toInt } from "./jobs.js";

const STATE = JOB_STATE_CODES;
const CAUSE = TRANSITION_CAUSE_CODES;

/** A job ready to insert: validated, with its initial state decided. */
export interface PlannedInsert {
  readonly job: NormalizedNewJob;
  readonly state: number;
  readonly parentsRemaining: number;
  readonly terminalCause: string | null;
  readonly scheduleId: string | null;
  readonly workflowId: string | null;
}

/** What became of one planned insert: its seq, or the state of the job that already held its id. */
export interface InsertOutcome {
  readonly seq: number | null;
  readonly existingState: number | null;
}

/**
 * One statement inserts a whole batch from arrays: the jobs (in input order, so seq follows it),
 * the queue rows of new queues, their tags, their parent edges and their first transitions. A job
 * whose id exists is left alone (ON CONFLICT DO NOTHING) and reported with the existing job's
 * state, read from the statement's snapshot. Everything else is written for the inserted jobs
 * only, so a duplicate writes nothing at all: not a queue row for the queue it names, nor a
 * parent's `has_children` (existing parents of inserted jobs are marked here, once locked by the
 * caller; parents inserted by the same call are born marked, `$19`).
 *
 * The job's own retry policy (`$21`) is written here once and never updated; the transitions
 * record `$20` as their cause (enqueued, minted or triggered), `parentFailed` for a job born
 * cancelled.
 */
export const INSERT_JOBS = (S: string) => `
WITH input AS (
  SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[], $6::int2[], $7::int4[], $8::text[],
                       $9::text[], $10::int2[], $11::text[], $12::text[], $13::text[], $14::text[], $19::bool[], $21::text[])
    WITH ORDINALITY AS i(id, job_name, queue, payload, due_at, state, parents_remaining, terminal_cause,
                         parent_ids, dependency_mode, tags, trace_context, schedule_id, workflow_id, has_children, retry, ord)
),
ins AS (
  INSERT INTO ${S}.jobs (id, job_name, queue, state, due_at, enqueued_at, terminal_at, terminal_cause, parents_remaining,
                         parent_ids, dependency_mode, tags, trace_context, schedule_id, workflow_id, has_children,
                         transition_count, retry, payload)
  SELECT id, job_name, queue, state, due_at, $15, CASE WHEN state >= ${STATE.succeeded} THEN $15::bigint END, terminal_cause, parents_remaining,
         parent_ids, dependency_mode, tags, trace_context, schedule_id, workflow_id, has_children, 1, retry, payload
  FROM input ORDER BY ord
  ON CONFLICT (id) DO NOTHING
  RETURNING seq, id, queue, state, tags
),
new_queues AS (
  INSERT INTO ${S}.queues (queue) SELECT DISTINCT queue FROM ins ON CONFLICT (queue) DO NOTHING
),
new_tags AS (
  INSERT INTO ${S}.job_tags (job_seq, key, value)
  SELECT ins.seq, t.pair->>0, t.pair->>1
  FROM ins CROSS JOIN LATERAL json_array_elements(ins.tags::json) AS t(pair)
  WHERE ins.tags IS NOT NULL
  ON CONFLICT DO NOTHING
),
edges AS (
  SELECT e.parent_id, c.seq AS child_seq FROM unnest($17::text[], $18::text[]) AS e(child_id, parent_id) JOIN ins c ON c.id = e.child_id
),
new_edges AS (
  INSERT INTO ${S}.job_edges (parent_seq, child_seq)
  SELECT coalesce(pi.seq, pj.seq), e.child_seq
  FROM edges e
  LEFT JOIN ins pi ON pi.id = e.parent_id
  LEFT JOIN ${S}.jobs pj ON pj.id = e.parent_id
  WHERE coalesce(pi.seq, pj.seq) IS NOT NULL
  ON CONFLICT DO NOTHING
),
marked_parents AS (
  UPDATE ${S}.jobs p SET has_children = true
  WHERE p.id = ANY(ARRAY(SELECT DISTINCT e.parent_id FROM edges e)) AND NOT p.has_children
),
log AS (
  INSERT INTO ${S}.transitions (xid, job_seq, ordinal, at, state, attempt, cause)
  SELECT pg_current_xact_id(), seq, 1, $15, state, 0,
         CASE WHEN state = ${STATE.cancelled} THEN ${CAUSE.parentFailed} ELSE $20::int2 END
  FROM ins WHERE $16 ORDER BY seq
)
SELECT i.ord, ins.seq, ins.state, e.state AS existing_state
FROM input i
LEFT JOIN ins ON ins.id = i.id
LEFT JOIN ${S}.jobs e ON e.id = i.id AND ins.seq IS NULL
ORDER BY i.ord`;

/** Why an insert's jobs were created: by an enqueue (or workflow), a schedule's tick, or a trigger. */
export type CreationCause = Extract<TransitionCause, "enqueued" | "minted" | "triggered">;

/** Inserts planned jobs in one statement; results in input order. */
export async function insertJobs(
  session: Session,
  sql: SqlCache,
  planned: readonly PlannedInsert[],
  now: Instant,
  history: boolean,
  cause: CreationCause,
): Promise<InsertOutcome[]> {
  if (planned.length === 0) return [];
  const edgeChildren: string[] = [];
  const edgeParents: string[] = [];
  for (const { job } of planned) {
    for (const parentId of job.parentIds) {
      edgeChildren.push(job.id);
      edgeParents.push(parentId);
    }
  }
  // Parents inserted in the same call are born knowing they have children.
  const parentsHere = new Set(edgeParents);
  const rows = await session.query(sql.get("insertJobs", INSERT_JOBS), [
    planned.map((p) => p.job.id),
    planned.map((p) => p.job.jobName),
    planned.map((p) => p.job.queue),
    planned.map((p) => p.job.payload),
    planned.map((p) => p.job.dueAt),
    planned.map((p) => p.state),
    planned.map((p) => p.parentsRemaining),
    planned.map((p) => p.terminalCause),
    planned.map((p) => encodeIds(p.job.parentIds)),
    planned.map((p) => DEPENDENCY_MODE_CODES[p.job.dependencyMode]),
    planned.map((p) => encodeTags(p.job.tags)),
    planned.map((p) => p.job.traceContext),
    planned.map((p) => p.scheduleId),
    planned.map((p) => p.workflowId),
    now,
    history,
    edgeChildren,
    edgeParents,
    planned.map((p) => parentsHere.has(p.job.id)),
    TRANSITION_CAUSE_CODES[cause],
    planned.map((p) => encodeRetry(p.job.retry)),
  ]);
  return rows.map((row) => ({
    seq: row["seq"] == null ? null : toInt(row["seq"]),
    existingState: row["existing_state"] == null ? null : toInt(row["existing_state"]),
  }));
}

// Locks the named parents and reads their current states; also reads which of the call's ids
// already exist. The lock is the one an update takes: an outcome, expiry or cancel finishing a
// parent waits for this transaction, then re-reads the row — with the `has_children` that the
// insert sets for the parents of the jobs it creates — and so looks for the new child's edge.
// Nothing is written here: a call refused or found duplicate after this read leaves no trace.
// Rows are locked in seq order, the order every statement that writes several jobs locks them
// in, so that two writers sharing rows queue up behind each other instead of deadlocking.
const LOCK_PARENTS = (S: string) => `
WITH parents AS (
  SELECT id, state FROM ${S}.jobs WHERE id = ANY($1::text[]) ORDER BY seq FOR NO KEY UPDATE
)
SELECT 'parent' AS kind, id, state FROM parents
UNION ALL
SELECT 'existing', id, state FROM ${S}.jobs WHERE id = ANY($2::text[])`;

const READ_PARENTS = (S: string) => `
SELECT 'parent' AS kind, id, state FROM ${S}.jobs WHERE id = ANY($1::text[])
UNION ALL
SELECT 'existing', id, state FROM ${S}.jobs WHERE id = ANY($2::text[])`;

/** Current states of `parentIds` (locked when `lock`) and of those of `ids` that exist. */
async function parentsAndExisting(
  session: Session,
  sql: SqlCache,
  parentIds: readonly string[],
  ids: readonly string[],
  lock: boolean,
): Promise<{ parents: Map<string, number>; existing: Map<string, number> }> {
  const rows = await session.query(lock ? sql.get("lockParents", LOCK_PARENTS) : sql.get("readParents", READ_PARENTS), [
    parentIds,
    ids,
  ]);
  const parents = new Map<string, number>();
  const existing = new Map<string, number>();
  for (const row of rows) {
    (row["kind"] === "parent" ? parents : existing).set(row["id"] as string, toInt(row["state"]));
  }
  return { parents, existing };
}

// Hints from inside a caller's transaction ride that transaction: PostgreSQL delivers them at
// its commit and drops them at its rollback.
const NOTIFY = () => `SELECT pg_notify($1, q) FROM unnest($2::text[]) AS q`;

/** Sends wake-up hints for `queues` on `channel` within the session. */
export async function notifyQueues(session: Session, sql: SqlCache, channel: string, queues: readonly string[]): Promise<void> {
  if (queues.length > 0) await session.query(sql.get("notify", NOTIFY), [channel, queues]);
}

/**
 * The initial state of a new job from its parents' states: cancelled at once when an
 * `onSuccess` parent already ended otherwise than succeeded, awaiting while any parent is live.
 */
export function initialState(
  job: NormalizedNewJob,
  stateOfParent: (id: string) => number,
): { state: number; parentsRemaining: number; terminalCause: string | null } {
  let live = 0;
  for (const parentId of job.parentIds) {
    const state = stateOfParent(parentId);
    if (state < STATE.succeeded) live++;
    else if (job.dependencyMode === "onSuccess" && state !== STATE.succeeded) {
      const terminalCause = terminalCauseText("parentEnded", { parentId, parentState: jobStateFromCode(state) });
      return { state: STATE.cancelled, parentsRemaining: 0, terminalCause };
    }
  }
  return live > 0
    ? { state: STATE.awaitingParents, parentsRemaining: live, terminalCause: null }
    : { state: STATE.scheduled, parentsRemaining: 0, terminalCause: null };
}

const STATE_BY_ID = (S: string) => `SELECT id, state FROM ${S}.jobs WHERE id = ANY($1::text[])`;

/**
 * See `JobStore.enqueue`: one statement without parents, a transaction with them. With `tx`,
 * inside the caller's `pg` transaction instead, as {@link enqueueThrough} does.
 */
export async function enqueue(ctx: StoreContext, request: EnqueueRequest): Promise<EnqueueResult[]> {
  if (request.tx === undefined) return enqueueJobs(ctx, request);
  return enqueueJobs(ctx, request, ctx.caller(clientExecutor(request.tx), "enqueue"));
}

/**
 * `enqueue` of jobs whose field checks have been run already (by the enqueue coalescer, to
 * decide whether calls may share a statement): the statement does not run them again.
 */
export function enqueueChecked(ctx: StoreContext, request: EnqueueRequest, checked: readonly CheckedJob[]): Promise<EnqueueResult[]> {
  return enqueueJobs(ctx, request, undefined, checked);
}

/**
 * See `JobStore.enqueueThrough`: the same statements as `enqueue`, run by `executor` inside the
 * caller's transaction, under a savepoint.
 */
export async function enqueueThrough(
  ctx: StoreContext,
  executor: QueryExecutor,
  request: EnqueueThroughRequest,
): Promise<EnqueuedThrough<readonly EnqueueResult[]>> {
  return { result: await enqueueJobs(ctx, request, ctx.caller(executor, "enqueue")), afterCommit: noHintsLeft };
}

/**
 * What is left to do after the caller's commit on PostgreSQL: nothing. The wake-up hints rode the
 * caller's transaction as `NOTIFY`, which PostgreSQL delivers at its commit and drops at its
 * rollback.
 */
export const noHintsLeft = (): void => undefined;

/**
 * One enqueue call: with `caller`, inside the caller's transaction (its hints ride that
 * transaction as NOTIFY); `prechecked`, the jobs' field checks when they have been run already.
 */
async function enqueueJobs(
  ctx: StoreContext,
  request: EnqueueThroughRequest,
  caller?: CheckedExecutor,
  prechecked?: readonly CheckedJob[],
): Promise<EnqueueResult[]> {
  const { jobs, now } = request;
  if (jobs.length === 0) return [];
  if (jobs.length > ctx.bounds.enqueueBatch) {
    const rejection = boundRejection("BELAY_BATCH_TOO_LARGE", "jobs", ctx.bounds.enqueueBatch, jobs.length);
    return jobs.map((job) => ({ id: String(job?.id), status: "rejected", rejection }));
  }
  const checked = prechecked ?? jobs.map((job) => validateNewJob(job, ctx.bounds));
  const parentIds = [...new Set(checked.flatMap((c) => (c.ok ? c.job.parentIds : [])))];
  const fieldRejected = checked.some((c) => !c.ok);
  const due = new DueQueues(now);

  const body = async (session: Session): Promise<EnqueueResult[]> => {
    let parents = new Map<string, number>();
    let existing = new Map<string, number>();
    if (parentIds.length > 0) {
      const ids = checked.flatMap((c) => (c.ok ? [c.job.id] : []));
      ({ parents, existing } = await parentsAndExisting(session, ctx.sql, parentIds, ids, !fieldRejected));
    }
    const plans = planEnqueue(jobs, ctx.bounds, (id) => parents.has(id) || existing.has(id), checked);
    if (plans.some((p) => p.kind === "rejected")) return refusedEnqueue(plans);
    if (parentIds.length > 0) await session.step("parents locked");

    const created = new Map<string, number>();
    const inserts: PlannedInsert[] = [];
    for (const p of plans) {
      if (p.kind !== "create") continue;
      const initial = initialState(p.job, (id) => created.get(id) ?? parents.get(id)!);
      created.set(p.job.id, initial.state);
      inserts.push({ job: p.job, ...initial, scheduleId: null, workflowId: null });
    }
    const outcomes = await insertJobs(session, ctx.sql, inserts, now, ctx.history, "enqueued");
    await session.step("jobs inserted");

    const byId = new Map(inserts.map((insert, i) => [insert.job.id, { insert, outcome: outcomes[i]! }]));
    const unknown = [...byId.values()].filter((e) => e.outcome.seq === null && e.outcome.existingState === null).map((e) => e.insert.job.id);
    const raced = new Map<string, number>();
    if (unknown.length > 0) {
      for (const row of await session.query(ctx.sql.get("stateById", STATE_BY_ID), [unknown])) raced.set(row["id"] as string, toInt(row["state"]));
    }
    const results: EnqueueResult[] = plans.map((p) => {
      if (p.kind === "rejected") throw new Error("unreachable: rejected plans return early");
      if (p.kind === "duplicate") {
        const state = existing.get(p.id) ?? created.get(p.id) ?? raced.get(p.id) ?? STATE.scheduled;
        return { id: p.id, status: "duplicate", state: stateOf(state) };
      }
      const { insert, outcome } = byId.get(p.job.id)!;
      if (outcome.seq === null) {
        const state = outcome.existingState ?? raced.get(p.job.id) ?? STATE.scheduled;
        return { id: p.job.id, status: "duplicate", state: stateOf(state) };
      }
      due.add(insert.job.queue, insert.state, insert.job.dueAt);
      return { id: p.job.id, status: "created", state: stateOf(insert.state) as InitialJobState, seq: outcome.seq };
    });
    if (session.callerTransaction && ctx.channel !== null) await notifyQueues(session, ctx.sql, ctx.channel, [...due.queues]);
    return results;
  };

  if (caller !== undefined) {
    return ctx.executor.runInCallerTransaction(caller, "enqueue", (r) => !r.some((x) => x.status === "rejected"), body);
  }
  const results = await ctx.executor.run("enqueue", parentIds.length > 0 ? "transaction" : "autocommit", body);
  ctx.hint(due.queues);
  return results;
}
