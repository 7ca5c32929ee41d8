import {
  type CancelResult, type JobActionRequest, type QueueActionRequest, type QueueActionResult, type QueueChange,
  type QueueSettings, type RequeueResult, JOB_STATE_CODES, TRANSITION_CAUSE_CODES, isTerminalState, queueActions, terminalCauseSql,
} from "@belay/contract";
import { DueQueues, type StoreContext } from "../context.js";
import { appendAudit } from "./audit.js";
import { resolveChildren } from "./children.js";
import { feedCtes, stateOf, transitionAssignments } from "./jobs.js";

const STATE = JOB_STATE_CODES;

const LOCK_JOB = (S: string) => `SELECT seq, id, state, has_children FROM ${S}.jobs WHERE id = $1 FOR UPDATE`;

const REQUEST_CANCEL = (S: string) => `UPDATE ${S}.jobs SET cancel_requested_by = $2 WHERE seq = $1`;

const CANCEL_JOB = (S: string) => `
WITH cancelled AS (
  UPDATE ${S}.jobs j SET state = ${STATE.cancelled}, terminal_at = $2, terminal_cause = ${terminalCauseSql("cancelledBy", { actor: "$3" })},
         lease_owner = NULL, lease_expires_at = NULL, cancel_requested_by = NULL,
         ${transitionAssignments(S, {
           row: "j", cause: `${TRANSITION_CAUSE_CODES.operatorCancelled}`,
           history: "$4", cap: "$5",
         })}
  WHERE j.seq = $1
  RETURNING j.seq, j.state, j.attempt, j.transition_count, j.history
),
${feedCtes(S, "cancelled", "$2", "$4", "$5")}
SELECT count(*) FROM cancelled`;

/** See `JobStore.cancelJob`. */
export async function cancelJob(ctx: StoreContext, request: JobActionRequest): Promise<CancelResult> {
  const { jobId, actor, now } = request;
  const due = new DueQueues(now);
  const result = await ctx.executor.run("cancelJob", "transaction", async (session): Promise<CancelResult> => {
    const [job] = await session.query(ctx.sql.get("lockJob", LOCK_JOB), [jobId]);
    if (job === undefined) return { status: "notFound" };
    const state = stateOf(job["state"]);
    if (isTerminalState(state)) return { status: "notCancellable", state };
    let result: CancelResult;
    if (state === "leased") {
      await session.query(ctx.sql.get("requestCancel", REQUEST_CANCEL), [job["seq"], actor]);
      result = { status: "cancelRequested" };
    } else {
      await session.query(ctx.sql.get("cancelJob", CANCEL_JOB), [job["seq"], now, actor, ctx.history, ctx.bounds.transitionsPerJob]);
      await session.step("job cancelled");
      if (job["has_children"] === true) {
        await resolveChildren(session, ctx, [{ seq: job["seq"] as number, id: jobId, state: STATE.cancelled }], now, due);
      }
      result = { status: "cancelled" };
    }
    await session.step("effect applied");
    await appendAudit(session, ctx, { at: now, actor, action: "cancel", targetKind: "job", target: jobId, detail: result.status });
    return result;
  });
  ctx.hint(due.queues);
  return result;
}

const REQUEUE_JOB = (S: string) => `
WITH requeued AS (
  UPDATE ${S}.jobs j SET state = ${STATE.scheduled}, due_at = $2, attempt = 0, releases = 0, terminal_at = NULL, terminal_cause = NULL,
         ${transitionAssignments(S, {
           row: "j", cause: `${TRANSITION_CAUSE_CODES.requeued}`, history: "$3", cap: "$4",
         })}
  WHERE j.id = $1 AND j.state IN (${STATE.deadLettered}, ${STATE.quarantined})
  RETURNING j.seq, j.queue, j.state, j.attempt, j.transition_count, j.history
),
${feedCtes(S, "requeued", "$2", "$3", "$4")}
SELECT seq, queue FROM requeued`;

const STATE_OF = (S: string) => `SELECT state FROM ${S}.jobs WHERE id = $1`;

// Live again: children still waiting for their parents wait for it again (one latch per gating).
const REGATE_CHILDREN = (S: string) => `
UPDATE ${S}.jobs c SET parents_remaining = c.parents_remaining + 1
FROM ${S}.job_edges e
WHERE e.parent_seq = $1 AND c.seq = e.child_seq AND c.state = ${STATE.awaitingParents}`;

/** See `JobStore.requeueJob`. */
export async function requeueJob(ctx: StoreContext, request: JobActionRequest): Promise<RequeueResult> {
  const { jobId, actor, now } = request;
  const due = new DueQueues(now);
  const result = await ctx.executor.run("requeueJob", "transaction", async (session): Promise<RequeueResult> => {
    const [row] = await session.query(ctx.sql.get("requeueJob", REQUEUE_JOB), [jobId, now, ctx.history, ctx.bounds.transitionsPerJob]);
    if (row === undefined) {
      const [current] = await session.query(ctx.sql.get("stateOf", STATE_OF), [jobId]);
      return current === undefined ? { status: "notFound" } : { status: "notRequeueable", state: stateOf(current["state"]) };
    }
    due.add(row["queue"] as string, STATE.scheduled, now);
    await session.step("job requeued");
    await session.query(ctx.sql.get("regateChildren", REGATE_CHILDREN), [row["seq"]]);
    await appendAudit(session, ctx, { at: now, actor, action: "requeue", targetKind: "job", target: jobId, detail: null });
    return { status: "requeued" };
  });
  ctx.hint(due.queues);
  return result;
}

// The settings row is updated in place (or created), which waits for every claim holding it
// FOR SHARE: a change commits either before a claim reads the queue or after it has finished.
const CHANGE_QUEUE = (S: string) => `
INSERT INTO ${S}.queues AS q (queue, paused, concurrency_limit, configured)
VALUES ($1, coalesce($2::boolean, false), CASE WHEN $4 THEN $3::int END, true)
ON CONFLICT (queue) DO UPDATE SET
  paused = coalesce($2::boolean, q.paused),
  concurrency_limit = CASE WHEN $4 THEN $3::int ELSE q.concurrency_limit END,
  configured = true`;

/** Pause, resume or set a limit: the settings change and its audit record, together. */
async function changeQueue(ctx: StoreContext, request: QueueActionRequest, change: QueueChange): Promise<QueueActionResult> {
  const { queue, actor, now } = request;
  const { action, detail } = change;
  await ctx.executor.run(action, "transaction", async (session) => {
    await session.query(ctx.sql.get("changeQueue", CHANGE_QUEUE), [
      queue,
      change.paused ?? null,
      change.limit ?? null,
      change.limit !== undefined,
    ]);
    await session.step("queue settings written");
    await appendAudit(session, ctx, { at: now, actor, action, targetKind: "queue", target: queue, detail });
  });
  if (change.paused === false) ctx.hint([queue]);
  return { status: "applied" };
}

/** See `JobStore.pauseQueue`, `JobStore.resumeQueue` and `JobStore.setConcurrencyLimit`. */
export const { pauseQueue, resumeQueue, setConcurrencyLimit } = queueActions(changeQueue);

const QUEUE_SETTINGS = (S: string) =>
  `SELECT queue, paused, concurrency_limit FROM ${S}.queues WHERE configured ORDER BY queue`;

/** See `JobStore.listQueueSettings`. */
export async function listQueueSettings(ctx: StoreContext): Promise<QueueSettings[]> {
  const rows = await ctx.executor.run("listQueueSettings", "autocommit", (s) => s.query(ctx.sql.get("queueSettings", QUEUE_SETTINGS)));
  return rows.map((row) => ({
    queue: row["queue"] as string,
    paused: row["paused"] as boolean,
    concurrencyLimit: (row["concurrency_limit"] as number | null) ?? null,
  }));
}
