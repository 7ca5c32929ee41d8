import {
  type EnqueueResult, type EnqueueWorkflowRequest, type EnqueueWorkflowResult, type EnqueueWorkflowThroughRequest,
  type EnqueuedThrough, type JobState, type ListWorkflowsRequest, type QueryExecutor, type QueryRow, type WorkflowPage,
  type WorkflowRecord, TransientStoreError, checkWorkflow, clampToBound, decodeSeqCursor, encodeSeqCursor, planWorkflowMembers,
  plannedInserts, workflowStatus,
} from "@belay/contract";
import { DueQueues, type StoreContext } from "../context.js";
import { type CheckedExecutor, type Session, clientExecutor } from "../session.js";
import { insertJobs, noHintsLeft, notifyQueues } from "./enqueue.js";
import { stateOf } from "./jobs.js";

const TAKEN = (S: string) => `
SELECT 'workflow' AS kind, id FROM ${S}.workflows WHERE id = $1
UNION ALL
SELECT 'job', id FROM ${S}.jobs WHERE id = ANY($2::text[])`;

const INSERT_WORKFLOW = (S: string) =>
  `INSERT INTO ${S}.workflows (id, name, created_at) VALUES ($1, $2, $3) ON CONFLICT (id) DO NOTHING RETURNING seq`;

/** See `JobStore.enqueueWorkflow`; with `tx`, inside the caller's `pg` transaction (as `enqueue`). */
export async function enqueueWorkflow(ctx: StoreContext, request: EnqueueWorkflowRequest): Promise<EnqueueWorkflowResult> {
  if (request.tx === undefined) return insertWorkflow(ctx, request);
  return insertWorkflow(ctx, request, ctx.caller(clientExecutor(request.tx), "enqueueWorkflow"));
}

/** See `JobStore.enqueueWorkflowThrough`: the workflow inside the caller's transaction, as `enqueueThrough`. */
export async function enqueueWorkflowThrough(
  ctx: StoreContext,
  executor: QueryExecutor,
  request: EnqueueWorkflowThroughRequest,
): Promise<EnqueuedThrough<EnqueueWorkflowResult>> {
  return { result: await insertWorkflow(ctx, request, ctx.caller(executor, "enqueueWorkflow")), afterCommit: noHintsLeft };
}

/** The workflow row and all its members, atomically; with `caller`, inside the caller's transaction. */
async function insertWorkflow(
  ctx: StoreContext,
  request: EnqueueWorkflowThroughRequest,
  caller?: CheckedExecutor,
): Promise<EnqueueWorkflowResult> {
  const { workflow, now } = request;
  const early = checkWorkflow(workflow, ctx.bounds);
  if (early !== null) return early;
  const due = new DueQueues(now);

  const body = async (session: Session): Promise<EnqueueWorkflowResult> => {
    const ids = workflow.jobs.map((j) => j?.id).filter((id): id is string => typeof id === "string");
    const rows = await session.query(ctx.sql.get("workflowTaken", TAKEN), [workflow.id, ids]);
    if (rows.some((r) => r["kind"] === "workflow")) return { status: "duplicate", workflowId: workflow.id };
    const taken = new Set(rows.map((r) => r["id"] as string));
    const plan = planWorkflowMembers(workflow, ctx.bounds, (id) => taken.has(id));
    if (!plan.ok) return plan.result;
    const [inserted] = await session.query(ctx.sql.get("insertWorkflow", INSERT_WORKFLOW), [workflow.id, workflow.name, now]);
    if (inserted === undefined) return { status: "duplicate", workflowId: workflow.id };
    await session.step("workflow row inserted");
    // A member's parents are members: no existing job is anyone's parent.
    const planned = plannedInserts(plan.members, () => undefined, workflow.id);
    const outcomes = await insertJobs(session, ctx.sql, planned, now, ctx.history, "enqueued");
    const raced = planned.find((_, i) => outcomes[i]!.seq === null);
    // Another writer took a member's id after the check (the insert waited for it to commit):
    // undo everything and plan again, which now finds the id taken.
    if (raced !== undefined) throw new MemberRaced(raced.job.id);
    await session.step("members inserted");
    const created = new Map<string, Extract<EnqueueResult, { status: "created" }>>();
    planned.forEach((p, i) => {
      due.add(p.job.queue, p.state, p.job.dueAt);
      created.set(p.job.id, { id: p.job.id, status: "created", state: stateOf(p.state) as "scheduled", seq: outcomes[i]!.seq! });
    });
    if (session.callerTransaction && ctx.channel !== null) await notifyQueues(session, ctx.sql, ctx.channel, [...due.queues]);
    return { status: "created", jobs: workflow.jobs.map((j) => created.get(j.id)!) };
  };

  const attempt = (): Promise<EnqueueWorkflowResult> =>
    caller !== undefined
      ? ctx.executor.runInCallerTransaction(caller, "enqueueWorkflow", (r) => r.status === "created", body)
      : ctx.executor.run("enqueueWorkflow", "transaction", body);
  for (let tries = 1; ; tries++) {
    try {
      const result = await attempt();
      if (caller === undefined && result.status === "created") ctx.hint(due.queues);
      return result;
    } catch (error) {
      if (!(error instanceof MemberRaced)) throw error;
      // Under READ COMMITTED each new plan sees the writer that won; a caller's transaction at a
      // stricter level may never see it, and is told to retry instead.
      if (tries >= MEMBER_RACE_ATTEMPTS) {
        throw new TransientStoreError(`enqueueWorkflow: job ${error.jobId} was created concurrently; nothing was written`, { cause: error });
      }
    }
  }
}

/** How often a workflow whose member ids were taken meanwhile is planned again before giving up. */
const MEMBER_RACE_ATTEMPTS = 3;

/** A member's insert met a job created after the plan checked its id: the body is rolled back and planned again. */
class MemberRaced extends Error {
  constructor(readonly jobId: string) {
    super(`job ${jobId} was created concurrently`);
  }
}

const WORKFLOW_COLUMNS = (S: string) => `w.seq, w.id, w.name, w.created_at,
  (SELECT coalesce(json_object_agg(m.state, m.n), '{}')::text FROM (
     SELECT j.state, count(*) AS n FROM ${S}.jobs j WHERE j.workflow_id = w.id GROUP BY j.state) m) AS counts`;

function toWorkflowRecord(row: QueryRow): WorkflowRecord {
  const raw = JSON.parse(row["counts"] as string) as Record<string, number>;
  const counts: Partial<Record<JobState, number>> = {};
  let jobCount = 0;
  for (const [code, n] of Object.entries(raw)) {
    counts[stateOf(Number(code))] = n;
    jobCount += n;
  }
  return {
    id: row["id"] as string,
    name: row["name"] as string,
    createdAt: row["created_at"] as number,
    status: workflowStatus(counts),
    jobCount,
    counts,
  };
}

const GET_WORKFLOW = (S: string) => `SELECT ${WORKFLOW_COLUMNS(S)} FROM ${S}.workflows w WHERE w.id = $1`;
const LIST_WORKFLOWS = (S: string) => `SELECT ${WORKFLOW_COLUMNS(S)} FROM ${S}.workflows w WHERE w.seq > $1 ORDER BY w.seq LIMIT $2`;

/** See `JobStore.getWorkflow`. */
export async function getWorkflow(ctx: StoreContext, workflowId: string): Promise<WorkflowRecord | null> {
  const [row] = await ctx.executor.run("getWorkflow", "autocommit", (s) => s.query(ctx.sql.get("getWorkflow", GET_WORKFLOW), [workflowId]));
  return row === undefined ? null : toWorkflowRecord(row);
}

/** See `JobStore.listWorkflows`. */
export async function listWorkflows(ctx: StoreContext, request: ListWorkflowsRequest): Promise<WorkflowPage> {
  const limit = clampToBound(request.limit ?? ctx.bounds.monitorPage, ctx.bounds.monitorPage);
  const after = request.after === undefined ? 0 : decodeSeqCursor(request.after);
  const rows = await ctx.executor.run("listWorkflows", "autocommit", (s) =>
    s.query(ctx.sql.get("listWorkflows", LIST_WORKFLOWS), [after, limit + 1]),
  );
  const workflows = rows.slice(0, limit).map(toWorkflowRecord);
  const lastSeq = rows[Math.min(rows.length, limit) - 1]?.["seq"] as number | undefined;
  return { workflows, nextCursor: rows.length > limit && lastSeq !== undefined ? encodeSeqCursor(lastSeq) : null };
}
