import {
  type EnqueueResult, type EnqueueWorkflowRequest, type EnqueueWorkflowResult, type EnqueueWorkflowThroughRequest,
  type EnqueuedThrough, type JobState, type ListWorkflowsRequest, type QueryExecutor, type QueryRow, type WorkflowPage,
  type WorkflowRecord, checkWorkflow, clampToBound, decodeSeqCursor, encodeSeqCursor, planWorkflowMembers, plannedInserts, workflowStatus,
} from "@belay/contract";
import type { StoreContext } from "../context.js";
import { key, textOfKey, toInt } from "../keys.js";
import { type CheckedExecutor, type Session, transactionExecutor } from "../session.js";
import { COLUMN_BYTES, COLUMN_CHARS } from "../sqlserver-store-config.js";
import { statement } from "../statements.js";
import { insertJobs, lockStates, nothingAfterCommit } from "./enqueue.js";
import { stateOf } from "./jobs.js";

const ID = `varbinary(${COLUMN_BYTES.id})`;

/** Inserts the workflow row unless its id exists (checked under a key-range lock); answers whether it did. */
const INSERT_WORKFLOW = statement(
  "insertWorkflow",
  { id: ID, name: `nvarchar(${COLUMN_CHARS.workflowName})`, now: "bigint" },
  (S) => `IF EXISTS (SELECT 1 FROM ${S}.workflows AS w WITH (UPDLOCK, HOLDLOCK) WHERE w.id = @id)
  SELECT 0 AS inserted
ELSE
BEGIN
  INSERT INTO ${S}.workflows (id, name, created_at) VALUES (@id, @name, @now);
  SELECT 1 AS inserted;
END`,
);

export async function enqueueWorkflow(ctx: StoreContext, request: EnqueueWorkflowRequest): Promise<EnqueueWorkflowResult> {
  if (request.tx === undefined) return insertWorkflow(ctx, request);
  return insertWorkflow(ctx, request, ctx.caller(transactionExecutor(request.tx), "enqueueWorkflow"));
}

export async function enqueueWorkflowThrough(ctx: StoreContext, executor: QueryExecutor, request: EnqueueWorkflowThroughRequest): Promise<EnqueuedThrough<EnqueueWorkflowResult>> {
  return { result: await insertWorkflow(ctx, request, ctx.caller(executor, "enqueueWorkflow")), afterCommit: nothingAfterCommit };
}

/** The workflow row and all its members, atomically; with `caller`, inside the caller's transaction. */
async function insertWorkflow(ctx: StoreContext, request: EnqueueWorkflowThroughRequest, caller?: CheckedExecutor): Promise<EnqueueWorkflowResult> {
  const { workflow, now } = request;
  const early = checkWorkflow(workflow, ctx.bounds);
  if (early !== null) return early;
  const body = async (session: Session): Promise<EnqueueWorkflowResult> => {
    const ids = workflow.jobs.map((j) => j?.id).filter((id): id is string => typeof id === "string" && Buffer.byteLength(id, "utf8") <= COLUMN_BYTES.id);
    const [inserted] = await session.rows(INSERT_WORKFLOW, { id: key(workflow.id), name: workflow.name, now });
    if (toInt(inserted!["inserted"]) === 0) return { status: "duplicate", workflowId: workflow.id };
    const taken = await lockStates(session, ids);
    const plan = planWorkflowMembers(workflow, ctx.bounds, (id) => taken.has(id));
    // A refused workflow: the caller's savepoint (or the store's transaction) undoes the workflow row.
    if (!plan.ok) return plan.result;
    await session.step("workflow row inserted");
    // A member's parents are members: no existing job is anyone's parent.
    const planned = plannedInserts(plan.members, () => undefined, workflow.id);
    const seqs = await insertJobs(session, ctx, planned, now, "enqueued");
    await session.step("members inserted");
    const created = new Map<string, Extract<EnqueueResult, { status: "created" }>>();
    planned.forEach((p, i) => created.set(p.job.id, { id: p.job.id, status: "created", state: stateOf(p.state) as "scheduled", seq: seqs[i]! }));
    return { status: "created", jobs: workflow.jobs.map((j) => created.get(j.id)!) };
  };
  if (caller !== undefined) return ctx.executor.inCallerTransaction(caller, "enqueueWorkflow", (r) => r.status === "created", body);
  return ctx.executor.transaction("enqueueWorkflow", async (session) => {
    const result = await body(session);
    // A refusal writes nothing: its workflow row goes with the rolled-back transaction.
    if (result.status === "rejected") throw new RefusedWorkflow(result);
    return result;
  }, { rerunOnUnique: true }).catch((error: unknown) => {
    if (error instanceof RefusedWorkflow) return error.result;
    throw error;
  });
}

/** Carries a refusal out of the transaction, so that it rolls back. */
class RefusedWorkflow extends Error {
  constructor(readonly result: EnqueueWorkflowResult) {
    super("workflow refused");
  }
}

const WORKFLOW_PAGE = statement(
  "listWorkflows",
  { after: "bigint", limit: "int" },
  (S) => `DECLARE @page TABLE (seq bigint NOT NULL PRIMARY KEY, id ${ID} NOT NULL, name nvarchar(${COLUMN_CHARS.workflowName}) NOT NULL, created_at bigint NOT NULL);
INSERT INTO @page (seq, id, name, created_at) SELECT TOP (@limit) w.seq, w.id, w.name, w.created_at FROM ${S}.workflows AS w WHERE w.seq > @after ORDER BY w.seq;
SELECT p.seq, p.id, p.name, p.created_at FROM @page AS p ORDER BY p.seq;
SELECT p.seq, j.state, COUNT_BIG(*) AS n FROM @page AS p INNER JOIN ${S}.jobs AS j ON j.workflow_id = p.id GROUP BY p.seq, j.state`,
);

const GET_WORKFLOW = statement(
  "getWorkflow",
  { id: ID },
  (S) => `SELECT w.seq, w.id, w.name, w.created_at FROM ${S}.workflows AS w WHERE w.id = @id;
SELECT j.state, COUNT_BIG(*) AS n FROM ${S}.jobs AS j WHERE j.workflow_id = @id GROUP BY j.state`,
);

function toWorkflowRecord(row: QueryRow, counted: readonly QueryRow[]): WorkflowRecord {
  const counts: Partial<Record<JobState, number>> = {};
  let jobCount = 0;
  for (const c of counted) {
    const n = toInt(c["n"]);
    counts[stateOf(c["state"])] = n;
    jobCount += n;
  }
  return { id: textOfKey(row["id"]), name: row["name"] as string, createdAt: toInt(row["created_at"]), status: workflowStatus(counts), jobCount, counts };
}

export async function getWorkflow(ctx: StoreContext, workflowId: string): Promise<WorkflowRecord | null> {
  if (Buffer.byteLength(workflowId, "utf8") > COLUMN_BYTES.id) return null;
  const [rows, counts] = await ctx.executor.read("getWorkflow", (s) => s.query(GET_WORKFLOW, { id: key(workflowId) }));
  const row = rows?.[0];
  return row === undefined ? null : toWorkflowRecord(row, counts ?? []);
}

export async function listWorkflows(ctx: StoreContext, request: ListWorkflowsRequest): Promise<WorkflowPage> {
  const limit = clampToBound(request.limit ?? ctx.bounds.monitorPage, ctx.bounds.monitorPage);
  const after = request.after === undefined ? 0 : decodeSeqCursor(request.after);
  const [rows = [], counts = []] = await ctx.executor.read("listWorkflows", (s) => s.query(WORKFLOW_PAGE, { after, limit: limit + 1 }));
  const page = rows.slice(0, limit);
  const workflows = page.map((row) => toWorkflowRecord(row, counts.filter((c) => toInt(c["seq"]) === toInt(row["seq"]))));
  const lastSeq = page.at(-1)?.["seq"];
  return { workflows, nextCursor: rows.length > limit && lastSeq !== undefined ? encodeSeqCursor(toInt(lastSeq)) : null };
}
