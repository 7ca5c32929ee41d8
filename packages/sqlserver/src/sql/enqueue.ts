import {
  type EnqueueRequest, type EnqueueResult, type EnqueueThroughRequest, type EnqueuedThrough, type InitialJobState, type Instant,
  type PlannedInsert, type QueryExecutor, type TransitionCause, DEPENDENCY_MODE_CODES, JOB_STATE_CODES, TRANSITION_CAUSE_CODES,
  boundRejection, foldAscii, planEnqueue, plannedInserts, refusedEnqueue, validateNewJob, enqueueAuditRecords,
} from "@belay/contract";
import { appendAudit } from "./audit.js";
import type { StoreContext } from "../context.js";
import { fromHex, hex, hexOrNull, textOfKey, toInt } from "../keys.js";
import { type CheckedExecutor, type Session, transactionExecutor } from "../session.js";
import { COLUMN_BYTES } from "../sqlserver-store-config.js";
import { statement } from "../statements.js";
import { ID_HEX, encodeIds, encodeRetry, encodeTags, idOf, stateOf } from "./jobs.js";

const STATE = JOB_STATE_CODES;

/** Why an insert's jobs were created: by an enqueue (or workflow), a schedule's tick, or a trigger. */
export type CreationCause = Extract<TransitionCause, "enqueued" | "minted" | "triggered">;

const TAG_KEY_HEX = `varchar(${COLUMN_BYTES.tagKey * 2})`;
const TAG_VALUE_HEX = `varchar(${COLUMN_BYTES.tagValue * 2})`;

/**
 * One batch inserts the planned jobs (in input order: `seq` follows it, an identity assigned in
 * the ORDER BY's order), their tags, their parent edges, the `has_children` mark of parents that
 * did not have it, and their first transitions, and answers the seq of each inserted id. Every id
 * was found absent under the operation's locks; a concurrent creator of the same id makes the
 * insert fail on the unique index, and the operation runs again (and finds it).
 */
export const INSERT_JOBS = statement(
  "insertJobs",
  { jobs: "nvarchar(max)", tags: "nvarchar(max)", edges: "nvarchar(max)", now: "bigint", history: "bit", cause: "tinyint" },
  (S) => `DECLARE @ins TABLE (seq bigint NOT NULL PRIMARY KEY, id varbinary(${COLUMN_BYTES.id}) NOT NULL, state tinyint NOT NULL);
INSERT INTO ${S}.jobs (id, job_name, queue, state, due_at, attempt, releases, enqueued_at, terminal_at, terminal_cause, dependency_mode,
  parents_remaining, has_children, transition_count, parent_ids, tags, trace_context, schedule_id, workflow_id, retry, payload)
OUTPUT inserted.seq, inserted.id, inserted.state INTO @ins
SELECT ${idOf("j.id")}, ${fromHex("j.job_name", COLUMN_BYTES.jobName)}, ${fromHex("j.queue", COLUMN_BYTES.queue)}, j.state, j.due_at, 0, 0, @now,
  CASE WHEN j.state >= ${STATE.succeeded} THEN @now END, j.terminal_cause, j.dependency_mode, j.parents_remaining, j.has_children, 1,
  j.parent_ids, j.tags, j.trace_context, ${idOf("j.schedule_id")}, ${idOf("j.workflow_id")}, j.retry, j.payload
FROM OPENJSON(@jobs) WITH (
  n int '$[0]', id ${ID_HEX} '$[1]', job_name ${ID_HEX} '$[2]', queue ${ID_HEX} '$[3]', payload nvarchar(max) '$[4]', due_at bigint '$[5]',
  state tinyint '$[6]', parents_remaining int '$[7]', terminal_cause nvarchar(max) '$[8]', parent_ids nvarchar(max) '$[9]',
  dependency_mode tinyint '$[10]', tags nvarchar(max) '$[11]', trace_context nvarchar(max) '$[12]', schedule_id ${ID_HEX} '$[13]',
  workflow_id ${ID_HEX} '$[14]', has_children bit '$[15]', retry nvarchar(max) '$[16]'
) AS j
ORDER BY j.n;
INSERT INTO ${S}.job_tags (job_seq, tag_key, tag_value, key_folded, value_folded)
SELECT i.seq, ${fromHex("t.k", COLUMN_BYTES.tagKey)}, ${fromHex("t.v", COLUMN_BYTES.tagValue)}, ${fromHex("t.kf", COLUMN_BYTES.tagKey)}, ${fromHex("t.vf", COLUMN_BYTES.tagValue)}
FROM OPENJSON(@tags) WITH (job ${ID_HEX} '$[0]', k ${TAG_KEY_HEX} '$[1]', v ${TAG_VALUE_HEX} '$[2]', kf ${TAG_KEY_HEX} '$[3]', vf ${TAG_VALUE_HEX} '$[4]') AS t
INNER JOIN @ins AS i ON i.id = ${idOf("t.job")};
INSERT INTO ${S}.job_edges (parent_seq, child_seq)
SELECT DISTINCT COALESCE(pi.seq, pj.seq), c.seq
FROM OPENJSON(@edges) WITH (child ${ID_HEX} '$[0]', parent ${ID_HEX} '$[1]') AS e
INNER JOIN @ins AS c ON c.id = ${idOf("e.child")}
LEFT JOIN @ins AS pi ON pi.id = ${idOf("e.parent")}
LEFT JOIN ${S}.jobs AS pj ON pj.id = ${idOf("e.parent")}
WHERE COALESCE(pi.seq, pj.seq) IS NOT NULL;
UPDATE p SET has_children = 1 FROM ${S}.jobs AS p
WHERE p.has_children = 0 AND p.id IN (SELECT ${idOf("e.parent")} FROM OPENJSON(@edges) WITH (parent ${ID_HEX} '$[1]') AS e);
IF @history = 1
  INSERT INTO ${S}.transitions (job_seq, ordinal, at, state, attempt, cause)
  SELECT i.seq, 1, @now, i.state, 0, CASE WHEN i.state = ${STATE.cancelled} THEN ${TRANSITION_CAUSE_CODES.parentFailed} ELSE @cause END
  FROM @ins AS i ORDER BY i.seq;
SELECT i.seq, i.id FROM @ins AS i ORDER BY i.seq`,
);

/** Inserts planned jobs in one batch; the seq of each, in input order (`null`: not inserted). */
export async function insertJobs(session: Session, ctx: StoreContext, planned: readonly PlannedInsert[], now: Instant, cause: CreationCause): Promise<(number | null)[]> {
  if (planned.length === 0) return [];
  const edges: [string, string][] = [];
  const tags: string[][] = [];
  for (const { job } of planned) {
    for (const parentId of job.parentIds) edges.push([hex(job.id), hex(parentId)]);
    for (const tag of job.tags) tags.push([hex(job.id), hex(tag.key), hex(tag.value), hex(foldAscii(tag.key)), hex(foldAscii(tag.value))]);
  }
  // Parents inserted in the same call are born knowing they have children.
  const parentsHere = new Set(planned.flatMap((p) => p.job.parentIds));
  const jobs = planned.map((p, n) => [
    n,
    hex(p.job.id),
    hex(p.job.jobName),
    hex(p.job.queue),
    p.job.payload,
    p.job.dueAt,
    p.state,
    p.parentsRemaining,
    p.terminalCause,
    encodeIds(p.job.parentIds),
    DEPENDENCY_MODE_CODES[p.job.dependencyMode],
    encodeTags(p.job.tags),
    p.job.traceContext,
    hexOrNull(p.scheduleId),
    hexOrNull(p.workflowId),
    parentsHere.has(p.job.id),
    encodeRetry(p.job.retry),
  ]);
  const rows = await session.rows(INSERT_JOBS, {
    jobs: JSON.stringify(jobs),
    tags: JSON.stringify(tags),
    edges: JSON.stringify(edges),
    now,
    history: ctx.history,
    cause: TRANSITION_CAUSE_CODES[cause],
  });
  const seqs = new Map(rows.map((row) => [textOfKey(row["id"]), toInt(row["seq"])]));
  return planned.map((p) => seqs.get(p.job.id) ?? null);
}

/**
 * The current states of `ids` that exist, each locked (update lock held to commit): a parent that
 * an outcome, expiry or cancel is about to finish waits for this transaction — which writes the
 * new child's edge and the parent's `has_children` — and then sees the edge. Nothing is written
 * here: a call refused or found duplicate after this read leaves no trace.
 */
const LOCK_STATES = statement(
  "lockJobStates",
  { ids: "nvarchar(max)" },
  (S) => `SELECT j.id, j.state FROM ${S}.jobs AS j WITH (UPDLOCK, ROWLOCK) WHERE j.id IN (SELECT ${idOf("x.value")} FROM OPENJSON(@ids) AS x)`,
);

export async function lockStates(session: Session, ids: readonly string[]): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  if (ids.length === 0) return out;
  for (const row of await session.rows(LOCK_STATES, { ids: JSON.stringify([...new Set(ids)].map(hex)) })) out.set(textOfKey(row["id"]), toInt(row["state"]));
  return out;
}

/** See `JobStore.enqueue`; with `tx`, inside the caller's `mssql` transaction, as {@link enqueueThrough}. */
export async function enqueue(ctx: StoreContext, request: EnqueueRequest): Promise<EnqueueResult[]> {
  if (request.tx === undefined) return enqueueJobs(ctx, request);
  return enqueueJobs(ctx, request, ctx.caller(transactionExecutor(request.tx), "enqueue"));
}

/** SQL Server gives no wake-up hints: nothing is left to do after the caller's commit. */
export const nothingAfterCommit = (): void => undefined;

/** See `JobStore.enqueueThrough`: the same statements, run by `executor` inside the caller's transaction, under a savepoint. */
export async function enqueueThrough(ctx: StoreContext, executor: QueryExecutor, request: EnqueueThroughRequest): Promise<EnqueuedThrough<readonly EnqueueResult[]>> {
  return { result: await enqueueJobs(ctx, request, ctx.caller(executor, "enqueue")), afterCommit: nothingAfterCommit };
}

async function enqueueJobs(ctx: StoreContext, request: EnqueueThroughRequest, caller?: CheckedExecutor): Promise<EnqueueResult[]> {
  const { jobs, now } = request;
  if (jobs.length === 0) return [];
  if (jobs.length > ctx.bounds.enqueueBatch) {
    const rejection = boundRejection("BELAY_BATCH_TOO_LARGE", "jobs", ctx.bounds.enqueueBatch, jobs.length);
    return jobs.map((job) => ({ id: String(job?.id), status: "rejected", rejection }));
  }
  const checked = jobs.map((job) => validateNewJob(job, ctx.bounds));
  const body = async (session: Session): Promise<EnqueueResult[]> => {
    const named = checked.flatMap((c) => (c.ok ? [c.job.id, ...c.job.parentIds] : []));
    const states = await lockStates(session, named);
    const plans = planEnqueue(jobs, ctx.bounds, (id) => states.has(id), checked);
    if (plans.some((p) => p.kind === "rejected")) return refusedEnqueue(plans);
    await session.step("parents locked");
    const inserts = plannedInserts(plans.flatMap((p) => (p.kind === "create" ? [p.job] : [])), (id) => states.get(id));
    const created = new Map(inserts.map((insert) => [insert.job.id, insert.state]));
    const seqs = await insertJobs(session, ctx, inserts, now, "enqueued");
    await session.step("jobs inserted");
    const seqOf = new Map(inserts.map((insert, i) => [insert.job.id, { insert, seq: seqs[i] ?? null }]));
    const results = plans.map((p): EnqueueResult => {
      if (p.kind === "rejected") throw new Error("unreachable: rejected plans return early");
      if (p.kind === "duplicate") return { id: p.id, status: "duplicate", state: stateOf(states.get(p.id) ?? created.get(p.id) ?? STATE.scheduled) };
      const { insert, seq } = seqOf.get(p.job.id)!;
      if (seq === null) throw new Error(`job ${p.job.id} was not inserted`);
      return { id: p.job.id, status: "created", state: stateOf(insert.state) as InitialJobState, seq };
    });
    for (const record of enqueueAuditRecords(request, results)) await appendAudit(session, record);
    return results;
  };
  if (caller !== undefined) return ctx.executor.inCallerTransaction(caller, "enqueue", (r) => !r.some((x) => x.status === "rejected"), body);
  return ctx.executor.transaction("enqueue", body, { rerunOnUnique: true });
}
