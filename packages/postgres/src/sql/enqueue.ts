import {
  type EnqueueRequest, type EnqueueResult, type EnqueueThroughRequest, type EnqueuedThrough, type InitialJobState, type Instant,
  type PlannedInsert, type QueryExecutor, type TransitionCause, DEPENDENCY_MODE_CODES, JOB_STATE_CODES, TRANSITION_CAUSE_CODES,
  boundRejection, planEnqueue, plannedInserts, refusedEnqueue, validateNewJob, enqueueAuditRecords,
} from "@belay/contract";
import { DueQueues, type StoreContext } from "../context.js";
import type { CheckedJob } from "../enqueue-coalescer.js";
import { type CheckedExecutor, type Session, type SqlCache, clientExecutor } from "../session.js";
import { appendAudit } from "./audit.js";
import { feedCtes, historyEntrySql, stateOf, toInt } from "./jobs.js";

const STATE = JOB_STATE_CODES;
const CAUSE = TRANSITION_CAUSE_CODES;

/** What became of one planned insert: its seq, or the state of the job that already held its id. */
export interface InsertOutcome {
  readonly seq: number | null;
  readonly existingState: number | null;
}

/**
 * One statement inserts a whole batch from one JSON document (`$1`, an array with one object per
 * job, in input order so that seq follows it; see {@link insertDocuments}): the jobs, the queue
 * rows of new queues, their tags, their parent edges and their first transitions. A job whose id
 * exists is left alone (ON CONFLICT DO NOTHING) and reported with the existing job's state, read
 * from the statement's snapshot. Everything else is written for the inserted jobs only, so a
 * duplicate writes nothing at all: not a queue row for the queue it names, nor a parent's
 * `has_children` (existing parents of inserted jobs are marked here, once locked by the caller;
 * parents inserted by the same call are born marked, field `k`).
 *
 * Tags, parent ids and retry policies arrive as JSON values and are stored as their text, which
 * the `json` type reproduces exactly as the document spells it (the row encodings of
 * `encodeTags`, `encodeIds`, `encodeRetry`). A field left out is NULL (or the column's default).
 * `$2` is the call's instant, `$3` whether history is kept. The job's own retry policy is written
 * here once and never updated; the transitions record `$4` as their cause (enqueued, minted or
 * triggered), `parentFailed` for a job born cancelled.
 *
 * The parent edges come as a document of their own (`$5`, `[{c: child, p: parent}]`, usually
 * empty) rather than unpacked from each job's parent ids: the planner guesses 100 elements for
 * any JSON array it unpacks, so 100 jobs × 100 parents would price the statement past
 * `jit_above_cost`, and JIT compiling it costs more than a small batch's whole insert. Existing
 * jobs (a parent, the holder of a duplicate id) are looked up by a subquery per row, which reads
 * the id index whatever the estimates.
 */
export const INSERT_JOBS = (S: string) => `
WITH input AS (
  SELECT * FROM ROWS FROM (json_to_recordset($1::json) AS (
    i text, n text, q text, p text, d bigint, s int2, r int4, c text, a json, m int2, t json, x text, h text, w text, k bool, y json
  )) WITH ORDINALITY AS i(id, job_name, queue, payload, due_at, state, parents_remaining, terminal_cause,
                          parent_ids, dependency_mode, tags, trace_context, schedule_id, workflow_id, has_children, retry, ord)
),
ins AS (
  INSERT INTO ${S}.jobs (id, job_name, queue, state, due_at, enqueued_at, terminal_at, terminal_cause, parents_remaining,
                         parent_ids, dependency_mode, tags, trace_context, schedule_id, workflow_id, has_children,
                         transition_count, retry, payload, history)
  SELECT id, job_name, queue, coalesce(state, ${STATE.scheduled}), due_at, $2, CASE WHEN state >= ${STATE.succeeded} THEN $2::bigint END,
         terminal_cause, coalesce(parents_remaining, 0), parent_ids::text, coalesce(dependency_mode, 0), tags::text, trace_context,
         schedule_id, workflow_id, coalesce(has_children, false), 1, retry::text, payload,
         CASE WHEN $3 THEN '[' || ${historyEntrySql(S, {
           cause: `CASE WHEN state = ${STATE.cancelled} THEN ${CAUSE.parentFailed} ELSE $4::int2 END`,
         })} || ']' END
  FROM input ORDER BY ord
  ON CONFLICT (id) DO NOTHING
  RETURNING seq, id, queue, state, tags, attempt, transition_count, history
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
  SELECT e.p AS parent_id, c.seq AS child_seq FROM json_to_recordset($5::json) AS e(c text, p text) JOIN ins c ON c.id = e.c
),
new_edges AS (
  INSERT INTO ${S}.job_edges (parent_seq, child_seq)
  SELECT parent_seq, child_seq FROM (
    SELECT coalesce(pi.seq, (SELECT pj.seq FROM ${S}.jobs pj WHERE pj.id = e.parent_id)) AS parent_seq, e.child_seq
    FROM edges e LEFT JOIN ins pi ON pi.id = e.parent_id
  ) found
  WHERE parent_seq IS NOT NULL
  ON CONFLICT DO NOTHING
),
marked_parents AS (
  UPDATE ${S}.jobs p SET has_children = true
  WHERE p.id = ANY(ARRAY(SELECT DISTINCT e.parent_id FROM edges e)) AND NOT p.has_children
),
${feedCtes(S, "ins", "$2", "$3", "NULL")}
SELECT ins.seq, CASE WHEN ins.seq IS NULL THEN (SELECT e.state FROM ${S}.jobs e WHERE e.id = i.id) END AS existing_state
FROM input i
LEFT JOIN ins ON ins.id = i.id
ORDER BY i.ord`;

/** Why an insert's jobs were created: by an enqueue (or workflow), a schedule's tick, or a trigger. */
export type CreationCause = Extract<TransitionCause, "enqueued" | "minted" | "triggered">;

/** One job of {@link INSERT_JOBS}'s document: short keys, and a field left out when it is NULL or the column's default. */
interface DocumentJob {
  i: string;
  n: string;
  q: string;
  p: string;
  d: number;
  s: number;
  r?: number;
  c?: string;
  a?: readonly string[];
  m?: number;
  t?: readonly (readonly [string, string])[];
  x?: string;
  h?: string;
  w?: string;
  k?: true;
  y?: readonly number[];
}

/**
 * The JSON documents of {@link INSERT_JOBS}: one `JSON.stringify` of the whole batch, so that a
 * thousand jobs cost one parameter, not sixteen arrays of a thousand elements each; and the
 * parent edges. Nested values are the row encodings (`encodeIds`, `encodeTags`, `encodeRetry`
 * are `JSON.stringify` of the same shapes), stored as the document spells them.
 */
export function insertDocuments(planned: readonly PlannedInsert[]): { readonly jobs: string; readonly edges: string } {
  // Parents inserted in the same call are born knowing they have children.
  let parentsHere: Set<string> | null = null;
  const edges: { c: string; p: string }[] = [];
  for (const { job } of planned) {
    for (const parentId of job.parentIds) {
      (parentsHere ??= new Set()).add(parentId);
      edges.push({ c: job.id, p: parentId });
    }
  }
  const doc: DocumentJob[] = new Array(planned.length);
  for (let n = 0; n < planned.length; n++) {
    const { job, state, parentsRemaining, terminalCause, scheduleId, workflowId } = planned[n]!;
    // Only the fields present are set (not set to `undefined`): JSON.stringify is faster on them.
    const row: DocumentJob = { i: job.id, n: job.jobName, q: job.queue, p: job.payload, d: job.dueAt, s: state };
    if (parentsRemaining !== 0) row.r = parentsRemaining;
    if (terminalCause !== null) row.c = terminalCause;
    if (job.parentIds.length > 0) row.a = job.parentIds;
    if (job.dependencyMode !== "onSuccess") row.m = DEPENDENCY_MODE_CODES[job.dependencyMode];
    if (job.tags.length > 0) row.t = job.tags.map((tag) => [tag.key, tag.value] as const);
    if (job.traceContext !== null) row.x = job.traceContext;
    if (scheduleId !== null) row.h = scheduleId;
    if (workflowId !== null) row.w = workflowId;
    if (parentsHere?.has(job.id) === true) row.k = true;
    if (job.retry !== null) row.y = [job.retry.maxAttempts, ...job.retry.delaysMs];
    doc[n] = row;
  }
  return { jobs: JSON.stringify(doc), edges: JSON.stringify(edges) };
}

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
  const { jobs, edges } = insertDocuments(planned);
  const rows = await session.query(sql.get("insertJobs", INSERT_JOBS), [jobs, now, history, TRANSITION_CAUSE_CODES[cause], edges]);
  const outcomes: InsertOutcome[] = new Array(rows.length);
  for (let n = 0; n < rows.length; n++) {
    const row = rows[n]!;
    const seq = row["seq"];
    const existing = row["existing_state"];
    outcomes[n] = { seq: seq == null ? null : toInt(seq), existingState: existing == null ? null : toInt(existing) };
  }
  return outcomes;
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
  let fieldRejected = false;
  const named = new Set<string>();
  for (const c of checked) {
    if (!c.ok) fieldRejected = true;
    else for (const parentId of c.job.parentIds) named.add(parentId);
  }
  const parentIds = [...named];
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

    const inserts = plannedInserts(plans.flatMap((p) => (p.kind === "create" ? [p.job] : [])), (id) => parents.get(id));
    const created = new Map(inserts.map((insert) => [insert.job.id, insert.state]));
    const outcomes = await insertJobs(session, ctx.sql, inserts, now, ctx.history, "enqueued");
    await session.step("jobs inserted");

    // Creates are inserted in plan order, so the n-th create's outcome is `outcomes[n]`.
    const unknown: string[] = [];
    for (let n = 0; n < inserts.length; n++) {
      const outcome = outcomes[n]!;
      if (outcome.seq === null && outcome.existingState === null) unknown.push(inserts[n]!.job.id);
    }
    const raced = new Map<string, number>();
    if (unknown.length > 0) {
      for (const row of await session.query(ctx.sql.get("stateById", STATE_BY_ID), [unknown])) raced.set(row["id"] as string, toInt(row["state"]));
    }
    let n = 0;
    const results: EnqueueResult[] = plans.map((p) => {
      if (p.kind === "rejected") throw new Error("unreachable: rejected plans return early");
      if (p.kind === "duplicate") {
        const state = existing.get(p.id) ?? created.get(p.id) ?? raced.get(p.id) ?? STATE.scheduled;
        return { id: p.id, status: "duplicate", state: stateOf(state) };
      }
      const insert = inserts[n]!;
      const outcome = outcomes[n++]!;
      if (outcome.seq === null) {
        const state = outcome.existingState ?? raced.get(p.job.id) ?? STATE.scheduled;
        return { id: p.job.id, status: "duplicate", state: stateOf(state) };
      }
      due.add(insert.job.queue, insert.state, insert.job.dueAt);
      return { id: p.job.id, status: "created", state: stateOf(insert.state) as InitialJobState, seq: outcome.seq };
    });
    for (const record of enqueueAuditRecords(request, results)) await appendAudit(session, ctx, record);
    if (session.callerTransaction && ctx.channel !== null) await notifyQueues(session, ctx.sql, ctx.channel, [...due.queues]);
    return results;
  };

  if (caller !== undefined) {
    return ctx.executor.runInCallerTransaction(caller, "enqueue", (r) => !r.some((x) => x.status === "rejected"), body);
  }
  // One statement commits on its own; parents read first, or an audit record after, need a transaction.
  const single = parentIds.length === 0 && request.actor === undefined;
  const results = await ctx.executor.run("enqueue", single ? "autocommit" : "transaction", body);
  ctx.hint(due.queues);
  return results;
}
